/**
 * deploy/grafana/qr-art-dashboard.json: it parses, every query goes to the dashboard's data
 * source variable, and every metric its PromQL names is in docs/metrics.md (the contract the
 * processes export) or one of the standard names listed here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEPLOY_DIR, REPO_DIR } from './render.ts';

/** Metrics from elsewhere that the dashboard may use, and where they come from. */
const STANDARD_METRICS: Record<string, string> = {
  up: 'Prometheus, per scraped target',
  kube_deployment_spec_replicas: 'kube-state-metrics',
  kube_deployment_status_replicas_available: 'kube-state-metrics',
  kube_horizontalpodautoscaler_status_desired_replicas: 'kube-state-metrics (the HPA KEDA creates)',
  process_resident_memory_bytes: "prom-client's default metrics",
  nodejs_eventloop_lag_p99_seconds: "prom-client's default metrics",
};

/** What the dashboard must show (the list): one documented metric for each. */
const MUST_SHOW = [
  'qrart_jobs_queue_depth',
  'qrart_worker_job_duration_seconds',
  'qrart_worker_queue_wait_seconds',
  'qrart_worker_stage_duration_seconds',
  'qrart_worker_scannable_images_total',
  'qrart_worker_images_repaired_total',
  'qrart_webhook_deliveries_total',
  'qrart_http_requests_total',
  'qrart_http_request_duration_seconds',
  'qrart_outbox_messages',
  'qrart_outbox_oldest_age_seconds',
  'qrart_event_apply_lag_seconds',
  'qrart_credits_charged_total',
  'qrart_credits_refunded_total',
];

const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

/** The metric names a PromQL expression reads (functions, labels, strings, ranges, variables left out). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\{?\w+\}?/g, '');
  const names: string[] = [];
  for (const match of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const followedBy = bare.slice(match.index + match[0].length).trimStart();
    if (followedBy.startsWith('(') || PROMQL_KEYWORDS.has(match[0].toLowerCase())) continue;
    names.push(match[0]);
  }
  return names;
}

/** docs/metrics.md's tables: metric name to type. */
function documentedMetrics(): Map<string, string> {
  const documented = new Map<string, string>();
  for (const line of readFileSync(path.join(REPO_DIR, 'docs/metrics.md'), 'utf8').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4) continue;
    const [, nameCell = '', typeCell = ''] = cells;
    for (const [, name] of nameCell.matchAll(/`(qrart_[a-z0-9_]+)`/g)) documented.set(name!, typeCell);
  }
  return documented;
}

/** A name the exporters produce: documented, a documented histogram's series, or standard. */
function isKnown(name: string, documented: Map<string, string>): boolean {
  if (documented.has(name) || name in STANDARD_METRICS) return true;
  const series = /^(.*)_(bucket|sum|count)$/.exec(name);
  return series !== null && documented.get(series[1]!) === 'histogram';
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
}

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(path.join(DEPLOY_DIR, 'grafana/qr-art-dashboard.json'), 'utf8')) as {
    uid: string;
    panels: Panel[];
    templating: { list: { name: string; type: string; query: unknown }[] };
  };
  const queryPanels = dashboard.panels.filter((p) => p.type !== 'row');
  const expressions = queryPanels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

  it('parses, with a Prometheus data source variable that every panel and query uses', () => {
    expect(dashboard.uid).toBeTruthy();
    const datasource = dashboard.templating.list.find((v) => v.type === 'datasource');
    expect(datasource).toMatchObject({ name: 'datasource', query: 'prometheus' });
    expect(queryPanels.length).toBeGreaterThan(10);
    for (const panel of queryPanels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
      for (const target of panel.targets!) expect(target.datasource?.uid, panel.title).toBe('${datasource}');
    }
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('fills its namespace menu from a series the API exports from its start, so a fresh deployment is not a blank dashboard', () => {
    const variable = dashboard.templating.list.find((v) => v.name === 'namespace') as { query: { query: string }; definition: string } | undefined;
    const source = /^label_values\((\w+), namespace\)$/.exec(variable?.query.query ?? '');
    expect(source, variable?.query.query).not.toBeNull();
    expect(variable!.definition).toBe(variable!.query.query);
    const metric = source![1]!;
    // Read without I/O at every scrape: there whatever the database and NATS are doing. The HTTP
    // series appear only with the first request that is not a probe (test/flows/metrics.test.ts).
    expect(metric).toBe('qrart_db_pool_connections');
    expect(documentedMetrics().get(metric)).toBe('gauge');
  });

  it('names only metrics documented in docs/metrics.md or listed as standard', () => {
    const documented = documentedMetrics();
    expect(documented.size).toBeGreaterThan(20);
    const unknown = new Set<string>();
    for (const expr of expressions) {
      const names = metricNames(expr);
      expect(names.length, expr).toBeGreaterThan(0);
      for (const name of names) if (!isKnown(name, documented)) unknown.add(name);
    }
    expect([...unknown]).toEqual([]);
  });

  it('shows the queue, latencies, stages, scan repair, webhooks, HTTP, outbox, event lag and credits', () => {
    const used = new Set(expressions.flatMap(metricNames).map((name) => name.replace(/_(bucket|sum|count)$/, '')));
    for (const metric of MUST_SHOW) expect(used, metric).toContain(metric);
    // Latency percentiles per workflow, from the histograms.
    expect(expressions).toContainEqual(expect.stringMatching(/histogram_quantile\(0\.95, sum by \(le, workflow\) \(rate\(qrart_worker_job_duration_seconds_bucket/));
  });

  it('reads metric names out of PromQL', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, workflow) (rate(a_bucket{namespace="$namespace", x=~"y.*"}[$__rate_interval])))')).toEqual(['a_bucket']);
    expect(metricNames('sum(rate(a_total[5m])) / sum(rate(b_total[5m])) by (pod)')).toEqual(['a_total', 'b_total']);
    expect(metricNames('count(up{pod=~"w-.*"} == 1) and on (pod) c')).toEqual(['up', 'c']);
  });
});
