/**
 * One ONNX graph playing one role (roles.ts), addressed by role names: the manifest maps a role to
 * the export's own name where it differs, and every dtype and rank is read from the session.
 */
import type ort from 'onnxruntime-node';
import type { GraphRole, GraphSpec } from './manifest.ts';
import { ROLE_CONTRACTS, type IoContract } from './roles.ts';
import { numberTensor, type FloatType } from './tensors.ts';

export interface IoInfo {
  readonly role: string;
  readonly name: string;
  readonly type: string;
  readonly shape: readonly (number | string)[];
}

export class GraphSessionError extends Error {
  override readonly name: string = 'GraphSessionError';
}

/** What the axes that the role checks fix are called, for messages. */
const AXIS_NAME: Readonly<Record<number, string>> = { 1: 'channels', 3: 'channels (last axis)' };

/** Runs every session.run of the pipeline (fault injection wraps it in tests; see fault-injection.ts). */
export type RunHook = (graph: GraphSession, run: () => Promise<ort.InferenceSession.OnnxValueMapType>) => Promise<ort.InferenceSession.OnnxValueMapType>;
let runHook: RunHook | undefined;
/** Installs (or removes) the hook every GraphSession.run goes through. */
export function setRunHook(hook: RunHook | undefined): void {
  runHook = hook;
}

/** Told the time of every session.run of this thread (ms inside ONNX Runtime, not the hook's): the worker's per-role metrics. */
export type RunObserver = (graph: GraphSession, ms: number) => void;
let runObserver: RunObserver | undefined;
/** Installs (or removes) the observer; apart from the hook, which fault injection owns. */
export function setRunObserver(observer: RunObserver | undefined): void {
  runObserver = observer;
}

/**
 * Told when a session.run enters ONNX Runtime and when it comes back (the inference thread keeps
 * it in a shared word): a thread terminated while a run is inside takes the process down, so the
 * worker terminates one only between runs.
 */
export interface NativeRunMarker {
  enter(): void;
  exit(): void;
}
let nativeRunMarker: NativeRunMarker | undefined;
/** Installs (or removes) the marker every session.run is bracketed with. */
export function setNativeRunMarker(marker: NativeRunMarker | undefined): void {
  nativeRunMarker = marker;
}

export class GraphSession {
  private readonly inputsByRole = new Map<string, IoInfo>();
  private readonly outputsByRole = new Map<string, IoInfo>();

  private constructor(
    readonly role: GraphRole,
    /** The file, as messages show it. */
    readonly path: string,
    readonly session: ort.InferenceSession,
  ) {}

  /** Validates `session` against `role` (see ROLE_CONTRACTS); throws naming the file. */
  static bind(role: GraphRole, path: string, session: ort.InferenceSession, spec: Pick<GraphSpec, 'inputs' | 'outputs'>): GraphSession {
    const g = new GraphSession(role, path, session);
    const contract = ROLE_CONTRACTS[role];
    const inputs = metadataByName(session.inputMetadata);
    const outputs = metadataByName(session.outputMetadata);
    const fail = (problem: string): never => {
      throw new GraphSessionError(`${path}: ${problem}`);
    };
    const bindSide = (
      side: 'input' | 'output',
      wanted: readonly IoContract[],
      available: Map<string, ort.InferenceSession.ValueMetadata>,
      names: Record<string, string> | undefined,
      into: Map<string, IoInfo>,
    ): void => {
      for (const key of Object.keys(names ?? {})) {
        if (!wanted.some((c) => c.role === key)) {
          fail(`graphs.${role}.${side}s names '${key}', which is not an ${side} role of ${role} (${wanted.map((c) => c.role).join(', ')})`);
        }
      }
      for (const c of wanted) {
        const name = names?.[c.role] ?? c.role;
        const meta = available.get(name);
        if (!meta) {
          const mapped = names?.[c.role] !== undefined ? ` (mapped by graphs.${role}.${side}s)` : '';
          // An optional role is skipped when the graph lacks it, but not when the manifest maps it:
          // a misspelt mapping would otherwise surface as the real name being "not fed".
          if (c.optional && !mapped) continue;
          fail(
            `the ${role} role needs an ${side} '${name}'${mapped} but the graph's ${side}s are ${[...available.keys()].map((n) => `'${n}'`).join(', ')}` +
              (mapped ? '' : `; map it under graphs.${role}.${side}s if the export names it differently`),
          );
        }
        into.set(c.role, checkValue(path, role, side, name, meta!, c));
      }
    };
    bindSide('input', contract.inputs, inputs, spec.inputs, g.inputsByRole);
    bindSide('output', contract.outputs, outputs, spec.outputs, g.outputsByRole);
    // Every graph input must be fed: an input no role covers cannot be.
    const fed = new Set([...g.inputsByRole.values()].map((i) => i.name));
    const unfed = session.inputNames.filter((n) => !fed.has(n));
    if (unfed.length > 0) fail(`input${unfed.length > 1 ? 's' : ''} ${unfed.map((n) => `'${n}'`).join(', ')} ${unfed.length > 1 ? 'are' : 'is'} not fed by the ${role} role`);
    return g;
  }

  /**
   * Binds an output the role's contract does not list (a text encoder's hidden_states.N, which
   * clipSkip reads) under `contract.role`, checked like the contract's own outputs.
   */
  bindExtraOutput(contract: IoContract, name: string): IoInfo {
    const meta = this.session.outputMetadata.find((m) => m.name === name);
    if (!meta) throw new GraphSessionError(`${this.path}: no output '${name}'`);
    const info = checkValue(this.path, this.role, 'output', name, meta, contract);
    this.outputsByRole.set(contract.role, info);
    return info;
  }

  input(role: string): IoInfo {
    const info = this.inputsByRole.get(role);
    if (!info) throw new GraphSessionError(`${this.path}: the ${this.role} graph has no input for role '${role}'`);
    return info;
  }

  hasInput(role: string): boolean {
    return this.inputsByRole.has(role);
  }

  output(role: string): IoInfo {
    const info = this.outputsByRole.get(role);
    if (!info) throw new GraphSessionError(`${this.path}: the ${this.role} graph has no output for role '${role}'`);
    return info;
  }

  /** Float type of an input (fp16 exports take Uint16Array bits). */
  floatType(role: string): FloatType {
    return this.input(role).type as FloatType;
  }

  /** Feeds by role; returns the requested output roles (all bound ones by default) by role. */
  async run(feeds: Readonly<Record<string, ort.Tensor>>, outputRoles?: readonly string[]): Promise<Record<string, ort.Tensor>> {
    const byName: Record<string, ort.Tensor> = {};
    for (const [role, tensor] of Object.entries(feeds)) byName[this.input(role).name] = tensor;
    const roles = outputRoles ?? [...this.outputsByRole.keys()];
    const names = roles.map((r) => this.output(r).name);
    const run = async () => {
      const t0 = performance.now();
      nativeRunMarker?.enter();
      try {
        return await this.session.run(byName, names);
      } finally {
        nativeRunMarker?.exit();
        runObserver?.(this, performance.now() - t0);
      }
    };
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await (runHook ? runHook(this, run) : run());
    } catch (error) {
      throw this.named(error);
    }
    const result: Record<string, ort.Tensor> = {};
    roles.forEach((r, i) => (result[r] = out[names[i]!] as ort.Tensor));
    return result;
  }

  /**
   * ONNX Runtime's failures (plain Errors) say which node failed but not in which of a model's
   * graphs: the message gets the graph's role and file in front, so a log or a failed job's error
   * says where. Other errors (our own, V8's RangeErrors, which runner.ts reads by their start) pass as they are.
   */
  private named(error: unknown): unknown {
    if (!(error instanceof Error) || error.name !== 'Error' || error.message.startsWith(this.label)) return error;
    error.message = `${this.label}${error.message}`;
    return error;
  }

  private get label(): string {
    return `the ${this.role} graph (${this.path}): `;
  }

  /**
   * The timestep as this graph wants it: its own dtype, and a scalar, [1] or [batch] as its
   * rank and fixed size say.
   */
  timestepTensor(t: number, batch: number): ort.Tensor {
    const info = this.input('timestep');
    if (info.shape.length === 0) return numberTensor(info.type, [t], []);
    const n = info.shape[0] === 1 ? 1 : batch;
    return numberTensor(info.type, new Array<number>(n).fill(t), [n]);
  }

  /** A scalar-ish input (conditioning_scale, guidance_scale) in the graph's dtype and rank: a double scalar in OnnxStack exports, [1] or [1, 1] in fused ones. */
  scalarTensor(role: string, value: number): ort.Tensor {
    const info = this.input(role);
    return numberTensor(info.type, [value], info.shape.map(() => 1));
  }

  /** conditioning_scale in the graph's dtype and rank. */
  scaleTensor(scale: number): ort.Tensor {
    return this.scalarTensor('conditioning_scale', scale);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/** One input or output of a graph against what its role needs: a tensor of an allowed dtype, rank and fixed sizes. */
function checkValue(path: string, role: GraphRole, side: 'input' | 'output', name: string, meta: ort.InferenceSession.ValueMetadata, c: IoContract): IoInfo {
  const fail = (problem: string): never => {
    throw new GraphSessionError(`${path}: ${problem}`);
  };
  if (!meta.isTensor) fail(`${side} '${name}' is not a tensor`);
  const tm = meta as ort.InferenceSession.TensorValueMetadata;
  if (!c.types.includes(tm.type)) fail(`${side} '${name}' is ${tm.type}, the ${role} role needs ${c.types.join(' or ')}`);
  // A graph without shape information for a value (rank 0 and not a scalar role) still has to have a usable rank.
  if (!c.ranks.includes(tm.shape.length)) {
    fail(`${side} '${name}' has rank ${tm.shape.length} [${tm.shape.join(', ')}], the ${role} role needs rank ${c.ranks.join(' or ')}`);
  }
  for (const [axis, allowed] of Object.entries(c.dims ?? {})) {
    const size = tm.shape[Number(axis)];
    if (typeof size === 'number' && size > 0 && !allowed.includes(size)) {
      const what = AXIS_NAME[Number(axis)] ?? `size on axis ${axis}`;
      fail(`${side} '${name}' has ${size} ${what}, the ${role} role needs ${allowed.join(' or ')}`);
    }
  }
  const rows = tm.shape[0];
  if (c.batched && typeof rows === 'number' && rows > 0) {
    fail(
      `${side} '${name}' has its batch axis fixed at ${rows} [${tm.shape.join(', ')}]; jobs feed the ${role} role as many rows as their images (twice that with classifier-free guidance), so export it with a dynamic batch axis`,
    );
  }
  if (c.sized) {
    const fixed = tm.shape.slice(-2).filter((size) => typeof size === 'number' && size > 0);
    if (tm.shape.length >= 2 && fixed.length > 0) {
      fail(
        `${side} '${name}' has a fixed height or width [${tm.shape.join(', ')}]; every output size runs through the ${role} role, so export it with dynamic height and width axes`,
      );
    }
  }
  return { role: c.role, name, type: tm.type, shape: tm.shape };
}

function metadataByName(meta: readonly ort.InferenceSession.ValueMetadata[]): Map<string, ort.InferenceSession.ValueMetadata> {
  return new Map(meta.map((m) => [m.name, m]));
}
