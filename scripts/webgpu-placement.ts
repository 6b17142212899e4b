/**
 * Which nodes of each graph ONNX Runtime's WebGPU provider leaves to the CPU: every .onnx file
 * under a folder (default models/demo) opened on WebGPU with verbose logging in a child process,
 * and ORT's "kernel not found" reports grouped by op type. docs/models.md shows the demo's.
 *   npx tsx scripts/webgpu-placement.ts [folder]
 * Needs a Vulkan driver (a GPU's, or Mesa's lavapipe for a software device).
 */
import { spawnSync } from 'node:child_process';
import ort from 'onnxruntime-node';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = process.argv[2] && process.argv[2] !== '--one' ? process.argv[2] : fileURLToPath(new URL('../models/demo', import.meta.url));

if (process.argv[2] === '--one') {
  await ort.InferenceSession.create(process.argv[3]!, { executionProviders: ['webgpu'], logSeverityLevel: 0, logVerbosityLevel: 0 });
  process.exit(0);
}

const graphs = readdirSync(DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.onnx')).sort();
console.log('| graph | nodes on the CPU (op type × count) |\n|---|---|');
for (const g of graphs) {
  const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--one', join(DIR, g)], { encoding: 'utf8' });
  if (child.status !== 0) {
    console.log(`| ${g} | could not open on WebGPU: ${(child.stderr.split('\n').find((l) => /adapter|Error/.test(l)) ?? child.stderr).trim()} |`);
    continue;
  }
  // Each node is reported once per partitioning pass: count node names, not lines.
  const nodes = new Map<string, string>();
  for (const m of `${child.stdout}\n${child.stderr}`.matchAll(/kernel not found in registries for Op type: (\w+) node name: (\S+)/g)) nodes.set(m[2]!, m[1]!);
  const counts = new Map<string, number>();
  for (const op of nodes.values()) counts.set(op, (counts.get(op) ?? 0) + 1);
  console.log(`| ${g} | ${counts.size === 0 ? 'none' : [...counts].map(([op, n]) => `${op} × ${n}`).join(', ')} |`);
}
