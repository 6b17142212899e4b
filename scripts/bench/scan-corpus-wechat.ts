/**
 * An optional third referee for the scan-check bench: OpenCV's WeChatQRCode (the decoder of
 * the WeChat app, ZXing-derived, with several binarizers and scales) run without its neural
 * detector and super-resolution models, which is the "phone-grade decoder" published scan
 * rates for QR art are measured with. It comes from Debian's python3-opencv (`apt-get install
 * python3-opencv`), not from npm, so the bench uses it only where it is installed and says so.
 * One long-lived python process; images go over stdin as a JSON header line and raw pixels.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import type { RawImage } from '../../src/image/raw.ts';

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
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: Array<(texts: string[]) => void> = [];
  private chain: Promise<unknown> = Promise.resolve();

  constructor() {
    this.child = spawn(PYTHON, ['-c', SOURCE], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (chunk: Buffer) => process.stderr.write(`wechat: ${chunk.toString()}`));
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on('line', (line) => this.waiting.shift()?.(JSON.parse(line) as string[]));
  }

  decode(image: RawImage): Promise<string[]> {
    const run = this.chain.then(
      () =>
        new Promise<string[]>((resolve) => {
          this.waiting.push(resolve);
          const { width, height, channels } = image;
          this.child.stdin.write(`${JSON.stringify({ width, height, channels })}\n`);
          this.child.stdin.write(image.data);
        }),
    );
    this.chain = run;
    return run;
  }

  close(): void {
    this.child.stdin.end();
    this.lines.close();
  }
}
