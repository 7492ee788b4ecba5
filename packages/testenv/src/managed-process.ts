/**
 * A child process that testenv owns: logged to a file, stopped by PID, and never outliving us.
 *
 * Guarantees: `stop()` sends SIGTERM, escalates to SIGKILL after a grace period and resolves
 * only once the process has exited. If this Node process exits normally the children are
 * killed synchronously; if it is killed outright, Linux's parent-death signal (set through
 * util-linux `setpriv --pdeathsig`) kills them.
 * Caveats: without `setpriv` (non-Linux), a SIGKILLed parent can leave children behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { errnoCode } from './errno.js';

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface StartProcessOptions {
  /** Component name, used in errors. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** stdout and stderr are appended here. */
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/**
 * `command args` wrapped so that the process gets SIGKILL when this one dies, even by SIGKILL
 * (Linux's parent-death signal, through util-linux `setpriv`, which execs: the PID is the
 * command's own). Unwrapped where there is no `setpriv`. For a child a test spawns itself (an
 * operator, a fixture) that must not outlive a test file the runner killed on its timeout.
 *
 * @example
 * ```ts
 * const child = spawn(...withParentDeathSignal(process.execPath, ['operator.js']), { stdio: 'inherit' });
 * ```
 */
export function withParentDeathSignal(command: string, args: readonly string[]): [string, string[]] {
  return SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
}
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a kill is, waiting is not possible here.
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** Reads the last `lines` lines of a file, or '' if it cannot be read. */
export async function tailFile(path: string, lines = 30): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    const { size } = await handle.stat();
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  } finally {
    await handle?.close();
  }
}

export class ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves when the process has exited, whoever ended it. */
  readonly exited: Promise<ExitStatus>;
  #status: ExitStatus | undefined;
  readonly #child: ChildProcess;

  constructor(options: StartProcessOptions) {
    installExitHook();
    this.name = options.name;
    this.logFile = options.logFile;
    const [command, args] = withParentDeathSignal(options.command, options.args);
    const log = openSync(options.logFile, 'a');
    try {
      this.#child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['ignore', log, log],
      });
    } finally {
      closeSync(log);
    }
    live.add(this.#child);
    this.exited = new Promise((resolve) => {
      const done = (status: ExitStatus) => {
        live.delete(this.#child);
        this.#status ??= status;
        resolve(this.#status);
      };
      this.#child.once('exit', (code, signal) => done({ code, signal }));
      // A spawn failure (missing binary) emits 'error' and no 'exit'.
      this.#child.once('error', () => done({ code: 127, signal: null }));
    });
    if (this.#child.pid === undefined) {
      // Spawn failed synchronously (e.g. ENOENT); the 'error' event settles `exited`.
      this.pid = -1;
    } else {
      this.pid = this.#child.pid;
    }
  }

  /** The exit status, or undefined while running. */
  get exitStatus(): ExitStatus | undefined {
    return this.#status;
  }

  get running(): boolean {
    return this.#status === undefined && this.pid > 0;
  }

  logTail(lines = 30): Promise<string> {
    return tailFile(this.logFile, lines);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 10_000): Promise<ExitStatus> {
    if (!this.running) return this.exited;
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export function startProcess(options: StartProcessOptions): ManagedProcess {
  return new ManagedProcess(options);
}

/** True if a process with this PID exists and is not a zombie (an exited child nobody has reaped yet). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (errnoCode(error) !== 'EPERM') return false;
  }
  try {
    // Field 3 of /proc/<pid>/stat is the state; the command name before it may hold spaces, so split after ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}
