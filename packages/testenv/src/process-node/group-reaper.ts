/**
 * Makes sure no container process outlives the test process.
 *
 * Each container runs in its own process group, started through `setpriv --pdeathsig KILL`, so
 * its first process dies with us. Processes it started itself (postgres under an agent) have no
 * such signal; the kubelet would end them with the container's cgroup. Here a tiny shell watchdog
 * plays that part: we tell it (over a pipe) each group that starts and ends, and when the pipe
 * closes, because this process exited in any way, even SIGKILL, it kills every group left.
 * A normal exit also kills them, with their descendants outside the groups, synchronously in an
 * 'exit' handler.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { killProcessTrees } from './process-tree.js';

const WATCHDOG = `
trap '' INT TERM HUP
groups=''
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups \${line#+}" ;;
    -*) g=\${line#-}; rest=''; for x in $groups; do [ "$x" = "$g" ] || rest="$rest $x"; done; groups=$rest ;;
  esac
done
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
`;

const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    killProcessTrees([...liveGroups]);
  });
}

/** Sends `signal` to every process in the group; false if the group is gone. */
export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

export class GroupReaper {
  readonly #watchdog: ChildProcess;

  constructor() {
    installExitHook();
    // Detached: its own session, so a Ctrl-C aimed at the test's process group does not end it first.
    this.#watchdog = spawn('/bin/sh', ['-c', WATCHDOG], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    this.#watchdog.unref();
    this.#watchdog.stdin?.on('error', () => {});
    (this.#watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }

  get pid(): number | undefined {
    return this.#watchdog.pid;
  }

  add(pgid: number): void {
    liveGroups.add(pgid);
    this.#watchdog.stdin?.write(`+${pgid}\n`);
  }

  remove(pgid: number): void {
    liveGroups.delete(pgid);
    this.#watchdog.stdin?.write(`-${pgid}\n`);
  }

  /** Lets the watchdog exit (it kills any group still registered, which should be none). */
  async close(): Promise<void> {
    if (this.#watchdog.exitCode !== null || this.#watchdog.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#watchdog.once('exit', resolve));
    this.#watchdog.stdin?.end();
    await exited;
  }
}
