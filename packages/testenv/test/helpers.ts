/** Shared helpers for testenv's integration tests. */
import type { ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';

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

/** The first line a fixture child prints on stdout (its report), or undefined if it exits first. */
export async function firstLine(child: ChildProcess): Promise<string | undefined> {
  if (!child.stdout) throw new Error('the child has no stdout pipe');
  const next = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  return next.done ? undefined : next.value;
}
