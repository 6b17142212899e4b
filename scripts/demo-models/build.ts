/**
 * Writes the demo SD1.5 graphs (see sd15.ts for their contracts).
 * Usage: npx tsx scripts/demo-models/build.ts models/demo
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEMO_FILES, DEMO_GRAPHS } from './sd15.ts';

export async function buildDemoModels(outDir: string): Promise<{ path: string; bytes: number }[]> {
  const written: { path: string; bytes: number }[] = [];
  const write = async (path: string, data: Uint8Array | string): Promise<void> => {
    const file = join(outDir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, data);
    written.push({ path, bytes: typeof data === 'string' ? Buffer.byteLength(data) : data.length });
  };
  for (const graph of DEMO_GRAPHS) await write(graph.path, graph.build());
  for (const file of DEMO_FILES) await write(file.path, file.text());
  return written;
}

async function main(): Promise<void> {
  const [target] = process.argv.slice(2);
  if (!target) {
    console.error('usage: npx tsx scripts/demo-models/build.ts <output folder>');
    process.exit(2);
  }
  const outDir = resolve(target);
  for (const { path, bytes } of await buildDemoModels(outDir)) {
    console.log(`${String(bytes).padStart(9)}  ${join(outDir, path)}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
