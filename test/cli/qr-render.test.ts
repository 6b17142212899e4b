import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qrCommand } from '../../src/cli/qr-render.ts';
import { captureOutput } from '../helpers/console.ts';
import { zbarDecode } from '../helpers/independent-decoders.ts';

describe('qr-art qr render', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qr-render-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const run = (args: string[]) => captureOutput(() => qrCommand(['render', ...args]));

  it('writes the control image at the output size, where asked, and it decodes with ZBar', async () => {
    const file = path.join(dir, 'preview.png');
    const result = await run(['--content', 'tel:+15551234567', '--pattern', 'r2', '--aspect-ratio', '16:9', '--qr-ratio', '0.5', '--qr-x', '10', '--qr-y', '20', '--out', file, '--json']);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.out);
    expect(summary).toMatchObject({ width: 1024, height: 576, pattern: 'r2', background: 'gray', scannable: true, scanRobustness: 1, square: { x: 10, y: 20, side: 288 } });
    const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: 1024, height: 576 });
    expect(await zbarDecode({ data, width: info.width, height: info.height, channels: info.channels as 1 })).toEqual(['tel:+15551234567']);
    expect(data[0]).toBe(0x80); // gray outside the square for the universal model
  });

  it('judges the layout by the verdict a job gives (capture family included): content too long for it exits 3', async () => {
    // One read of the plain image succeeds (the scan check alone said yes); the captures' decoders do not all.
    const long = `https://example.com/${'a'.repeat(420)}`;
    const result = await run(['--content', long, '--out', path.join(dir, 'long.png'), '--json']);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.out)).toMatchObject({ version: 23, scannable: false });
    const text = await run(['--content', long, '--out', path.join(dir, 'long.png')]);
    expect(text.out).toContain('scannable: no');
  }, 60_000);

  it('uses a white background for the real model', async () => {
    const file = path.join(dir, 'real.png');
    expect((await run(['--content', 'hello', '--model', 'real', '--out', file])).code).toBe(0);
    const { data } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBe(0xff);
  });

  it('refuses what the API refuses, naming the option and the rule', async () => {
    const result = await run(['--content', 'hello', '--qr-ratio', '2', '--pattern', 'zz9', '--qr-x', '700', '--out', path.join(dir, 'x.png')]);
    expect(result.code).toBe(2);
    expect(result.err).toContain('--qr-ratio');
    expect(result.err).toContain('--pattern');
    expect(result.err).toMatch(/--pattern.*s1/);
  });

  it('a write that stops part-way (the disk full, here a file-size limit) leaves the file that was at --out whole', async () => {
    const file = path.join(dir, 'kept.png');
    expect((await run(['--content', 'https://example.com/kept', '--out', file])).code).toBe(0);
    const before = await readFile(file);
    expect(before.length).toBeGreaterThan(4096);
    // The shell's limit of 4 KiB per file: the new PNG cannot be written whole (SIGXFSZ ends the process).
    const bin = path.resolve(import.meta.dirname, '../../bin/qr-art.js');
    const cut = spawnSync('bash', ['-c', `ulimit -f 4; exec "${process.execPath}" "${bin}" qr render --content https://example.com/other-content --out "${file}"`], { encoding: 'utf8' });
    expect(cut.status === 0).toBe(false);
    expect((await readFile(file)).equals(before)).toBe(true);
  }, 60_000);

  it('writes into a named pipe (or a device) as it is, not by renaming a file over it', async () => {
    const fifo = path.join(dir, 'png-pipe');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo]);
    const read: Buffer[] = [];
    reader.stdout.on('data', (chunk: Buffer) => read.push(chunk));
    const done = new Promise((resolve) => reader.once('close', resolve));
    try {
      const written = await run(['--content', 'https://example.com/piped', '--out', fifo]);
      expect(written.code, written.err).toBe(0);
      await done;
      expect([...Buffer.concat(read).subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]); // the PNG came through the pipe
      expect(lstatSync(fifo).isFIFO()).toBe(true);
    } finally {
      reader.kill();
    }
  }, 60_000);

  it('refuses a missing --content', async () => {
    const result = await run(['--out', path.join(dir, 'y.png')]);
    expect(result.code).toBe(2);
    expect(result.err).toContain('--content');
  });

  it('answers -h with the usage, and an --out it cannot write with one line naming it (exit 2)', async () => {
    const help = await run(['-h']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--content TEXT');
    // Asked of `qr` itself, as `keys -h` and `models -h` are.
    for (const asked of ['-h', '--help', 'help']) expect((await captureOutput(() => qrCommand([asked]))).code).toBe(0);
    const missingDir = path.join(dir, 'no-such-dir', 'x.png');
    const result = await run(['--content', 'hello', '--out', missingDir]);
    expect(result.code).toBe(2);
    expect(result.err.trim()).toBe(`--out: cannot write ${missingDir}: ENOENT`);
  });
});
