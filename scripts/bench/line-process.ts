/**
 * A long-lived decoder process for the bench's optional referees (WeChat's decoder in python,
 * Java ZXing): each request writes a header line and raw bytes to its stdin and gets back one
 * line of stdout. Requests are queued, one at a time.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';

export class LineProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: Array<(line: string) => void> = [];
  private chain: Promise<unknown> = Promise.resolve();

  constructor(command: string, args: readonly string[], label: string) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (chunk: Buffer) => process.stderr.write(`${label}: ${chunk.toString()}`));
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on('line', (line) => this.waiting.shift()?.(line));
  }

  /** Writes `header` (a line) and `body`, resolves with the process's next line of answer. */
  request(header: string, body: Uint8Array): Promise<string> {
    const run = this.chain.then(
      () =>
        new Promise<string>((resolve) => {
          this.waiting.push(resolve);
          this.child.stdin.write(`${header}\n`);
          this.child.stdin.write(body);
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
