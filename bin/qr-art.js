#!/usr/bin/env node
// Runs the compiled CLI when `npm run build` produced dist/, else the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = `${root}dist/cli.js`;
let entry;
if (existsSync(compiled) && process.env.QR_ART_FROM_SOURCE !== '1') {
  entry = pathToFileURL(compiled).href;
} else {
  const { register } = await import('tsx/esm/api');
  register();
  entry = pathToFileURL(`${root}src/cli.ts`).href;
}
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
