/**
 * Renders a kustomization with `kubectl kustomize` (built into kubectl; no cluster, no network)
 * and parses the result. KUBECTL picks the binary (to check an older kubectl's kustomize).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const KUBECTL = process.env.KUBECTL ?? 'kubectl';

/** Why the tests that render deploy/ are skipped (no kubectl), or undefined when they can run. */
export const noKubectlReason: string | undefined =
  (spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
    ? `'${KUBECTL}' was not found: the deploy tests render deploy/ with \`kubectl kustomize\`; install kubectl (Debian: apt-get install kubernetes-client, as .ci/run does) or set KUBECTL to its path`
    : undefined;

if (noKubectlReason) console.warn(`[deploy tests skipped] ${noKubectlReason}`);
export const DEPLOY_DIR = path.resolve(import.meta.dirname, '../../deploy');
export const REPO_DIR = path.resolve(import.meta.dirname, '../..');

/** A rendered Kubernetes object: typed only as far as the tests read it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // The tests walk the specs of many kinds; each assertion reads only what it checks.
  spec?: any;
  data?: Record<string, string>;
}

const rendered = new Map<string, K8sObject[]>();

/** The objects `kubectl kustomize deploy/<dir>` prints (cached per directory). */
export function render(dir: string): K8sObject[] {
  const cached = rendered.get(dir);
  if (cached) return cached;
  const result = spawnSync(KUBECTL, ['kustomize', path.join(DEPLOY_DIR, dir)], { encoding: 'utf8', maxBuffer: 32 * 1024 * 1024 });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(
      `'${KUBECTL}' was not found: the deploy tests render deploy/ with \`kubectl kustomize\`. ` +
        'Install kubectl (Debian: apt-get install kubernetes-client, as .ci/run does) or set KUBECTL to its path.',
    );
  }
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${KUBECTL} kustomize deploy/${dir} failed (exit ${result.status}):\n${result.stderr}`);
  const objects = parseObjects(result.stdout, `kubectl kustomize deploy/${dir}`);
  rendered.set(dir, objects);
  return objects;
}

/** Every non-empty YAML document of a file under deploy/. */
export function readObjects(file: string): K8sObject[] {
  return parseObjects(readFileSync(path.join(DEPLOY_DIR, file), 'utf8'), file);
}

function parseObjects(text: string, source: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as K8sObject | null;
    if (value === null) continue;
    if (typeof value.apiVersion !== 'string' || typeof value.kind !== 'string' || typeof value.metadata?.name !== 'string') {
      throw new Error(`${source}: a document without apiVersion, kind and metadata.name`);
    }
    objects.push(value);
  }
  return objects;
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

/** A generated ConfigMap by the name it has in the kustomization (kustomize appends a hash). */
export function configMap(objects: K8sObject[], refName: string): K8sObject {
  const found = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === refName);
  if (!found) throw new Error(`a ConfigMap reference to ${refName} that nothing in the render defines`);
  return found;
}

/** True when every key of `selector` is a label of `labels` with the same value. */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}
