import { readFile } from 'node:fs/promises';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

/**
 * Scraping a /metrics endpoint in tests, and reading the contract in docs/metrics.md.
 *
 * parse-prometheus-text-format reads the families (name, TYPE, HELP) and counter and gauge
 * samples; it folds the series of a labelled histogram into one (it only keeps the bucket map of
 * histograms without labels), so histogram counts are read from their `_count` sample lines here.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  readonly text: string;
  /** Family name → its TYPE, lower case, as parse-prometheus-text-format read it. */
  readonly types: ReadonlyMap<string, MetricType>;
  /** Every sample line (histogram buckets, sums and counts under their own names). */
  readonly samples: ReadonlyMap<string, readonly Sample[]>;
  /** The sum of the samples of `name` whose labels include `labels`; undefined when none has. */
  value(name: string, labels?: Readonly<Record<string, string>>): number | undefined;
  /** Observations of histogram `name` over its series whose labels include `labels`. */
  count(name: string, labels?: Readonly<Record<string, string>>): number;
}

export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return parseScrape(await response.text());
}

export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  const types = new Map(families.map((family) => [family.name, family.type.toLowerCase() as MetricType]));
  const samples = new Map<string, Sample[]>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sample = parseSampleLine(line);
    samples.set(sample.name, [...(samples.get(sample.name) ?? []), sample]);
  }
  const matching = (name: string, labels: Readonly<Record<string, string>>) =>
    (samples.get(name) ?? []).filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  const value = (name: string, labels: Readonly<Record<string, string>> = {}) => {
    const found = matching(name, labels);
    return found.length === 0 ? undefined : found.reduce((sum, sample) => sum + sample.value, 0);
  };
  return { text, types, samples, value, count: (name, labels = {}) => value(`${name}_count`, labels) ?? 0 };
}

/** `name{a="x",b="y"} value` as prom-client writes it (label values escaped with \\, \" and \n). */
function parseSampleLine(line: string): Sample & { name: string } {
  const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
  if (!match) throw new Error(`not a sample line: ${line}`);
  const labels: Record<string, string> = {};
  for (const [, key, raw] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  const value = match[3] === '+Inf' ? Infinity : match[3] === '-Inf' ? -Infinity : Number(match[3]);
  return { name: match[1]!, labels, value };
}

/** One row of docs/metrics.md's tables. */
export interface DocumentedMetric {
  readonly process: 'api' | 'worker';
  readonly name: string;
  readonly type: MetricType;
  readonly labels: readonly string[];
}

/** Every metric docs/metrics.md lists, with the type and labels it documents. */
export async function documentedMetrics(): Promise<DocumentedMetric[]> {
  const doc = await readFile(path.resolve(import.meta.dirname, '../../docs/metrics.md'), 'utf8');
  const metrics: DocumentedMetric[] = [];
  let process: DocumentedMetric['process'] | undefined;
  for (const line of doc.split('\n')) {
    if (line.startsWith('## ')) process = line === '## API' ? 'api' : line === '## Worker' ? 'worker' : undefined;
    if (!process || !line.startsWith('| `qrart_')) continue;
    const [names = '', type = '', labels = ''] = line.split('|').slice(1).map((cell) => cell.trim());
    // Labels are backticked names; their values, where listed, are in parentheses.
    const labelNames = [...labels.replace(/\([^)]*\)/g, '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    for (const [, name] of names.matchAll(/`(qrart_[a-z_]+)`/g)) metrics.push({ process, name: name!, type: type as MetricType, labels: labelNames });
  }
  return metrics;
}
