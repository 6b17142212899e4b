import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP host for the images a test's jobs fetch (qrImage, outpainting's image). */
export interface FileServer {
  /** http://127.0.0.1:PORT, no trailing slash. */
  readonly url: string;
  /** The path of every request served so far, in order. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/**
 * Serves `files` by exact path as image/png (whatever the bytes are: the worker sniffs them), 404
 * otherwise. `special` may answer a request itself (a stalled body, a redirect) by returning true.
 */
export async function serveFiles(files: Readonly<Record<string, Buffer>>, special?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean): Promise<FileServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (special?.(req, res)) return;
    const body = files[req.url ?? ''];
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/png' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
