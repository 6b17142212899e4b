/**
 * What "a phone reads" is approximated by in the scan-check bench: decoders we did not write
 * (ZBar and OpenCV from test/helpers/independent-decoders.ts, and WeChat's decoder where
 * Debian's python3-opencv is installed), on the image as given and on camera-like views of
 * it (resized by sharp so the code spans ~320, 240 and 160 px, each as is and after a light
 * blur), as test/qr/scan-referees.test.ts does: a phone never sees a file's pixels one to one.
 */
import sharp from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { opencvDecode, zbarDecode } from '../../test/helpers/independent-decoders.ts';
import { wechatAvailable, WechatReferee } from './scan-corpus-wechat.ts';

export type Referee = 'zbar' | 'opencv' | 'wechat';

export interface RefereeReads {
  /** Per referee: read the exact content on the image as given / on the image or any view. */
  readonly given: Readonly<Partial<Record<Referee, boolean>>>;
  readonly anyView: Readonly<Partial<Record<Referee, boolean>>>;
  /** Texts other than the content that a referee read (a corpus problem if ever non-empty). */
  readonly other: readonly string[];
}

function views(image: RawImage, codeSide: number): Array<() => Promise<RawImage>> {
  const out: Array<() => Promise<RawImage>> = [async () => image];
  for (const codePx of [320, 240, 160]) {
    const factor = codeSide / codePx;
    if (factor <= 1) continue;
    const width = Math.round(image.width / factor);
    for (const sigma of [0, 0.7]) {
      out.push(async () => {
        let pipeline = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } }).resize(width);
        if (sigma > 0) pipeline = pipeline.blur(sigma);
        const { data, info } = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
        return rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, 3);
      });
    }
  }
  return out;
}

export class Referees {
  private readonly wechat = wechatAvailable() ? new WechatReferee() : undefined;

  names(): Referee[] {
    return this.wechat ? ['zbar', 'opencv', 'wechat'] : ['zbar', 'opencv'];
  }

  async read(image: RawImage, codeSide: number, expected: string): Promise<RefereeReads> {
    const seen = views(image, codeSide);
    const made = new Map<number, Promise<RawImage>>();
    const view = (i: number) => made.get(i) ?? (made.set(i, seen[i]!()), made.get(i)!);
    const decode: Record<Referee, (image: RawImage) => Promise<string[]>> = {
      zbar: zbarDecode,
      opencv: opencvDecode,
      wechat: (i) => this.wechat!.decode(i),
    };
    const given: Partial<Record<Referee, boolean>> = {};
    const anyView: Partial<Record<Referee, boolean>> = {};
    const other: string[] = [];
    for (const name of this.names()) {
      anyView[name] = false;
      for (let i = 0; i < seen.length; i++) {
        const texts = await decode[name](await view(i));
        other.push(...texts.filter((t) => t !== expected));
        const read = texts.includes(expected);
        if (i === 0) given[name] = read;
        if (texts.length > 0) {
          anyView[name] = read;
          break;
        }
      }
    }
    return { given, anyView, other };
  }

  close(): void {
    this.wechat?.close();
  }
}
