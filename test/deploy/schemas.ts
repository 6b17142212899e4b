/**
 * Schema validation of rendered objects with the models vendored in kubernetes-models,
 * @kubernetes-models/keda and @kubernetes-models/prometheus-operator (no network). An object
 * whose apiVersion and kind have no model here is an error, so that a new kind in deploy/
 * cannot go unchecked.
 */
import * as keda from '@kubernetes-models/keda/keda.sh/v1alpha1';
import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as core from 'kubernetes-models/v1';
import type { K8sObject } from './render.ts';

interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data: unknown): { validate(): void };
}

const MODELS_BY_API_VERSION: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'policy/v1': policy,
  'networking.k8s.io/v1': networking,
  'keda.sh/v1alpha1': keda,
  'monitoring.coreos.com/v1': monitoring,
};

/** Throws naming the object when it does not match its schema or no schema is known for it. */
export function validateObject(object: K8sObject): void {
  const label = `${object.apiVersion} ${object.kind} ${object.metadata.name}`;
  const candidate = MODELS_BY_API_VERSION[object.apiVersion]?.[object.kind] as ModelClass | undefined;
  if (typeof candidate !== 'function' || candidate.apiVersion !== object.apiVersion || candidate.kind !== object.kind) {
    throw new Error(`${label}: no schema known for this kind (add its model to test/deploy/schemas.ts)`);
  }
  try {
    new candidate(object).validate();
  } catch (error) {
    throw new Error(`${label}: ${(error as Error).message}`);
  }
}
