/**
 * What the main thread needs to launch the inference thread and hear from it, apart from the
 * request bookkeeping in inference-client.ts: where the thread's script is (source or dist/),
 * and how its log lines reach the process's logger.
 */
import type { Logger } from 'pino';

/** The worker script and its options: the .ts file through tsx from source, the .js file from dist/. */
export function inferenceThreadEntry(): { script: string | URL; eval: boolean } {
  const fromSource = import.meta.url.endsWith('.ts');
  if (!fromSource) return { script: new URL('./inference-thread.js', import.meta.url), eval: false };
  // Node 20 does not apply `--import` loaders to a worker's entry module, so the thread
  // registers tsx itself before importing its TypeScript entry.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./inference-thread.ts', import.meta.url).href;
  return {
    script: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    eval: true,
  };
}

/** pino's numeric levels, as the thread's JSON lines carry them. */
const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** A thread log line (pino JSON) goes out through this side's logger, at its level; a line that is not JSON, as info. */
export function relayThreadLog(logger: Logger, line: string): void {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    logger.info({ line }, 'inference thread');
    return;
  }
  const { level, msg, time: _time, ...rest } = record;
  const label = LEVELS[Number(level)] ?? 'info';
  logger[label]({ thread: 'inference', ...rest }, typeof msg === 'string' ? msg : 'inference thread');
}
