/**
 * An image download under way when NATS goes away: the response ends with an error the client
 * sees (a reset), instead of stalling with its Content-Length unmet until NATS returns.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../helpers/flows.ts';
import { startTestStack, type TestStack } from '../helpers/service.ts';

describe('a file transfer when NATS goes away', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop().catch(() => undefined);
  });

  it('ends with an error within seconds, not an open connection', async () => {
    const name = `${randomBytes(16).toString('base64url')}.png`;
    const bytes = randomBytes(16_000_000);
    await stack.api.queue.images.putBlob({ name }, bytes);
    const response = await fetch(`${stack.baseUrl}/v1/files/${name}`);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let got = (await reader.read()).value!.length;
    await stack.nats.stop();
    const outcome = await Promise.race([
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return 'ended';
          got += value.length;
        }
      })().catch(() => 'error'),
      sleep(20_000).then(() => 'still open'),
    ]);
    expect(got).toBeLessThan(bytes.length);
    expect(outcome).toBe('error');
  }, 60_000);
});
