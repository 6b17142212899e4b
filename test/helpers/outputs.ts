import { Webhook } from 'standardwebhooks';
import sharp from 'sharp';
import type { JetStreamManager } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../../src/queue/subjects.ts';
import type { RawImage } from '../../src/image/raw.ts';
import type { ReceivedWebhook } from './flows.ts';
import { opencvDecode, zbarDecode } from './independent-decoders.ts';
import { TEST_SECRET } from './service.ts';

/** What a client sees of one output image: fetched from its URL as a client would. */
export interface FetchedImage {
  url: string;
  status: number;
  contentType: string | null;
  png: Buffer;
  format: string | undefined;
  width: number | undefined;
  height: number | undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Fetches an output URL. URLs carry PUBLIC_BASE_URL (http://localhost:PORT by default, PORT
 * being 0 in tests), so the path is fetched from the API's own address.
 */
export async function fetchOutputImage(apiBaseUrl: string, url: string): Promise<FetchedImage> {
  const response = await fetch(`${apiBaseUrl}${new URL(url).pathname}`);
  const png = Buffer.from(await response.arrayBuffer());
  const isPng = png.subarray(0, 8).equals(PNG_SIGNATURE);
  const meta = isPng ? await sharp(png).metadata() : undefined;
  return { url, status: response.status, contentType: response.headers.get('content-type'), png, format: meta?.format, width: meta?.width, height: meta?.height };
}

export interface RefereeReading {
  /** What the referee read in the first view it read anything from (empty: none). */
  texts: string[];
  /** That view: 'as given', or the code's approximate side in px after the resize, and the blur. */
  view?: string;
}

/**
 * What each independent decoder (ZBar, OpenCV) reads in a PNG. A phone never sees a file's
 * pixels one to one: its optics and sensor average them. As in test/qr/scan-referees.test.ts,
 * a referee gets the image as given and then resized by sharp (libvips, not our code) so the
 * code spans about 320, 240 and 160 px, each as is and after a light blur (σ 0.7); it stops at
 * the first view it reads anything from. `codeSide` is the code's approximate side in the image.
 */
export async function refereeReadings(png: Buffer, codeSide: number): Promise<{ zbar: RefereeReading; opencv: RefereeReading }> {
  const { width } = await sharp(png).metadata();
  const views: Array<{ name: string; image: () => Promise<RawImage> }> = [];
  for (const codePx of [Infinity, 320, 240, 160]) {
    const factor = codeSide / codePx;
    if (codePx !== Infinity && factor <= 1) continue;
    for (const sigma of [0, 0.7]) {
      let made: Promise<RawImage> | undefined;
      const name = `${codePx === Infinity ? 'as given' : `code ~${codePx} px`}${sigma ? `, blur σ${sigma}` : ''}`;
      views.push({
        name,
        image: () =>
          (made ??= (async () => {
            let pipeline = sharp(png).removeAlpha();
            if (factor > 1) pipeline = pipeline.resize(Math.round(width! / factor));
            if (sigma > 0) pipeline = pipeline.blur(sigma);
            const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
            return { data, width: info.width, height: info.height, channels: info.channels as 3 };
          })()),
      });
    }
  }
  const read = async (decode: (image: RawImage) => Promise<string[]>): Promise<RefereeReading> => {
    for (const view of views) {
      const texts = await decode(await view.image());
      if (texts.length > 0) return { texts, view: view.name };
    }
    return { texts: [] };
  };
  return { zbar: await read(zbarDecode), opencv: await read(opencvDecode) };
}

/** A webhook delivery as its receiver can interpret it: checked signature, id, status in the body. */
export interface WebhookSeen {
  id: string;
  status: string;
  body: string;
  data: any;
}

/** Verifies each delivery's Standard Webhooks signature (throws if one is bad) and parses it. */
export function parseWebhooks(received: readonly ReceivedWebhook[]): WebhookSeen[] {
  const verifier = new Webhook(TEST_SECRET);
  return received.map((hook) => {
    const payload = verifier.verify(hook.body, hook.headers) as { data: { status: string } };
    return { id: hook.headers['webhook-id']!, status: payload.data.status, body: hook.body, data: payload.data };
  });
}

/**
 * What a receiver that deduplicates by webhook-id keeps: one entry per id, in first-arrival
 * order. Throws when one id arrives with different bodies (a retry must repeat the delivery).
 */
export function dedupeWebhooks(seen: readonly WebhookSeen[]): WebhookSeen[] {
  const byId = new Map<string, WebhookSeen>();
  for (const hook of seen) {
    const first = byId.get(hook.id);
    if (!first) byId.set(hook.id, hook);
    else if (first.body !== hook.body) throw new Error(`webhook-id ${hook.id} arrived twice with different bodies`);
  }
  return [...byId.values()];
}

/**
 * Every status event stored for one prediction, in stream order (what the workers published,
 * after JetStream's msg-id dedup). Reads the events stream message by message: the test streams
 * are small, and this needs nothing newer than the nats-server the tests run.
 */
export async function statusEventsOf(jsm: JetStreamManager, predictionId: string): Promise<{ status: string; at: string; workerId: string; images?: string[] }[]> {
  const subject = subjects.event(predictionId);
  const { state } = await jsm.streams.info(STREAMS.events);
  const events: { status: string; at: string; workerId: string; images?: string[] }[] = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const msg = await jsm.streams.getMessage(STREAMS.events, { seq }).catch(() => null);
    if (msg?.subject === subject) events.push(msg.json());
  }
  return events;
}
