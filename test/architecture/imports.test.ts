import madge from 'madge';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The import graph of src/, as madge reads it (static, dynamic and type-only imports alike):
 * no file reaches itself, no folder reaches itself through other folders, the lower layers (the
 * building blocks a job walks down to) import nothing from the layers that use them, and the two
 * services (the API and the worker, deployed apart) share only what lies beneath them.
 */

/** What each lower folder of src/ may import from src/ besides itself (packages aside). */
const LOWER_LAYERS: Readonly<Record<string, readonly string[]>> = {
  util: [],
  messages: ['util'],
  probes: [],
  net: ['util'],
  image: ['net', 'util'],
  onnx: ['util'],
  qr: ['image', 'util'],
  workflows: ['qr', 'image', 'net', 'util'],
};

let graph: Record<string, string[]>;
let circles: string[][];

beforeAll(async () => {
  const result = await madge('src', { fileExtensions: ['ts'], tsConfig: 'tsconfig.json' });
  graph = result.obj();
  circles = result.circular();
}, 60_000);

/** A file's folder under src/; the entry point and the modules beside it (config, logger) stand for themselves. */
const folderOf = (file: string): string => file.split('/')[0] ?? file;

/** Folder -> the other folders its files import. */
function folderGraph(files: Record<string, string[]>): Map<string, Set<string>> {
  const folders = new Map<string, Set<string>>();
  for (const [file, imports] of Object.entries(files)) {
    const from = folderOf(file);
    const targets = folders.get(from) ?? new Set<string>();
    for (const target of imports) if (folderOf(target) !== from) targets.add(folderOf(target));
    folders.set(from, targets);
  }
  return folders;
}

/** Each folder that reaches itself through others, with the path that closes the loop. */
function folderLoops(folders: Map<string, Set<string>>): string[] {
  const loops: string[] = [];
  for (const start of folders.keys()) {
    const seen = new Set<string>();
    const walk = (folder: string, path: string[]): void => {
      for (const next of folders.get(folder) ?? []) {
        if (next === start) loops.push([...path, next].join(' -> '));
        else if (!seen.has(next)) {
          seen.add(next);
          walk(next, [...path, next]);
        }
      }
    };
    walk(start, [start]);
  }
  return loops;
}

describe('the import graph of src/', () => {
  it('reads every source file', () => {
    expect(Object.keys(graph).length).toBeGreaterThan(150);
    expect(graph['qr/guarantee.ts']).toContain('qr/robustness.ts');
  });

  it('has no import circles', () => {
    expect(circles).toEqual([]);
  });

  it('has no folder import itself back through other folders', () => {
    expect(folderLoops(folderGraph(graph))).toEqual([]);
  });

  it('has the API and the worker import nothing from each other', () => {
    const other: Record<string, string> = { api: 'worker', worker: 'api' };
    const across = Object.entries(graph).flatMap(([file, imports]) =>
      imports.filter((target) => folderOf(target) === other[folderOf(file)]).map((target) => `${file} -> ${target}`),
    );
    expect(across).toEqual([]);
  });

  it.each(Object.entries(LOWER_LAYERS))('has %s import only from the layers below it', (folder, allowed) => {
    const climbing = Object.entries(graph)
      .filter(([file]) => folderOf(file) === folder)
      .flatMap(([file, imports]) => imports.filter((target) => folderOf(target) !== folder && !allowed.includes(folderOf(target))).map((target) => `${file} -> ${target}`));
    expect(climbing).toEqual([]);
  });
});
