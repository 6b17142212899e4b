import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/**
 * Where the page's files are: next to this module when running the sources (src/api/playground),
 * and the sources' copy when running dist/ (tsc copies no .html/.css/.js files).
 */
function playgroundDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.resolve(here, '../playground'), path.resolve(here, '../../../src/api/playground')].find((dir) => existsSync(path.join(dir, 'index.html')));
}

/** eventsource-parser's ESM build (dist/index.js): no imports of its own, so the browser loads it as is. */
function eventSourceParserDir(): string | undefined {
  try {
    const dir = path.dirname(createRequire(import.meta.url).resolve('eventsource-parser'));
    return existsSync(path.join(dir, 'index.js')) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Everything the page loads comes from this server: its own scripts and styles, images it
 * draws or fetches from /v1/files and /v1/qr/preview (blob:), and API calls to the same origin.
 */
export const PLAYGROUND_CSP = [
  "default-src 'self'",
  "img-src 'self' data: blob:",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The playground (issue 15): GET / is the page, /playground/… its files (plain HTML, CSS and ES
 * modules, no build step), /playground/vendor/eventsource-parser.js the SSE parser from
 * node_modules. Nothing is loaded from a CDN.
 */
export async function playgroundRoutes(app: FastifyInstance): Promise<void> {
  const root = playgroundDir();
  const vendor = eventSourceParserDir();
  if (!root || !vendor) {
    app.log.warn({ root, vendor }, 'playground files not found: GET / is not served');
    return;
  }
  // Only the replies of this plugin's routes carry these (the plugin is encapsulated).
  app.addHook('onSend', async (_request, reply) => {
    reply
      .header('content-security-policy', PLAYGROUND_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      .header('cross-origin-opener-policy', 'same-origin');
  });
  await app.register(fastifyStatic, { root, prefix: '/playground/', index: false, redirect: false });
  app.get('/', (_request, reply) => reply.type('text/html; charset=utf-8').sendFile('index.html'));
  // The page is at /; the folder its files are in is where people look for it too.
  // index.html is also the page's file, but its relative module paths only resolve from /.
  for (const folder of ['/playground', '/playground/', '/playground/index.html']) app.get(folder, async (_request, reply) => reply.redirect('/', 301));
  app.get('/playground/vendor/eventsource-parser.js', (_request, reply) => reply.type('text/javascript; charset=utf-8').sendFile('index.js', vendor));
}
