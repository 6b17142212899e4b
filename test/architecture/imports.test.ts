import madge from 'madge';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The import graph of src/, as madge reads it (static, dynamic and type-only imports alike):
 * no file reaches itself, and the lower layers (the building blocks a job walks down to) import
 * nothing from the layers that use them.
 */

/** What each lower folder of src/ may import from src/ besides itself (packages aside). */
const LOWER_LAYERS: Readonly<Record<string, readonly string[]>> = {
  util: [],
  net: ['util'],
  image: ['net', 'util'],
  onnx: ['util'],
  qr: ['image', 'util'],
  workflows: ['qr', 'image', 'util'],
};

let graph: Record<string, string[]>;
let circles: string[][];

beforeAll(async () => {
  const result = await madge('src', { fileExtensions: ['ts'], tsConfig: 'tsconfig.json' });
  graph = result.obj();
  circles = result.circular();
}, 60_000);

const folderOf = (file: string): string => file.split('/')[0] ?? file;

describe('the import graph of src/', () => {
  it('reads every source file', () => {
    expect(Object.keys(graph).length).toBeGreaterThan(150);
    expect(graph['qr/guarantee.ts']).toContain('qr/robustness.ts');
  });

  it('has no import circles', () => {
    expect(circles).toEqual([]);
  });

  it.each(Object.entries(LOWER_LAYERS))('has %s import only from the layers below it', (folder, allowed) => {
    const climbing = Object.entries(graph)
      .filter(([file]) => folderOf(file) === folder)
      .flatMap(([file, imports]) => imports.filter((target) => folderOf(target) !== folder && !allowed.includes(folderOf(target))).map((target) => `${file} -> ${target}`));
    expect(climbing).toEqual([]);
  });
});
