import { readFile, readdir } from 'node:fs/promises';

/** The pids of live processes whose command line contains `text` (Linux /proc; a zombie's is empty). */
export async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').join(' ').includes(text)) pids.push(Number(entry));
  }
  return pids;
}
