// Helpers for the memory measurements: reading a process's RSS from /proc, the run's metadata,
// and the median. RSS is read from /proc/<pid>/status (VmRSS now, VmHWM the peak), never from
// getrusage, whose ru_maxrss carries a parent's peak over exec.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

const ROOT = new URL('../../', import.meta.url);
export const REPO_ROOT = ROOT.pathname;

/**
 * Memory of a live process in bytes, or undefined once it is gone: `rss` (VmRSS) and its peak `hwm`
 * (VmHWM); `pss` (each shared page divided among the processes that map it) and `private` (pages no
 * other process maps) from smaps_rollup, since RSS counts the whole interpreter binary in every
 * process that runs it.
 */
export function memoryOf(pid = 'self') {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (text, field) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
    return {
      rss: kb(status, 'VmRSS'),
      hwm: kb(status, 'VmHWM'),
      pss: kb(rollup, 'Pss'),
      private: kb(rollup, 'Private_Clean') + kb(rollup, 'Private_Dirty'),
    };
  } catch {
    return undefined;
  }
}

export { median } from '../../scripts/bench-stats.mjs';
export const toMiB = (bytes) => (bytes == null ? null : Math.round((bytes / 2 ** 20) * 10) / 10);

/** What every result line carries, so that figures from different runs can be compared. */
export function runMetadata() {
  let commit = null;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {}
  return {
    commit,
    node: process.version,
    cores: availableParallelism(),
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
    at: new Date().toISOString(),
  };
}
