/**
 * A cgroup freezer for one crash: every process moved into it stops at the same instant.
 *
 * A host that loses power stops all its processes at once. SIGSTOP reaches them one by one, and
 * PostgreSQL's backends and WAL senders are each in a session of their own, so they must be
 * signalled one at a time. Whichever stops first changes what a crash loses: a backend stopped
 * before a WAL sender hides the commit that a real power loss would lose; a WAL sender stopped
 * first lets a backend acknowledge commits it never sends. Side by side (PostgreSQL 15, an async
 * primary with two replicas, a client committing in a loop, 60 freezes each way), an idle machine
 * lost the last commit in 23 of 60 cgroup freezes and in 1 of 60 sequential ones; with two CPU
 * hogs, 1 of 60 against 7 of 60 (up to 2 commits). The kernel freezes a cgroup's tasks in one
 * pass, as a real node's power-off does (real-node/node-namespace.ts).
 *
 * Needs root and either the cgroup v1 freezer or cgroup v2; without them `openFreezer` returns
 * undefined and the caller freezes by signal, as before.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const V1_ROOT = '/sys/fs/cgroup/freezer';
/** Long enough for a task in uninterruptible sleep (an fsync) to finish it and freeze. */
const FREEZE_TIMEOUT_MS = 2_000;
/** How long to keep trying to remove the cgroup while its killed tasks exit. */
const REMOVE_TIMEOUT_MS = 5_000;

let created = 0;

/** One cgroup, made for one crash and removed after it. */
export interface CrashFreezer {
  /** `v1` (the freezer controller) or `v2` (cgroup.freeze). */
  readonly version: 'v1' | 'v2';
  readonly path: string;
  /** Moves `pid` in; false if it could not be moved (gone, say). Moved processes keep running. */
  move(pid: number): boolean;
  /** Stops every process in it at once; true once the kernel reports them all frozen. */
  freeze(): boolean;
  /** Lets the (killed) processes run on, so that they die, and removes the cgroup once empty. */
  release(): void;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The cgroup v2 directory of this process, where a child may be made (hybrid or unified hierarchy). */
function v2Base(): string | undefined {
  const mount = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? '/sys/fs/cgroup'
    : existsSync('/sys/fs/cgroup/unified/cgroup.procs')
      ? '/sys/fs/cgroup/unified'
      : undefined;
  if (!mount) return undefined;
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    return line ? join(mount, line.slice(3)) : undefined;
  } catch {
    return undefined;
  }
}

function makeFreezer(version: 'v1' | 'v2', base: string): CrashFreezer | undefined {
  const path = join(base, `kanri-crash-${process.pid}-${++created}`);
  try {
    mkdirSync(path);
  } catch {
    return undefined;
  }
  const stateFile = join(path, version === 'v1' ? 'freezer.state' : 'cgroup.freeze');
  const frozen = () =>
    version === 'v1'
      ? readFileSync(stateFile, 'utf8').trim() === 'FROZEN'
      : /^frozen 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'utf8'));
  const remove = (deadline: number) => {
    try {
      rmdirSync(path);
    } catch {
      // Killed tasks still exiting: try again shortly, without holding up the crash.
      if (Date.now() < deadline) setTimeout(() => remove(deadline), 20).unref();
    }
  };
  return {
    version,
    path,
    move(pid) {
      try {
        writeFileSync(join(path, 'cgroup.procs'), String(pid));
        return true;
      } catch {
        return false;
      }
    },
    freeze() {
      try {
        writeFileSync(stateFile, version === 'v1' ? 'FROZEN' : '1');
        const deadline = performance.now() + FREEZE_TIMEOUT_MS;
        while (!frozen()) {
          if (performance.now() > deadline) return false;
          sleepSync(1);
        }
        return true;
      } catch {
        return false;
      }
    },
    release() {
      try {
        writeFileSync(stateFile, version === 'v1' ? 'THAWED' : '0');
      } catch {
        // Removed already, or never frozen.
      }
      remove(Date.now() + REMOVE_TIMEOUT_MS);
    },
  };
}

/**
 * A fresh freezer cgroup, or undefined where none can be made (not root, no cgroup freezer).
 * The v1 freezer is preferred: moving a process into it leaves its other controllers (cpu,
 * memory) as they were.
 *
 * @example
 * ```ts
 * const freezer = openFreezer();
 * if (freezer) {
 *   for (const pid of pids) freezer.move(pid);
 *   freezer.freeze();            // all stop at one instant
 *   for (const pid of pids) process.kill(pid, 'SIGKILL');
 *   freezer.release();           // they die, and the cgroup goes
 * }
 * ```
 */
export function openFreezer(): CrashFreezer | undefined {
  if (existsSync(join(V1_ROOT, 'cgroup.procs'))) {
    const freezer = makeFreezer('v1', V1_ROOT);
    if (freezer) return freezer;
  }
  const base = v2Base();
  return base ? makeFreezer('v2', base) : undefined;
}
