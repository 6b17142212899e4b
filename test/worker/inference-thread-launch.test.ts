import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { inferenceThreadEntry, relayThreadLog } from '../../src/worker/inference-thread-launch.ts';

/** A real pino logger writing JSON lines into an array. */
function capturingLogger(): { logger: pino.Logger; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      records.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'trace', base: undefined }, sink), records };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('relayThreadLog', () => {
  it('re-logs a thread line at its own level, with its fields, marked as the inference thread', async () => {
    const { logger, records } = capturingLogger();
    const line = JSON.stringify({ level: 40, time: 1, msg: 'session slow', role: 'unet', ms: 812 });
    relayThreadLog(logger, line);
    await flush();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ level: 40, msg: 'session slow', role: 'unet', ms: 812, thread: 'inference' });
    expect(records[0]?.time).not.toBe(1);
  });

  it('logs a line that is not JSON as info, keeping the text', async () => {
    const { logger, records } = capturingLogger();
    relayThreadLog(logger, 'onnxruntime: plain text');
    await flush();
    expect(records[0]).toMatchObject({ level: 30, line: 'onnxruntime: plain text', msg: 'inference thread' });
  });

  it('logs an unknown level as info', async () => {
    const { logger, records } = capturingLogger();
    relayThreadLog(logger, JSON.stringify({ level: 35, msg: 'odd' }));
    await flush();
    expect(records[0]).toMatchObject({ level: 30, msg: 'odd' });
  });
});

describe('inferenceThreadEntry', () => {
  it('from source, registers tsx and imports the TypeScript thread beside this module', () => {
    const entry = inferenceThreadEntry();
    expect(entry.eval).toBe(true);
    expect(String(entry.script)).toContain('src/worker/inference-thread.ts');
    expect(String(entry.script)).toContain('register()');
  });
});
