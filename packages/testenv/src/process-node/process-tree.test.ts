import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { isProcessAlive } from '../managed-process.js';
import { waitFor } from '../wait-for.js';
import { openFreezer } from './cgroup-freezer.js';
import {
  CONTAINER_RUN_VARIABLE,
  crashProcessTrees,
  killMarked,
  killProcessTrees,
  markedProcesses,
  parseStat,
  processTree,
  readProcessTable,
  stillRunning,
} from './process-tree.js';

const p = (pid: number, ppid: number, pgid = pid) => ({ pid, ppid, pgid });

/** Root on a machine with the cgroup v1 freezer or cgroup v2: a freezer must be made there. */
const freezerExpected =
  process.getuid?.() === 0 &&
  [
    '/sys/fs/cgroup/freezer/cgroup.procs',
    '/sys/fs/cgroup/cgroup.controllers',
    '/sys/fs/cgroup/unified/cgroup.procs',
  ].some((file) => existsSync(file));

/** The state letter and user CPU ticks of `pid` (fields 3 and 14 of /proc/<pid>/stat). */
function stat(pid: number): { state: string; utime: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return { state: fields[0] ?? '?', utime: Number(fields[11]) };
}

describe('openFreezer', () => {
  it('stops a busy process at once, and removes its cgroup once the process is killed', async (t) => {
    const freezer = openFreezer();
    if (!freezerExpected) {
      assert.equal(freezer, undefined, 'no freezer without root and a cgroup freezer');
      return;
    }
    assert.ok(freezer, 'root with a cgroup freezer gets one');
    const busy = spawn('/bin/sh', ['-c', 'while :; do :; done'], { detached: true, stdio: 'ignore' });
    const exited = once(busy, 'exit');
    const pid = busy.pid ?? -1;
    t.after(() => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
      freezer.release();
    });
    assert.ok(freezer.move(pid), 'the process moves in');
    assert.equal(stat(pid).state, 'R', 'it runs on after the move');
    assert.ok(freezer.freeze(), 'the kernel reports the cgroup frozen');
    const frozen = stat(pid);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A frozen task never runs: its CPU time cannot grow, however idle the machine.
    assert.deepEqual(stat(pid), frozen, 'no CPU time while frozen');
    assert.equal(frozen.state, 'D', 'frozen tasks show as uninterruptible');
    process.kill(pid, 'SIGKILL');
    freezer.release();
    const [, signal] = (await exited) as [number | null, string | null];
    assert.equal(signal, 'SIGKILL', 'the kill lands once thawed');
    await waitFor('the crash cgroup to be removed', async () => !existsSync(freezer.path));
  });
});

describe('processTree', () => {
  it('takes the roots and all their descendants, however deep, and nothing else', () => {
    const table = [p(1, 0), p(10, 1), p(11, 10, 10), p(12, 11, 12), p(13, 12, 13), p(20, 1), p(21, 20, 20), p(30, 1)];
    assert.deepEqual([...processTree(table, [10])].sort(), [10, 11, 12, 13]);
    assert.deepEqual([...processTree(table, [10, 20])].sort(), [10, 11, 12, 13, 20, 21]);
    assert.deepEqual([...processTree(table, [99])], [], 'a root that is gone: nothing');
  });

  it("takes the members of a root's process group after the root exited, and their descendants", () => {
    // The container's first process (10) is gone: its postmaster (11) was re-parented to 1 but keeps group 10.
    const table = [p(1, 0), p(11, 1, 10), p(12, 11, 12), p(13, 1, 13)];
    assert.deepEqual([...processTree(table, [10])].sort(), [11, 12]);
  });

  it('tolerates missing parents and parent cycles (a table read while processes come and go)', () => {
    const table = [p(5, 4), p(4, 5), p(6, 777), p(10, 1), p(11, 10, 10), p(12, 12, 12)];
    assert.deepEqual([...processTree(table, [10])].sort(), [10, 11]);
    assert.deepEqual([...processTree(table, [4])].sort(), [4, 5], 'a cycle through a root');
  });
});

describe('parseStat', () => {
  it('counts fields from the last parenthesis, as the command name may hold spaces and parentheses', () => {
    assert.deepEqual(parseStat('4242 (postgres: a) (b) ) S 4200 4100 4100 0 -1 4194560 0'), p(4242, 4200, 4100));
    assert.deepEqual(parseStat('7 (sleep) R 1 7 7 0'), p(7, 1, 7), 'no start time: none given');
    const full = '8 (x) S 1 8 8 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 50';
    assert.deepEqual(parseStat(full), { ...p(8, 1, 8), start: 123456 }, 'field 22 is the start time');
    assert.equal(parseStat('garbage'), undefined);
  });

  it('reads this process from /proc', () => {
    const self = readProcessTable().find((entry) => entry.pid === process.pid);
    assert.equal(self?.ppid, process.ppid);
    assert.ok(Number.isInteger(self?.start));
  });
});

describe('stillRunning', () => {
  it('keeps a process only while the same one holds its PID', () => {
    const self = readProcessTable().find((entry) => entry.pid === process.pid);
    assert.ok(self?.start !== undefined);
    assert.deepEqual(stillRunning([self]), [process.pid]);
    assert.deepEqual(stillRunning([{ ...self, start: self.start + 1 }]), [], 'another process with the same PID');
    assert.deepEqual(stillRunning([{ ...self, start: undefined }]), [], 'unknown start time: not trusted');
    assert.deepEqual(stillRunning([p(2 ** 22 + 1, 1)]), [], 'no such process');
  });
});

/**
 * A container's first process (its own group) whose child runs `command` in a session of its own,
 * as a postmaster's backends do; resolves once that session exists.
 */
async function containerWithEscapedChild(
  command: string,
): Promise<{ exited: Promise<unknown>; escaped: number; pid: number }> {
  const container = spawn(
    '/bin/sh',
    ['-c', `/bin/sh -c "setsid ${command} </dev/null >/dev/null 2>&1 & echo \\$!; wait"; wait`],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const exited = once(container, 'exit');
  const [line] = (await once(container.stdout, 'data')) as [Buffer];
  const escaped = Number(line.toString().trim());
  const pid = container.pid ?? -1;
  if (!(escaped > 1)) {
    killOnly([-pid]);
    assert.fail(`the escaped process's PID, not ${JSON.stringify(line.toString())}`);
  }
  try {
    await waitFor('the escaped process in its own session', async () => {
      const entry = readProcessTable().find((e) => e.pid === escaped);
      return entry !== undefined && entry.pgid === escaped;
    });
  } catch (error) {
    killOnly([-pid, escaped]);
    throw error;
  }
  return { exited, escaped, pid };
}

/** SIGKILLs each target (a PID, or a process group as -PGID), never this process's own group or init. */
function killOnly(targets: readonly number[]): void {
  for (const target of targets) {
    if (!Number.isInteger(target) || Math.abs(target) <= 1) continue;
    try {
      process.kill(target, 'SIGKILL');
    } catch {}
  }
}

/** Gone, a zombie, or with SIGKILL pending: in every case it never runs again. */
function doomed(pid: number): boolean {
  if (!isProcessAlive(pid)) return true;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const pending = [...status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm)].map((m) => BigInt(`0x${m[1]}`));
    return pending.some((mask) => (mask & (1n << 8n)) !== 0n); // bit 8 is signal 9, SIGKILL
  } catch {
    return true;
  }
}

describe('killProcessTrees', () => {
  it('kills a descendant that left the process group for a session of its own, as PostgreSQL backends do', async () => {
    // container (sh, own group) -> sh (same group) -> sleep in a new session, like agent -> postmaster -> backend.
    const { exited, escaped, pid } = await containerWithEscapedChild('sleep 600');
    try {
      assert.ok(processTree(readProcessTable(), [pid]).has(escaped), 'found as a descendant');
      const unrelated = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
      try {
        const killed = killProcessTrees([pid]);
        assert.ok(killed.includes(escaped));
        assert.ok(doomed(escaped), 'the escaped process is killed with the rest, before killProcessTrees returns');
        assert.ok(doomed(pid));
        assert.ok(isProcessAlive(unrelated.pid ?? -1), 'an unrelated process is left alone');
      } finally {
        unrelated.kill('SIGKILL');
      }
      await exited;
      await waitFor('the escaped process to be gone', async () => !isProcessAlive(escaped));
    } finally {
      // Only if the test failed before the kill.
      killOnly([-pid, escaped]);
    }
  });

  it('crashes a tree, escaped sessions included, with every process frozen at one instant where it can', async () => {
    // As a postmaster and a backend: the backend in a session of its own, busy.
    const { exited, escaped, pid } = await containerWithEscapedChild("/bin/sh -c 'while :; do :; done'");
    try {
      const { killed, frozenBy } = crashProcessTrees([pid]);
      assert.equal(frozenBy === 'signals', !freezerExpected, `frozen by ${frozenBy}`);
      assert.ok(killed.includes(escaped));
      await exited;
      await waitFor('the escaped process to be gone', async () => !isProcessAlive(escaped));
      // The crash's own cgroup goes once its processes are dead (v1 freezer here; v2 under the root).
      const crashCgroups = () =>
        ['/sys/fs/cgroup/freezer', '/sys/fs/cgroup'].flatMap((dir) =>
          existsSync(dir) ? readdirSync(dir).filter((name) => name.startsWith(`kanri-crash-${process.pid}-`)) : [],
        );
      await waitFor('the crash cgroups to be removed', async () => crashCgroups().length === 0);
    } finally {
      killOnly([-pid, escaped]);
    }
  });

  it('does nothing without roots', () => {
    assert.deepEqual(crashProcessTrees([]), { killed: [], frozenBy: 'signals' });
    assert.deepEqual(killProcessTrees([]), []);
    assert.deepEqual(killProcessTrees([0, 1, -5]), []);
  });
});

describe('markedProcesses', () => {
  it('finds a daemon that double-forked out of the tree by its marker, and kills it by PID', async () => {
    const marker = `test-${process.pid}-${Date.now()}`;
    // The shell starts a session leader in the background and exits: the daemon's parent is gone.
    const shell = spawn('sh', ['-c', 'setsid sleep 60 >/dev/null 2>&1 < /dev/null &'], {
      env: { ...process.env, [CONTAINER_RUN_VARIABLE]: marker },
      stdio: 'ignore',
    });
    await once(shell, 'exit');
    // The daemon (setsid may fork once more, so not necessarily the PID the shell saw).
    const found = await waitFor(
      'the daemon to be found',
      async () => {
        // Until setsid's fork has exec'd, the marked child is still called setsid.
        const pids = markedProcesses(marker);
        const daemons = pids.length > 0 && pids.every((pid) => commandOf(pid).startsWith('sleep'));
        return daemons ? pids : undefined;
      },
      5_000,
      50,
    );
    assert.deepEqual(markedProcesses(`${marker}-other`), []);
    assert.deepEqual(killMarked(marker).sort(), [...found].sort());
    await waitFor(
      'the daemon to exit',
      async () => (found.every((pid) => !isProcessAlive(pid)) ? true : undefined),
      5_000,
      50,
    );
  });
});

/** A process's command line, or '' once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}
