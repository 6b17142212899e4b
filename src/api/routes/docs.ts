import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from '../openapi.ts';

/** /openapi.json and a self-contained HTML page rendered from it (no CDN: works offline). */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  const document = buildOpenApiDocument();
  const page = renderDocsPage(document);
  app.get('/openapi.json', async () => document);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
}

const escape = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function renderDocsPage(document: Record<string, unknown>): string {
  const paths = document.paths as Record<string, Record<string, { summary?: string }>>;
  const schemas = (document.components as { schemas: Record<string, { properties?: Record<string, Record<string, unknown>>; required?: string[] }> }).schemas;
  const endpoints = Object.entries(paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td><td>${escape(op.summary ?? '')}</td></tr>`))
    .join('');
  const bodies = Object.entries(schemas)
    .filter(([name]) => name.startsWith('Create_'))
    .map(([name, schema]) => {
      const rows = Object.entries(schema.properties ?? {})
        .map(([field, rule]) => {
          const { description, ...constraints } = rule;
          return `<tr><td><code>${escape(field)}</code>${schema.required?.includes(field) ? ' <b>required</b>' : ''}</td><td><code>${escape(JSON.stringify(constraints))}</code></td><td>${escape(String(description ?? ''))}</td></tr>`;
        })
        .join('');
      return `<h3>${escape(name.replace(/^Create_/, ''))}</h3><table><tr><th>field</th><th>rules</th><th>notes</th></tr>${rows}</table>`;
    })
    .join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>qr-art API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}code{font-size:13px;word-break:break-word}</style>
</head><body><h1>qr-art prediction API</h1>
<p>Every <code>/v1/predictions</code> call needs the header <code>x-api-key</code>. Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<h2>Endpoints</h2><table><tr><th>method</th><th>path</th><th>what</th></tr>${endpoints}</table>
<h2>Create bodies by workflow</h2>${bodies}</body></html>`;
}
