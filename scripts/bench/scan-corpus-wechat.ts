/**
 * An optional third referee for the scan-check bench: OpenCV's WeChatQRCode (the decoder of
 * the WeChat app, ZXing-derived, with several binarizers and scales) run without its neural
 * detector and super-resolution models, which is the "phone-grade decoder" published scan
 * rates for QR art are measured with. It comes from Debian's python3-opencv (`apt-get install
 * python3-opencv`), not from npm, so the bench uses it only where it is installed and says so.
 * One long-lived python process; images go over stdin as a JSON header line and raw pixels.
 */
import { spawnSync } from 'node:child_process';
import type { RawImage } from '../../src/image/raw.ts';
import { LineProcess } from './line-process.ts';

const PYTHON = '/usr/bin/python3';

const SOURCE = `
import sys, json, numpy as np, cv2
detector = cv2.wechat_qrcode_WeChatQRCode()
stdin = sys.stdin.buffer
while True:
    line = stdin.readline()
    if not line:
        break
    head = json.loads(line)
    w, h, c = head['width'], head['height'], head['channels']
    buf = stdin.read(w * h * c)
    img = np.frombuffer(buf, dtype=np.uint8).reshape((h, w, c)) if c > 1 else np.frombuffer(buf, dtype=np.uint8).reshape((h, w))
    if c == 3:
        img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    elif c == 4:
        img = cv2.cvtColor(img, cv2.COLOR_RGBA2BGR)
    texts, _ = detector.detectAndDecode(img)
    sys.stdout.write(json.dumps([t for t in texts if t]) + '\\n')
    sys.stdout.flush()
`;

export function wechatAvailable(): boolean {
  const probe = spawnSync(PYTHON, ['-c', 'import cv2; cv2.wechat_qrcode_WeChatQRCode()'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** A running WeChatQRCode process; decode() calls are queued one at a time. */
export class WechatReferee {
  private readonly process = new LineProcess(PYTHON, ['-c', SOURCE], 'wechat');

  async decode(image: RawImage): Promise<string[]> {
    const { width, height, channels } = image;
    return JSON.parse(await this.process.request(JSON.stringify({ width, height, channels }), image.data)) as string[];
  }

  close(): void {
    this.process.close();
  }
}
