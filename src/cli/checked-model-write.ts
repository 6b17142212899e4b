/**
 * Writing a rewritten or fused graph where an operator points a manifest: the result is written
 * in a folder of its own beside `--out`, opened and checked there, and only then moved into
 * place. A result that ONNX Runtime cannot open (an operator its build lacks, a name map typo)
 * therefore never replaces the working model at `--out`, nor the input when `--in` is `--out`.
 */
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { ModelProto } from '../onnx/proto.ts';
import { ModelFileError, writeModelFile, type ExternalDataMode, type WrittenModel } from '../onnx/model-file.ts';
import { GraphSessionError } from '../pipeline/graph-session.ts';

/**
 * Writes `model` to `out` (and `<out>_data`), after `check` passed on the written files.
 * `check` gets the candidate's path; whatever it throws (ONNX Runtime refusing the graph, the
 * role's own checks) becomes a GraphSessionError that says `out` was left as it was.
 */
export async function writeCheckedModel(
  model: ModelProto,
  out: string,
  mode: ExternalDataMode,
  check: ((candidate: string) => Promise<void>) | null,
): Promise<WrittenModel> {
  if ((await stat(out).catch(() => null))?.isDirectory()) throw new ModelFileError(`--out ${out} is a directory: give the model file's path (e.g. ${join(out, 'model.onnx')})`);
  await mkdir(dirname(out), { recursive: true });
  // Same folder as `out`, so the moves are renames; the same base name, so the model's reference
  // to its data file (`<name>_data`, relative) holds after the move.
  // The host and pid in its name let a later run on this host remove it when this one was
  // killed (OOM, SIGKILL): it can hold gigabytes of weights. (Another host's or container's
  // pids mean nothing here: a shared volume's folders of theirs are left alone.)
  await removeAbandonedFolders(out);
  const folder = await mkdtemp(join(dirname(out), `${folderPrefix(out)}${hostLabel()}-${process.pid}-`));
  const candidate = join(folder, basename(out));
  // Ctrl-C or a TERM while gigabytes are written or checked: the folder goes, then the signal's
  // usual end (the listener is only ours while this runs; nothing else in `models` listens).
  const onSignal = (signal: NodeJS.Signals) => {
    rmSync(folder, { recursive: true, force: true });
    stopListening();
    process.kill(process.pid, signal);
  };
  const stopListening = () => {
    for (const signal of SIGNALS) process.removeListener(signal, onSignal);
  };
  for (const signal of SIGNALS) process.once(signal, onSignal);
  try {
    const written = await writeModelFile(model, candidate, mode);
    if (check) {
      try {
        await check(candidate);
      } catch (error) {
        const known = error instanceof GraphSessionError || error instanceof ModelFileError;
        const reason = known ? error.message : `${out}: ONNX Runtime cannot open the result: ${error instanceof Error ? error.message : String(error)}`;
        throw new GraphSessionError(`${reason}\n(nothing was written: ${out} is as it was)`, { cause: error });
      }
    }
    // The data first: the model that names it is the last thing to change.
    if (written.dataFile) await rename(written.dataFile, `${out}_data`);
    await rename(candidate, out);
    return { ...written, file: out, ...(written.dataFile ? { dataFile: `${out}_data` } : {}) };
  } finally {
    stopListening();
    await rm(folder, { recursive: true, force: true });
  }
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

const folderPrefix = (out: string): string => `.${basename(out)}.checking-`;

/** This host's name as a file name may hold it (a container's hostname is its own). */
const hostLabel = (): string => hostname().replace(/[^A-Za-z0-9.]/g, '_');

/** Removes the checking folders beside `out` made on this host whose run is gone (its pid is not a live process). */
async function removeAbandonedFolders(out: string): Promise<void> {
  const prefix = `${folderPrefix(out)}${hostLabel()}-`;
  for (const name of await readdir(dirname(out)).catch(() => [])) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) await rm(join(dirname(out), name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
