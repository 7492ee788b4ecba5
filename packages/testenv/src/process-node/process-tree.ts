/**
 * Every process a container started, found through /proc, and a kill of all of them at once.
 *
 * A process group is not enough to end a container: a program may start processes in a session
 * of its own (PostgreSQL's postmaster calls setsid() for each backend), and these outlive a kill
 * of the group. A container runtime kills the whole cgroup; without cgroups we follow parent links
 * instead, which must be read before anything dies (an orphan is re-parented and cannot be traced
 * back). So the tree is frozen first (SIGSTOP: nothing forks, writes or answers a client any more),
 * rescanned until it stops growing, and only then SIGKILLed. A crash freezes it with a cgroup
 * freezer where it can, so that every process stops at the same instant (cgroup-freezer.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { type CrashFreezer, openFreezer } from './cgroup-freezer.js';

/** One line of the process table: what a tree walk needs. */
export interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  /** Process group ID. */
  readonly pgid: number;
  /** Start time after boot, in clock ticks: with `pid`, it tells a process from a later one reusing its PID. */
  readonly start?: number;
}

/**
 * The processes of `entries` that belong to a root: a root itself, a member of a root's process
 * group (the group of a container outlives its first process), and every descendant of either.
 * Tolerates parents missing from `entries` and parent cycles (a table read while processes come
 * and go). Pure.
 *
 * @example
 * ```ts
 * const tree = processTree(
 *   [{ pid: 10, ppid: 1, pgid: 10 }, { pid: 11, ppid: 10, pgid: 11 }, { pid: 12, ppid: 1, pgid: 12 }],
 *   [10],
 * ); // Set { 10, 11 }
 * ```
 */
export function processTree(entries: readonly ProcessEntry[], roots: Iterable<number>): Set<number> {
  const rootSet = new Set(roots);
  const byPid = new Map(entries.map((entry) => [entry.pid, entry]));
  const inTree = new Map<number, boolean>();
  for (const entry of entries) {
    const path: number[] = [];
    const onPath = new Set<number>();
    let current: ProcessEntry | undefined = entry;
    let result = false;
    while (current) {
      const known = inTree.get(current.pid);
      if (known !== undefined) {
        result = known;
        break;
      }
      if (rootSet.has(current.pid) || rootSet.has(current.pgid)) {
        result = true;
        path.push(current.pid);
        break;
      }
      if (onPath.has(current.pid)) break;
      path.push(current.pid);
      onPath.add(current.pid);
      current = current.ppid > 0 && current.ppid !== current.pid ? byPid.get(current.ppid) : undefined;
    }
    for (const pid of path) inTree.set(pid, result);
  }
  return new Set([...inTree].filter(([, member]) => member).map(([pid]) => pid));
}

/**
 * Parses /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself contain
 * spaces and parentheses, so the fields after it are counted from the last ')'. Pure.
 */
export function parseStat(text: string): ProcessEntry | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const pid = Number.parseInt(text, 10);
  // After ") ": field 3 (state), 4 (ppid), 5 (pgrp), ... 22 (starttime).
  const fields = text
    .slice(close + 2)
    .split(' ')
    .map((field) => Number(field));
  const [ppid, pgid, start] = [fields[1], fields[2], fields[19]];
  if (!Number.isInteger(pid) || !Number.isInteger(ppid) || !Number.isInteger(pgid)) return undefined;
  return { pid, ppid: ppid as number, pgid: pgid as number, ...(Number.isInteger(start) ? { start } : {}) };
}

/** The process table from /proc; processes that vanish while it is read are left out. */
export function readProcessTable(): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    try {
      const entry = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      if (entry) entries.push(entry);
    } catch {
      // Exited since readdir.
    }
  }
  return entries;
}

/**
 * The processes of the tree of `root` that are outside its process group (in a session of their
 * own, say). Once `root` and its group are gone nothing leads to them any more, so a caller that
 * is about to let them go (a graceful stop) remembers them for `stillRunning`.
 */
export function escapedProcesses(root: number): ProcessEntry[] {
  const table = readProcessTable();
  const tree = processTree(table, [root]);
  return table.filter((entry) => tree.has(entry.pid) && entry.pgid !== root);
}

/** The PIDs of `entries` that still belong to the same processes (not exited, PID not reused). */
export function stillRunning(entries: readonly ProcessEntry[]): number[] {
  return entries.flatMap((entry) => {
    try {
      const now = parseStat(readFileSync(`/proc/${entry.pid}/stat`, 'utf8'));
      return now && entry.start !== undefined && now.start === entry.start ? [entry.pid] : [];
    } catch {
      return [];
    }
  });
}

const MAX_FREEZE_ROUNDS = 20;

function send(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // Gone already (ESRCH), or not ours to signal: either way nothing is left to stop.
  }
}

/**
 * Stops every process of the trees of `roots` (see processTree: each root is a container's first
 * process and its process group ID), then SIGKILLs them all, synchronously. Returns the PIDs
 * killed (groups aside). Only descendants of the roots are signalled, by PID, never by name.
 *
 * @example
 * ```ts
 * killProcessTrees([container.pid]); // a container's every process, escaped sessions included
 * ```
 */
export function killProcessTrees(roots: readonly number[]): number[] {
  return stopAndKill(roots, undefined).killed;
}

/** How `crashProcessTrees` stopped the processes: all at one instant, or one signal at a time. */
export type CrashFreeze = 'cgroup v1 freezer' | 'cgroup v2 freezer' | 'signals';

/**
 * As a host losing power: like killProcessTrees, but every process of the trees stops at one
 * instant (a cgroup freezer, see cgroup-freezer.ts) before any is killed, where the machine allows
 * it; otherwise by SIGSTOP, one process at a time. Says which it was.
 *
 * @example
 * ```ts
 * const { killed, frozenBy } = crashProcessTrees(containers.map((c) => c.pid));
 * ```
 */
export function crashProcessTrees(roots: readonly number[]): { killed: number[]; frozenBy: CrashFreeze } {
  return stopAndKill(roots, openFreezer());
}

function stopAndKill(
  roots: readonly number[],
  freezer: CrashFreezer | undefined,
): { killed: number[]; frozenBy: CrashFreeze } {
  const valid = roots.filter((pid) => Number.isInteger(pid) && pid > 1);
  if (valid.length === 0) {
    freezer?.release();
    return { killed: [], frozenBy: 'signals' };
  }
  let frozenBy: CrashFreeze = 'signals';
  const stopped = new Set<number>();
  for (let round = 0; round < MAX_FREEZE_ROUNDS; round++) {
    // Read before the first signal, so that the first burst of SIGSTOPs is a few microseconds long.
    const tree = processTree(readProcessTable(), valid);
    if (round === 0 && freezer) {
      // The moved processes run on until the freeze, which stops them all at once. A process
      // forked before its parent moved stays outside: the SIGSTOPs below catch it.
      for (const pid of tree) if (pid !== process.pid) freezer.move(pid);
      if (freezer.freeze()) frozenBy = freezer.version === 'v1' ? 'cgroup v1 freezer' : 'cgroup v2 freezer';
    }
    if (round === 0) for (const pgid of valid) send(-pgid, 'SIGSTOP');
    let fresh = 0;
    for (const pid of tree) {
      if (stopped.has(pid) || pid === process.pid) continue;
      send(pid, 'SIGSTOP');
      stopped.add(pid);
      fresh++;
    }
    // A process forked before its parent stopped shows up in the next read; none new means frozen.
    if (fresh === 0) break;
  }
  for (const pgid of valid) send(-pgid, 'SIGKILL');
  for (const pid of stopped) send(pid, 'SIGKILL');
  // A v1-frozen task dies of its SIGKILL only once thawed.
  freezer?.release();
  return { killed: [...stopped], frozenBy };
}

/** The environment variable that marks every process of one container run (see container-process.ts). */
export const CONTAINER_RUN_VARIABLE = 'KANRI_CONTAINER_RUN';

/**
 * The PIDs of processes that carry `marker` in their environment: a container's daemons that left
 * its process tree (a double fork into a session of their own), which only a cgroup would still
 * hold. Processes that cannot be read (gone, or not ours) are skipped.
 */
export function markedProcesses(marker: string): number[] {
  const needle = Buffer.from(`${CONTAINER_RUN_VARIABLE}=${marker}\0`);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`).includes(needle)) found.push(pid);
    } catch {
      // Exited meanwhile, or another user's: not a process of this container.
    }
  }
  return found;
}

/** SIGKILLs every process marked as `marker`'s (see markedProcesses), by PID. */
export function killMarked(marker: string): number[] {
  const pids = markedProcesses(marker);
  for (const pid of pids) send(pid, 'SIGKILL');
  return pids;
}
