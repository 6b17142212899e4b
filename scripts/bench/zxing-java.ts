/**
 * An optional referee for the scan bench: Java ZXing, the original library (Debian's
 * libzxing-core-java, `apt-get install default-jre-headless libzxing-core-java`), which phone
 * apps built on ZXing and many scan tests run. It is not independent of the verdict: the verdict's
 * `zxingjava` family is @zxing/library, its JavaScript port (same binarizer and reader), so on
 * held-out captures it says whether the verdict generalizes, as ZBar does; OpenCV is the
 * independent referee (docs/scan-repair.md). It is not on npm; the bench uses
 * it only where it is installed and says so. One long-lived JVM (ZxingJavaReferee.java, run by
 * the JDK's source launcher); images go over stdin as luminance.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { toLuma } from '../../src/image/luma.ts';
import type { RawImage } from '../../src/image/raw.ts';
import { LineProcess } from './line-process.ts';

const JAVA = 'java';
const CORE_JAR = '/usr/share/java/core.jar';
const SOURCE = fileURLToPath(new URL('./ZxingJavaReferee.java', import.meta.url));

export function zxingJavaAvailable(): boolean {
  if (!existsSync(CORE_JAR)) return false;
  return spawnSync(JAVA, ['-version'], { stdio: 'ignore' }).status === 0;
}

/** What Java ZXing read: with its default hints, and with TRY_HARDER. */
export interface ZxingJavaReads {
  readonly plain: string[];
  readonly tryHarder: string[];
}

const text = (field: string | undefined): string[] => (!field || field === '-' ? [] : [Buffer.from(field, 'base64').toString('utf8')]);

/** A running Java ZXing; decode() calls are queued one at a time. */
export class ZxingJavaReferee {
  private readonly process = new LineProcess(JAVA, ['-cp', CORE_JAR, SOURCE], 'zxing-java');

  async decode(image: RawImage): Promise<ZxingJavaReads> {
    const luma = toLuma(image);
    const [plain, tryHarder] = (await this.process.request(`${luma.width} ${luma.height}`, luma.data)).split(' ');
    return { plain: text(plain), tryHarder: text(tryHarder) };
  }

  close(): void {
    this.process.close();
  }
}
