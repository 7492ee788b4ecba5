/** Shared helpers for testenv's integration tests. */
import { readdir, readFile } from 'node:fs/promises';

export { waitFor } from '../src/wait-for.js';

/** PIDs of live processes whose command line mentions `text` (Linux /proc). */
export async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) pids.push(Number(entry));
  }
  return pids;
}
