import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** node:http: for a body on GET, raw bytes, bodies sent without content-length (chunked), and paths sent as they are. */
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
    // The path goes as written (`..`, NUL escapes and all), as a client that does not normalize sends it.
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers }, (res) => {
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

/** One HTTP response (content-length framed) read off a socket by hand. */
export interface SocketResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  text: string;
  /** Bytes it took: the next response starts there. */
  length: number;
}

/** Parses one HTTP response from the front of `bytes`, or null while it is incomplete. */
export function parseResponse(bytes: Buffer): SocketResponse | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (bytes.length < end + 4 + length) return null;
  return { status: Number(statusLine!.split(' ')[1]), headers, text: bytes.subarray(end + 4, end + 4 + length).toString('utf8'), length: end + 4 + length };
}

/** A GET with one header sent several times, as separate lines (node:http's client cannot send that). */
export function repeatedHeaderGet(baseUrl: string, path: string, name: string, values: string[]): Promise<{ status: number; body: any }> {
  const url = new URL(baseUrl);
  const head = [`GET ${path} HTTP/1.1`, `Host: ${url.host}`, ...values.map((value) => `${name}: ${value}`), 'Connection: close', '', ''].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(head));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [top, ...rest] = text.split('\r\n\r\n');
      const status = Number(top!.split(' ')[1]);
      const body = rest.join('\r\n\r\n');
      try {
        resolve({ status, body: JSON.parse(body) });
      } catch {
        resolve({ status, body });
      }
    });
  });
}
