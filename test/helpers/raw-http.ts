import { request as httpRequest } from 'node:http';

export interface RawResponse {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** node:http: for a body on GET, raw bytes, and bodies sent without content-length (chunked). */
export function rawCall(
  baseUrl: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {},
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.body !== undefined && !options.chunked) headers['content-length'] = Buffer.byteLength(options.body);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    // The server may answer (413, 415) and close before the whole body was written.
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    if (options.body !== undefined && options.chunked) {
      const bytes = Buffer.from(options.body);
      for (let at = 0; at < bytes.length; at += 8192) req.write(bytes.subarray(at, at + 8192));
      req.end();
    } else {
      req.end(options.body);
    }
  });
}
