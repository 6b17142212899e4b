/** Reading Deployments' pod templates: containers, their environment as the pod sees it, ports. */
import { configMap, find, type K8sObject } from './render.ts';

export interface EnvFromSecret {
  secret: string;
  key: string;
  optional: boolean;
}

/** The one container of a Deployment named `name`. */
export function containerOf(objects: K8sObject[], deployment: string): { deployment: K8sObject; container: any } {
  const found = find(objects, 'Deployment', deployment);
  const containers = found.spec.template.spec.containers as { name: string }[];
  if (containers.length !== 1) throw new Error(`${deployment}: expected one container, found ${containers.length}`);
  return { deployment: found, container: containers[0] };
}

/**
 * The container's environment: envFrom ConfigMaps in order, then `env` (which wins), as the
 * kubelet composes it. A variable from a Secret is an EnvFromSecret, never a value.
 */
export function environment(objects: K8sObject[], container: any): Record<string, string | EnvFromSecret> {
  const env: Record<string, string | EnvFromSecret> = {};
  for (const source of container.envFrom ?? []) {
    if (!source.configMapRef) throw new Error(`${container.name}: envFrom other than a ConfigMap: ${JSON.stringify(source)}`);
    Object.assign(env, configMap(objects, source.configMapRef.name).data ?? {});
  }
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) env[entry.name] = String(entry.value);
    else if (entry.valueFrom?.secretKeyRef) {
      const ref = entry.valueFrom.secretKeyRef;
      env[entry.name] = { secret: ref.name, key: ref.key, optional: ref.optional === true };
    } else throw new Error(`${container.name}: ${entry.name} comes from neither a value nor a Secret`);
  }
  return env;
}

/** A plain (non-secret) variable, or a failure naming it. */
export function plain(env: Record<string, string | EnvFromSecret>, name: string): string {
  const value = env[name];
  if (typeof value !== 'string') throw new Error(`${name} is ${value === undefined ? 'not set' : 'a Secret reference'}`);
  return value;
}

/** The number a probe's or Service's port (number or name) stands for in `container`. */
export function portNumber(container: any, port: number | string): number {
  if (typeof port === 'number') return port;
  const named = (container.ports ?? []).find((p: { name?: string }) => p.name === port);
  if (!named) throw new Error(`${container.name} has no port named ${port}`);
  return named.containerPort;
}

/** Every pod template of the render, with the object that owns it. */
export function podTemplates(objects: K8sObject[]): { owner: K8sObject; labels: Record<string, string>; spec: any }[] {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet' || o.kind === 'DaemonSet')
    .map((o) => ({ owner: o, labels: o.spec.template.metadata?.labels ?? {}, spec: o.spec.template.spec }));
}
