import { randomBytes } from 'node:crypto';
import { errors } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OBJECT_BUCKET } from '../../src/queue/subjects.ts';
import { ensureTopology } from '../../src/queue/topology.ts';
import { startTestStack, waitFor, type TestStack } from '../helpers/service.ts';

/**
 * GET and HEAD /v1/files/{name} against the real object store: the image with its ETag, a 304
 * for a tag the client holds (weak, in a list, or `*`), and neither a 304 nor a HEAD opening a
 * consumer on the broker or pulling the image's chunks.
 */

const BYTES = randomBytes(300_000);

describe('/v1/files/{name}', () => {
  let stack: TestStack;
  let name: string;
  let url: string;

  beforeAll(async () => {
    stack = await startTestStack();
    name = `${randomBytes(16).toString('base64url')}.png`;
    await stack.api.queue.images.putBlob({ name }, BYTES);
    url = `${stack.baseUrl}/v1/files/${name}`;
  });
  afterAll(async () => stack?.stop());

  /** Consumers on the object store's stream: each get() of an object opens one, which the server keeps for minutes. */
  const consumers = async () => (await stack.api.queue.jsm.consumers.list(`OBJ_${OBJECT_BUCKET}`).next()).length;

  it('serves the image with its ETag and length', async () => {
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('etag')).toMatch(/^"SHA-256=/);
    expect(Buffer.from(await response.arrayBuffer()).equals(BYTES)).toBe(true);
  });

  it('answers 304 to the tag as sent, weak, in a list, or *, and 200 to another', async () => {
    const etag = (await fetch(url, { method: 'HEAD' })).headers.get('etag')!;
    for (const header of [etag, `W/${etag}`, `"elsewhere", ${etag}`, '*']) {
      const response = await fetch(url, { headers: { 'if-none-match': header } });
      expect(response.status, header).toBe(304);
    }
    const other = await fetch(url, { headers: { 'if-none-match': '"SHA-256=another"' } });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });

  it('a 304 and a HEAD read only the metadata: no consumer is opened on the broker', async () => {
    const etag = (await fetch(url, { method: 'HEAD' })).headers.get('etag')!;
    const before = await consumers();
    for (let i = 0; i < 5; i++) {
      expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304);
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(BYTES.length));
      expect(head.headers.get('etag')).toBe(etag);
    }
    expect(await consumers()).toBe(before);
  });

  it('an error after the lookup (the broker failing, the object gone) carries none of the image’s cache headers', async () => {
    // Fault injection on the real store: info() answers, then get() fails or finds nothing.
    const images = stack.api.queue.images;
    const realGet = images.get.bind(images);
    try {
      images.get = async () => {
        throw new errors.TimeoutError();
      };
      const unavailable = await fetch(url);
      expect(unavailable.status).toBe(503);
      images.get = async () => null;
      const gone = await fetch(url);
      expect(gone.status).toBe(404);
      for (const response of [unavailable, gone]) {
        expect(response.headers.get('cache-control') ?? '').not.toContain('immutable');
        expect(response.headers.get('etag')).toBeNull();
      }
    } finally {
      images.get = realGet;
    }
  });

  it('a name that is not stored is a 404', async () => {
    const response = await fetch(`${stack.baseUrl}/v1/files/${randomBytes(16).toString('base64url')}.png`);
    expect(response.status).toBe(404);
  });
});

describe('IMAGE_RETENTION_HOURS', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // 0.0005 h = 1.8 s: the bucket's max age, set by the API's topology at start.
    stack = await startTestStack({ env: { IMAGE_RETENTION_HOURS: '0.0005' } });
  });
  afterAll(async () => stack?.stop());

  const maxAgeMs = async () => (await stack.api.queue.jsm.streams.info(`OBJ_${OBJECT_BUCKET}`)).config.max_age / 1e6;

  it('deletes an image that long after it was made; GET then answers 404', async () => {
    expect(await maxAgeMs()).toBe(1800);
    const name = `${randomBytes(16).toString('base64url')}.png`;
    await stack.api.queue.images.putBlob({ name }, BYTES);
    const url = `${stack.baseUrl}/v1/files/${name}`;
    const fresh = await fetch(url);
    expect(fresh.status).toBe(200);
    await fresh.arrayBuffer();
    await waitFor(async () => ((await fetch(url, { method: 'HEAD' })).status === 404 ? true : undefined), 15_000);
    expect((await fetch(url)).status).toBe(404);
  });

  it('a process started without it leaves the bucket as it is; 0 keeps images for good', async () => {
    const { jsm } = stack.api.queue;
    await ensureTopology(jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3 });
    expect(await maxAgeMs()).toBe(1800);
    await ensureTopology(jsm, { jobAckWaitMs: 60_000, jobMaxDeliver: 3, imageRetentionMs: 0 });
    expect(await maxAgeMs()).toBe(0);
  });
});
