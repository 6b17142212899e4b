/**
 * The API reference: /openapi.json, and Swagger UI rendering it at /docs.
 *
 * Why Swagger UI (the swagger-ui-dist package) and not another renderer: its "Try it out"
 * sends real requests and fills in the apiKey security scheme (our x-api-key header) from its
 * Authorize dialog; its dist is self-contained static files (no fonts, scripts or styles fetched
 * from elsewhere), so /docs works offline and behind a firewall; and it is the most widely
 * maintained OpenAPI renderer. Redoc's free build has no try-it, and Scalar's bundle loads its
 * fonts from a CDN unless configured otherwise.
 *
 * Only the two files the page needs (and the favicons) are served from node_modules; the
 * package's own index.html and initializer are not, because they point at the petstore demo
 * on petstore.swagger.io. Our initializer is a script file of its own, so the page needs no
 * inline script and can be held to a strict Content-Security-Policy.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { WORKFLOWS } from '../../workflows/names.ts';
import { buildOpenApiDocument } from '../openapi.ts';

/** swagger-ui-dist's folder, found through Node's resolution (works from src/ under tsx and from dist/). */
const SWAGGER_UI_ROOT = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const ASSETS_PREFIX = '/docs/assets/';
/**
 * The files the page loads. Not the standalone preset (its top bar has a URL box that loads any
 * document, and a validator badge that calls validator.swagger.io), and not the source maps.
 */
const ASSETS = new Set(['/swagger-ui.css', '/swagger-ui-bundle.js', '/favicon-32x32.png', '/favicon-16x16.png']);

/**
 * Everything the page may load or call is on this origin. Swagger UI needs inline styles (React
 * style attributes) and data: images (its icons in the CSS); no inline script, no eval.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Swagger UI's configuration. queryConfigEnabled stays off (its default) so that no ?url= or
 * ?configUrl= in a link can make the page load a document from elsewhere; validatorUrl: null
 * keeps it from sending our document to validator.swagger.io.
 */
const INITIALIZER = `'use strict';
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    layout: 'BaseLayout',
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    // Keep the key from the Authorize dialog across reloads (in this browser's localStorage).
    persistAuthorization: true,
    supportedSubmitMethods: ['get', 'post'],
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    validatorUrl: null,
    queryConfigEnabled: false,
  });
});
`;

/** /openapi.json and the Swagger UI page at /docs (assets from node_modules: no CDN, works offline). */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  const document = buildOpenApiDocument();
  app.get('/openapi.json', async () => document);

  await app.register(fastifyStatic, {
    root: SWAGGER_UI_ROOT,
    prefix: ASSETS_PREFIX,
    // Another part of the app may register @fastify/static for its own files.
    decorateReply: false,
    index: false,
    allowedPath: (pathName) => ASSETS.has(pathName),
  });
  app.get('/docs/init.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(INITIALIZER));
  const page = renderPage();
  app.get('/docs', async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('content-security-policy', CONTENT_SECURITY_POLICY).header('referrer-policy', 'no-referrer').send(page),
  );
  // People type the folder form too; the page's asset paths are written for /docs.
  app.get('/docs/', async (_request, reply) => reply.redirect('/docs', 301));
}

/**
 * The page Swagger UI mounts into. The <noscript> part is for readers (and crawlers) without
 * JavaScript: where the machine-readable document is, and the workflow names.
 */
function renderPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>qr-art API reference</title>
<link rel="icon" type="image/png" sizes="32x32" href="${ASSETS_PREFIX}favicon-32x32.png">
<link rel="icon" type="image/png" sizes="16x16" href="${ASSETS_PREFIX}favicon-16x16.png">
<link rel="stylesheet" href="${ASSETS_PREFIX}swagger-ui.css">
</head>
<body>
<noscript>
<h1>qr-art prediction API</h1>
<p>This reference needs JavaScript. The same description is at <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).
Every <code>/v1/predictions</code> call needs the header <code>x-api-key</code>.</p>
<p>Workflows: ${WORKFLOWS.map((name) => `<code>${name}</code>`).join(', ')}.</p>
</noscript>
<div id="swagger-ui"></div>
<script src="${ASSETS_PREFIX}swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
}
