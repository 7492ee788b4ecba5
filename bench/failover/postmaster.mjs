// Finding a member's postmaster from outside, for both systems: its PID is the first line of
// postmaster.pid in the data directory, and a PID read from a file may have been recycled, so it
// counts only while its command line is a postgres naming a path under the expected directory.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { procStat } from './processes.mjs';
import { queryOnce } from './writer.mjs';

/** The postmaster's PID from `dataDir`/postmaster.pid, or undefined. */
export function postmasterPid(dataDir) {
  try {
    return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The process group of a postmaster: Patroni's helper calls setsid and then starts postgres, so
 * the group is the helper's PID, not the postmaster's.
 */
export const processGroup = (pid) => procStat(pid)?.pgrp;

/** True if `pid` is a postgres whose command line names a path under `dir` (not a recycled PID). */
export function isPostgresOf(pid, dir) {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('postgres') && cmd.includes(dir);
  } catch {
    return false;
  }
}

/**
 * The running postmaster of the instance at `address`: its data directory as postgres itself
 * reports it, then postmaster.pid there. Works alike for every system, since each member's
 * processes share the machine's filesystem.
 */
export async function postmasterOf(address, credentials) {
  const [row] = await queryOnce(address, credentials, "select current_setting('data_directory') as dir");
  const pid = postmasterPid(row.dir);
  if (!pid || !isPostgresOf(pid, row.dir)) throw new Error(`no postmaster found for ${address} in ${row.dir}`);
  return { pid, dataDir: row.dir };
}
