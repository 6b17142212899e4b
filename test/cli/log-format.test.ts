/**
 * Log lines for people under `start` on a terminal, JSON lines for machines everywhere else:
 * the format choice (LOG_FORMAT, command, terminal), what each format writes, and a child
 * process forced to pretty that logs one line and exits at once (the line must not be lost).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createLogger, resolveLogFormat, type LogFormat } from '../../src/logger.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Logs one line through a logger of the given format and returns what it wrote. */
async function oneLine(format: LogFormat): Promise<string> {
  const stream = new PassThrough();
  let out = '';
  stream.on('data', (chunk) => (out += chunk));
  const logger = createLogger('info', 'qr-art', { format, destination: stream, colorize: false });
  logger.child({ role: 'api' }).info({ address: 'http://127.0.0.1:8080' }, 'qr-art is up');
  await new Promise((resolve) => setImmediate(resolve));
  return out;
}

describe('log format', () => {
  it('auto is pretty only for start writing to a terminal', () => {
    expect(resolveLogFormat('auto', 'start', true)).toBe('pretty');
    expect(resolveLogFormat('auto', 'start', false)).toBe('json');
    // serve and worker run under orchestrators: JSON even when someone runs them in a terminal.
    expect(resolveLogFormat('auto', 'serve', true)).toBe('json');
    expect(resolveLogFormat('auto', 'worker', true)).toBe('json');
  });

  it('LOG_FORMAT=pretty or json overrides the choice for every command', () => {
    for (const command of ['start', 'serve', 'worker']) {
      for (const tty of [true, false]) {
        expect(resolveLogFormat('pretty', command, tty)).toBe('pretty');
        expect(resolveLogFormat('json', command, tty)).toBe('json');
      }
    }
  });

  it('LOG_FORMAT defaults to auto and refuses other values', () => {
    expect(loadConfig({}).LOG_FORMAT).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).LOG_FORMAT).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(ConfigError);
  });

  it('json writes one JSON object per line with level, name, pid and the fields', async () => {
    const line = await oneLine('json');
    const parsed = JSON.parse(line.trim());
    expect(parsed).toMatchObject({ level: 30, name: 'qr-art', pid: process.pid, role: 'api', address: 'http://127.0.0.1:8080', msg: 'qr-art is up' });
  });

  it('pretty writes a readable line: local time, level, name, role before the message, fields below; no pid', async () => {
    const text = await oneLine('pretty');
    expect(() => JSON.parse(text.trim())).toThrow();
    const [first, ...rest] = text.trimEnd().split('\n');
    expect(first).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO \(qr-art\): \[api\] qr-art is up$/);
    expect(rest.join('\n')).toContain('address: "http://127.0.0.1:8080"');
    expect(text).not.toContain('pid');
    expect(text).not.toContain(String(process.pid));
  });

  it('a command forced to pretty writes its line before an immediate exit (child process)', () => {
    // What a device fault does: log, then process.exit at once. stdout is a pipe here, so auto
    // would pick JSON; LOG_FORMAT=pretty forces the readable form through the CLI's own wiring.
    const code = [
      "const { loadConfig } = await import('./src/config.ts');",
      "const { commandLogger } = await import('./src/cli.ts');",
      "commandLogger(loadConfig(), 'worker', 'worker').fatal('giving the device up');",
      'process.exit(3);',
    ].join('\n');
    const run = (format: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
        cwd: ROOT,
        env: { ...process.env, LOG_FORMAT: format, NO_COLOR: '1' },
        encoding: 'utf8',
        timeout: 20_000,
      });
    const pretty = run('pretty');
    expect(pretty.status, pretty.stderr).toBe(3);
    expect(pretty.stdout).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] FATAL \(worker\): giving the device up\n$/);
    const auto = run('auto');
    expect(auto.status, auto.stderr).toBe(3);
    expect(JSON.parse(auto.stdout)).toMatchObject({ level: 60, name: 'worker', msg: 'giving the device up' });
  }, 30_000);

  it('a JSON line logged just before the process dies of a signal is written, even with the thread pool busy (child process)', () => {
    // What a second Ctrl-C does: log why, then die of the signal, which skips the exit-time
    // flush. Under start the pool is busy (PGlite's files, sharp, zlib): here, key derivations.
    const code = [
      "const { pbkdf2 } = await import('node:crypto');",
      "const { loadConfig } = await import('./src/config.ts');",
      "const { commandLogger } = await import('./src/cli.ts');",
      "const logger = commandLogger(loadConfig(), 'start', 'qr-art');",
      "for (let i = 0; i < 8; i++) pbkdf2('x', 'y', 200000, 64, 'sha512', () => {});",
      "logger.warn('stopping now');",
      "process.kill(process.pid, 'SIGINT');",
    ].join('\n');
    for (let attempt = 0; attempt < 3; attempt++) {
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
        cwd: ROOT,
        env: { ...process.env, LOG_FORMAT: 'json' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.signal, run.stderr).toBe('SIGINT');
      expect(run.stdout).toContain('"msg":"stopping now"');
    }
  }, 60_000);
});
