/**
 * Settings that parse but cannot work are refused at start, naming the variable and the rule:
 * a timer longer than Node can wait (it would fire at once), an ack window shorter than the
 * worker's heartbeat can serve, a base URL images cannot be served under, a database URL that
 * is not PostgreSQL's, warm-up sizes no output has.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('settings bounds', () => {
  it.each([
    ['JOB_TIMEOUT_MS', '3000000000', /JOB_TIMEOUT_MS: must be at most 2147483647 ms/],
    ['REQUEST_TIMEOUT_MS', '2147483648', /REQUEST_TIMEOUT_MS: must be at most 2147483647 ms/],
    ['DB_STARTUP_WAIT_MS', '9999999999', /DB_STARTUP_WAIT_MS: must be at most/],
    ['JOB_ACK_WAIT_MS', '500', /JOB_ACK_WAIT_MS: must be at least 1000 ms/],
    ['PUBLIC_BASE_URL', 'ftp://files.example.com', /PUBLIC_BASE_URL: must be an http:\/\/ or https:\/\/ URL/],
    ['PUBLIC_BASE_URL', 'javascript:alert(1)', /PUBLIC_BASE_URL: must be an http:\/\/ or https:\/\/ URL/],
    ['PUBLIC_BASE_URL', 'https://example.com/base?x=1', /PUBLIC_BASE_URL: must not carry a query or fragment/],
    ['DATABASE_URL', 'not-a-url', /DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/],
    ['DATABASE_URL', 'mysql://u@h/db', /DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/],
    ['WARMUP_SIZES', '0x0', /WARMUP_SIZES: each side from 1 to 3840 px/],
    ['WARMUP_SIZES', '768x768,99999x99999', /WARMUP_SIZES: each side from 1 to 3840 px/],
    ['PORT', '9464', /METRICS_PORT: is 9464, the same port as PORT/],
    ['NATS_URL', 'garbage url', /NATS_URL: must list NATS servers/],
    ['NATS_URL', 'nats://a:4222,,nats://b:4222', /NATS_URL: must list NATS servers/],
    ['NATS_URL', 'http://nats:4222', /NATS_URL: must list NATS servers/],
    // Number() would read these as 0, 8080 and 1000: a blank PORT listened anywhere, a blank retention kept images for good.
    ['PORT', ' ', /PORT: must be a number written in decimal digits/],
    ['PORT', '0x1F90', /PORT: must be a number written in decimal digits/],
    ['JOB_ACK_WAIT_MS', '1e3', /JOB_ACK_WAIT_MS: must be a number written in decimal digits/],
    ['IMAGE_RETENTION_HOURS', '  ', /IMAGE_RETENTION_HOURS: must be a number written in decimal digits/],
    ['METRICS_PORT', ' ', /METRICS_PORT: must be a port number from 0 to 65535, or off$/],
    ['WORKER_METRICS_PORT', 'nine', /WORKER_METRICS_PORT: must be a port number from 0 to 65535, or off$/],
    // ONNX Runtime's thread pool grows without bound on a huge count, and its refusal names a model file.
    ['INFERENCE_THREADS', '99999', /INFERENCE_THREADS: .*256/],
    ['CUDA_DEVICE_ID', '1000', /CUDA_DEVICE_ID: .*63/],
  ])('refuses %s=%s', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });

  it('reads NATS_SERVER_BIN with the rest: empty is unset, as for every setting', () => {
    expect(loadConfig({ NATS_SERVER_BIN: '' }).NATS_SERVER_BIN).toBeUndefined();
    expect(loadConfig({ NATS_SERVER_BIN: '/opt/nats/nats-server' }).NATS_SERVER_BIN).toBe('/opt/nats/nats-server');
  });

  it('takes what works', () => {
    const config = loadConfig({
      JOB_TIMEOUT_MS: '2147483647',
      JOB_ACK_WAIT_MS: '1000',
      PUBLIC_BASE_URL: 'https://images.example.com/qr/',
      DATABASE_URL: 'postgresql://app@db.internal:5432/qrart',
      WARMUP_SIZES: '768x768,3840x2160',
      PORT: ' 9000 ',
      IMAGE_RETENTION_HOURS: '0.5',
      INFERENCE_THREADS: '256',
    });
    expect(config).toMatchObject({ PORT: 9000, IMAGE_RETENTION_HOURS: 0.5, INFERENCE_THREADS: 256 });
    expect(config).toMatchObject({ JOB_TIMEOUT_MS: 2147483647, JOB_ACK_WAIT_MS: 1000, PUBLIC_BASE_URL: 'https://images.example.com/qr/', WARMUP_SIZES: '768x768,3840x2160' });
    for (const url of ['postgres://u@h/db', 'POSTGRES://u@h/db', 'socket:/var/run/postgresql?db=qrart', '/var/run/postgresql qrart']) {
      expect(loadConfig({ DATABASE_URL: url }).DATABASE_URL).toBe(url);
    }
    for (const servers of ['nats://nats-0.nats:4222,nats://nats-1.nats:4222', 'localhost:4222', 'tls://nats.example.com:4222']) {
      expect(loadConfig({ NATS_URL: servers }).NATS_URL).toBe(servers);
    }
  });
});
