/**
 * deploy/: the base and every overlay rendered with `kubectl kustomize` (no cluster, no
 * network), every object checked against its schema, and the properties the deployment
 * promises checked on what would be applied.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigSchema, loadConfig } from '../../src/config.ts';
import { NATS_CONNECT_TIMEOUT_MS } from '../../src/queue/connection.ts';
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import { containerOf, environment, plain, podTemplates, portNumber, type EnvFromSecret } from './pods.ts';
import { DEPLOY_DIR, find, noKubectlReason, readObjects, render, selects, type K8sObject } from './render.ts';
import { validateObject } from './schemas.ts';

const OVERLAYS = readdirSync(path.join(DEPLOY_DIR, 'overlays')).map((name) => `overlays/${name}`);
const TARGETS = ['base', ...OVERLAYS];

/** The Secret deploy/README.md has the operator create, and what must come from it only. */
const SECRET = 'qr-art';
const SECRET_VARIABLES = ['DATABASE_URL', 'WEBHOOK_SECRET', 'API_KEYS'];

/** Variables set in deploy/ that src/config.ts does not read, and who does. */
const OTHER_VARIABLES: Record<string, string> = {
  METRICS_PORT: "the API's Prometheus port (docs/metrics.md)",
  CUDA_CACHE_PATH: "CUDA's kernel cache (the root filesystem is read-only)",
};

/** Time the worker needs after its last job leaves the GPU: finishing, upload, NATS drain. */
const DRAIN_MARGIN_S = 60;

describe.skipIf(!!noKubectlReason).each(TARGETS)('deploy/%s', (target) => {
  const objects = (): K8sObject[] => render(target);

  it('renders, and every object matches the schema of its kind (a kind with none fails)', () => {
    expect(objects().length).toBeGreaterThan(0);
    for (const object of objects()) validateObject(object);
    const names = objects().map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(names).size).toBe(names.length);
  });

  it(target === 'base' ? 'sets no namespace' : 'puts every object in one namespace', () => {
    const namespaces = new Set(objects().map((o) => o.metadata.namespace));
    if (target === 'base') expect([...namespaces]).toEqual([undefined]);
    else {
      expect(namespaces.size, `namespaces: ${[...namespaces].join(', ')}`).toBe(1);
      expect([...namespaces][0]).toMatch(/^[a-z0-9-]+$/);
    }
  });

  it('has Service, PDB and monitor selectors that match pod templates, and the ports they name', () => {
    const pods = podTemplates(objects());
    const podsOf = (selector: Record<string, string>) => pods.filter((p) => selects(selector, p.labels));
    const ports = (pod: { spec: { containers: { ports?: { name?: string }[] }[] } }) =>
      pod.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name));
    for (const service of objects().filter((o) => o.kind === 'Service')) {
      const matched = podsOf(service.spec.selector);
      expect(matched.length, `Service ${service.metadata.name} selects no pod`).toBeGreaterThan(0);
      for (const port of service.spec.ports) {
        for (const pod of matched) expect(ports(pod), `Service ${service.metadata.name} port ${port.name}`).toContain(port.targetPort);
      }
    }
    for (const pdb of objects().filter((o) => o.kind === 'PodDisruptionBudget')) {
      expect(podsOf(pdb.spec.selector.matchLabels).length, `PDB ${pdb.metadata.name} selects no pod`).toBeGreaterThan(0);
    }
    for (const monitor of objects().filter((o) => o.kind === 'ServiceMonitor')) {
      const services = objects().filter((o) => o.kind === 'Service' && selects(monitor.spec.selector.matchLabels, o.metadata.labels));
      expect(services.length, `ServiceMonitor ${monitor.metadata.name} selects no Service`).toBeGreaterThan(0);
      for (const endpoint of monitor.spec.endpoints) {
        expect(endpoint.path).toBe('/metrics');
        for (const service of services) expect(service.spec.ports.map((p: { name: string }) => p.name)).toContain(endpoint.port);
      }
    }
    for (const monitor of objects().filter((o) => o.kind === 'PodMonitor')) {
      const matched = podsOf(monitor.spec.selector.matchLabels);
      expect(matched.length, `PodMonitor ${monitor.metadata.name} selects no pod`).toBeGreaterThan(0);
      for (const endpoint of monitor.spec.podMetricsEndpoints) {
        expect(endpoint.path).toBe('/metrics');
        for (const pod of matched) expect(ports(pod)).toContain(endpoint.port);
      }
    }
  });

  it('sets only variables the service reads, with values its configuration accepts; secrets only from the Secret', () => {
    const known = new Set([...Object.keys(ConfigSchema.shape), ...Object.keys(OTHER_VARIABLES)]);
    for (const name of ['qr-art-api', 'qr-art-worker']) {
      const { container } = containerOf(objects(), name);
      const env = environment(objects(), container);
      for (const variable of Object.keys(env)) expect(known, `${name}: ${variable}`).toContain(variable);
      for (const [variable, value] of Object.entries(env)) {
        if (typeof value === 'string') expect(SECRET_VARIABLES, `${name}: ${variable} must come from the Secret`).not.toContain(variable);
        else expect(value.secret).toBe(SECRET);
      }
      // Secrets stand in with well-formed values: what is checked is everything else.
      const values = Object.fromEntries(
        Object.entries(env).map(([k, v]) => [k, typeof v === 'string' ? v : k === 'WEBHOOK_SECRET' ? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' : 'postgres://qrart@db/qrart']),
      );
      expect(() => loadConfig(values)).not.toThrow();
    }
  });

  it('API: replicas, probes on the API port, metrics port, secrets by secretKeyRef, read-only and non-root', () => {
    const { deployment, container } = containerOf(objects(), 'qr-art-api');
    const env = environment(objects(), container);
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(container.command).toEqual(['node', 'bin/qr-art.js', 'serve']);
    const apiPort = Number(plain(env, 'PORT'));
    expect(apiPort).toBe(8080);
    expect(portNumber(container, 'http')).toBe(apiPort);
    expect(portNumber(container, 'metrics')).toBe(Number(plain(env, 'METRICS_PORT')));
    expect(portNumber(container, 'metrics')).toBe(9464);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.startupProbe.httpGet.path).toBe('/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) expect(portNumber(container, probe.httpGet.port)).toBe(apiPort);
    // The API listens only after waiting for PostgreSQL, then for NATS: the kubelet must not
    // restart it before those waits can end in their own one-line exit.
    const config = loadConfig(Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')));
    const startupWindowS = container.startupProbe.periodSeconds * container.startupProbe.failureThreshold;
    // Each wait ends with the attempt it started: a database connect and query, a NATS connect.
    const lastAttemptsMs = config.DB_CONNECT_TIMEOUT_MS + config.DB_QUERY_TIMEOUT_MS + NATS_CONNECT_TIMEOUT_MS;
    expect(startupWindowS * 1000).toBeGreaterThan(config.DB_STARTUP_WAIT_MS + config.NATS_STARTUP_WAIT_MS + lastAttemptsMs);
    // SIGTERM: the preStop pause, then requests in flight, then webhook deliveries in flight, in turn.
    const preStopS = Number(container.lifecycle.preStop.exec.command.at(-1));
    const drainMs = preStopS * 1000 + config.REQUEST_TIMEOUT_MS + config.WEBHOOK_TIMEOUT_MS;
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(drainMs + 5000);
    for (const variable of ['DATABASE_URL', 'WEBHOOK_SECRET']) {
      expect(env[variable], variable).toEqual<EnvFromSecret>({ secret: SECRET, key: variable, optional: false });
    }
    expectLockedDown(deployment, container);
    expect(container.resources.requests.cpu).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();

    const service = find(objects(), 'Service', 'qr-art-api');
    expect(service.spec.ports).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'http', port: 80, targetPort: 'http' }),
        expect.objectContaining({ name: 'metrics', port: 9464, targetPort: 'metrics' }),
      ]),
    );
    const pdb = find(objects(), 'PodDisruptionBudget', 'qr-art-api');
    expect(selects(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('worker: one GPU, GPU nodes, models read-only, probes on the metrics port, a grace period that drains the jobs in hand', () => {
    const { deployment, container } = containerOf(objects(), 'qr-art-worker');
    const pod = deployment.spec.template.spec;
    const env = environment(objects(), container);
    // KEDA owns the replica count: a value here would reset it on every apply.
    expect(deployment.spec.replicas).toBeUndefined();
    expect(container.command).toEqual(['node', 'bin/qr-art.js', 'worker']);
    expect(Number(container.resources.limits['nvidia.com/gpu'])).toBe(1);
    expect(pod.nodeSelector['nvidia.com/gpu.present']).toBe('true');
    expect(pod.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
    expect(plain(env, 'EXECUTION_PROVIDER')).toBe('cuda');

    // SIGTERM drains: the job on the GPU and the WORKER_PREFETCH ones held behind it run one
    // after the other, each bounded by JOB_TIMEOUT_MS (+ the abort grace when it overruns).
    const timeoutMs = Number(plain(env, 'JOB_TIMEOUT_MS'));
    const abortGraceMs = Number(plain(env, 'JOB_ABORT_GRACE_MS'));
    const prefetch = Number(plain(env, 'WORKER_PREFETCH'));
    const longestJobS = (timeoutMs + abortGraceMs) / 1000;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(longestJobS);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual((1 + prefetch) * longestJobS + DRAIN_MARGIN_S);

    const models = container.volumeMounts.find((m: { mountPath: string }) => m.mountPath === '/models');
    expect(models.readOnly).toBe(true);
    const volume = pod.volumes.find((v: { name: string }) => v.name === models.name);
    expect(volume.persistentVolumeClaim).toEqual({ claimName: 'qr-art-models', readOnly: true });
    expect(plain(env, 'MODELS_MANIFEST')).toBe('/models/manifest.json');

    const metricsPort = Number(plain(env, 'WORKER_METRICS_PORT'));
    expect(metricsPort).toBe(9465);
    expect(portNumber(container, 'metrics')).toBe(metricsPort);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.startupProbe.httpGet.path).toBe('/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) expect(portNumber(container, probe.httpGet.port)).toBe(metricsPort);
    // The health endpoint opens after model load and warm-up: at least 10 minutes for that.
    expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(600);
    expectLockedDown(deployment, container);
  });

  it('ScaledObject: nats-jetstream on QRART_JOBS/workers, for the worker Deployment, thresholds that fit a pod', () => {
    const scaled = find(objects(), 'ScaledObject', 'qr-art-worker');
    const { container } = containerOf(objects(), 'qr-art-worker');
    const env = environment(objects(), container);
    expect(scaled.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'qr-art-worker' });
    expect(scaled.spec.triggers).toHaveLength(1);
    const [trigger] = scaled.spec.triggers;
    expect(trigger.type).toBe('nats-jetstream');
    expect(trigger.metadata).toMatchObject({ account: '$G', stream: STREAMS.jobs, consumer: CONSUMERS.workers, useHttps: 'false' });
    expect(trigger.metadata.natsServerMonitoringEndpoint).toMatch(/^[a-z0-9.-]+:8222$/);
    // The scaler asks the consumer's leader through <server>.<endpoint host>: a headless
    // service of the same NATS the clients use.
    const natsHost = new URL(plain(env, 'NATS_URL')).hostname;
    const [service, ...domain] = natsHost.split('.');
    expect(trigger.metadata.natsServerMonitoringEndpoint).toBe(`${service}-headless.${domain.join('.')}:8222`);

    const lag = Number(trigger.metadata.lagThreshold);
    const activation = Number(trigger.metadata.activationLagThreshold);
    expect(String(lag)).toBe(trigger.metadata.lagThreshold);
    expect(String(activation)).toBe(trigger.metadata.activationLagThreshold);
    // A pod pulls 1 + WORKER_PREFETCH jobs; more per pod and jobs would wait unpulled while
    // the autoscaler sees no need for another pod.
    expect(lag).toBeGreaterThanOrEqual(1);
    expect(lag).toBeLessThanOrEqual(1 + Number(plain(env, 'WORKER_PREFETCH')));
    expect(activation).toBeGreaterThanOrEqual(0);

    const { minReplicaCount, maxReplicaCount, cooldownPeriod, pollingInterval } = scaled.spec;
    expect(Number.isInteger(minReplicaCount) && minReplicaCount >= 0).toBe(true);
    expect(maxReplicaCount).toBeGreaterThanOrEqual(Math.max(1, minReplicaCount));
    expect(cooldownPeriod).toBeGreaterThan(0);
    expect(pollingInterval).toBeGreaterThan(0);
    const behavior = scaled.spec.advanced.horizontalPodAutoscalerConfig.behavior;
    expect(behavior.scaleUp.stabilizationWindowSeconds).toBe(0);
    expect(behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);
  });
});

/** Non-root, no privilege escalation, read-only root filesystem with a scratch /tmp. */
function expectLockedDown(deployment: K8sObject, container: any): void {
  const pod = deployment.spec.template.spec;
  expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
  expect(pod.automountServiceAccountToken).toBe(false);
  expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toContain('/tmp');
}

describe.skipIf(!!noKubectlReason)('overlays', () => {
  it('production: namespace, image names and tags, GPU type, at least one warm worker', () => {
    const objects = render('overlays/production');
    expect(find(objects, 'Deployment', 'qr-art-api').metadata.namespace).toBe('qr-art');
    for (const name of ['qr-art-api', 'qr-art-worker']) {
      expect(containerOf(objects, name).container.image, name).toMatch(/^[a-z0-9.-]+\/[a-z0-9/-]+:[\w.-]+$/);
    }
    const worker = containerOf(objects, 'qr-art-worker').deployment.spec.template.spec;
    expect(worker.nodeSelector['nvidia.com/gpu.product']).toBe('NVIDIA-H100-80GB-HBM3');
    const scaled = find(objects, 'ScaledObject', 'qr-art-worker').spec;
    expect(scaled.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.maxReplicaCount).toBeGreaterThan(find(render('base'), 'ScaledObject', 'qr-art-worker').spec.maxReplicaCount);
  });

  it('scale-to-zero: production with minReplicaCount 0, a cooldown, and the first job waking the workers', () => {
    const scaled = find(render('overlays/scale-to-zero'), 'ScaledObject', 'qr-art-worker').spec;
    expect(scaled.minReplicaCount).toBe(0);
    expect(scaled.cooldownPeriod).toBeGreaterThanOrEqual(300);
    expect(scaled.triggers[0].metadata.activationLagThreshold).toBe('0');
    const production = find(render('overlays/production'), 'ScaledObject', 'qr-art-worker').spec;
    expect(scaled.maxReplicaCount).toBe(production.maxReplicaCount);
    expect(scaled.triggers[0].metadata.lagThreshold).toBe(production.triggers[0].metadata.lagThreshold);
  });

  it('ingress: the API Service http port only, for the host of PUBLIC_BASE_URL, with TLS', () => {
    const objects = render('overlays/ingress');
    const ingress = find(objects, 'Ingress', 'qr-art-api');
    const service = find(objects, 'Service', 'qr-art-api');
    const backends = ingress.spec.rules.flatMap((rule: any) => rule.http.paths.map((p: any) => p.backend.service));
    expect(backends.length).toBeGreaterThan(0);
    for (const backend of backends) {
      expect(backend.name).toBe(service.metadata.name);
      expect(backend.port.name).toBe('http');
      expect(service.spec.ports.map((p: { name: string }) => p.name)).toContain(backend.port.name);
    }
    const { container } = containerOf(objects, 'qr-art-api');
    const publicUrl = new URL(plain(environment(objects, container), 'PUBLIC_BASE_URL'));
    expect(publicUrl.protocol).toBe('https:');
    expect(ingress.spec.rules.map((rule: { host: string }) => rule.host)).toEqual([publicUrl.hostname]);
    expect(ingress.spec.tls[0].hosts).toContain(publicUrl.hostname);
  });
});

describe.skipIf(!!noKubectlReason)('prerequisites', () => {
  it('the NATS chart values: 3 servers with JetStream on disk and the monitoring port KEDA reads', () => {
    const values = parse(readFileSync(path.join(DEPLOY_DIR, 'prerequisites/nats-values.yaml'), 'utf8'));
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(values.config.jetstream).toMatchObject({ enabled: true, fileStore: { enabled: true, pvc: { enabled: true } } });
    expect(values.config.monitor).toMatchObject({ enabled: true });
    const endpoint = find(render('base'), 'ScaledObject', 'qr-art-worker').spec.triggers[0].metadata.natsServerMonitoringEndpoint;
    expect(endpoint.endsWith(`:${values.config.monitor.port}`)).toBe(true);
  });

  it('the models claim and loader pod match their schemas and the claim the workers mount', () => {
    const [claim] = readObjects('prerequisites/models-pvc.yaml');
    const [loader] = readObjects('prerequisites/models-loader.yaml');
    for (const object of [claim!, loader!]) validateObject(object);
    const workerClaim = containerOf(render('base'), 'qr-art-worker').deployment.spec.template.spec.volumes.find((v: any) => v.persistentVolumeClaim)
      .persistentVolumeClaim.claimName;
    expect(claim!.metadata.name).toBe(workerClaim);
    // Every GPU node mounts it at once.
    expect(claim!.spec.accessModes).toContain('ReadWriteMany');
    expect(loader!.spec.volumes[0].persistentVolumeClaim.claimName).toBe(workerClaim);
    expect(loader!.spec.securityContext.runAsUser).toBe(10001);
  });

  it('the PostgreSQL example is a CloudNativePG Cluster (no schema vendored for it: shape only)', () => {
    const [cluster] = readObjects('prerequisites/postgresql-cnpg.yaml');
    expect(cluster).toMatchObject({ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'qr-art-db' } });
    expect(cluster!.spec.instances).toBeGreaterThanOrEqual(3);
  });
});
