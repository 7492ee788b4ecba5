/**
 * The postmaster as the keeper's child. It is started with a parent-death signal (SIGQUIT: an
 * immediate shutdown, which takes its backends down too) for the keeper's own death, and without
 * the agent's secrets in its environment. It lives across agent restarts: only the keeper's exit
 * or an explicit request ends it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { sleepUnlessAborted } from '@kanri/timing';
import { forEachLine, withParentDeathSignal } from '../commands.js';
import type { PostmasterSignal } from './protocol.js';

export interface PostmasterEvents {
  onLine(pid: number, line: string): void;
  onExit(pid: number, code: number | null, signal: string | null): void;
}

/** After SIGQUIT, the time given before SIGKILL: a postmaster that ignores an immediate shutdown is hung. */
const KILL_AFTER_MS = 2_000;

export class Postmaster {
  readonly #events: PostmasterEvents;
  readonly #env: NodeJS.ProcessEnv;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();

  /** `env` is what postgres (and the archive command it runs) sees: no secret may be in it. */
  constructor(env: NodeJS.ProcessEnv, events: PostmasterEvents) {
    this.#env = env;
    this.#events = events;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts `command` unless a postmaster runs; the PID, or an error saying why it could not start. */
  start(command: string, args: readonly string[]): number | Error {
    if (this.#child?.pid !== undefined) return this.#child.pid;
    const [file, argv] = withParentDeathSignal(command, args, 'QUIT');
    const child = spawn(file, argv, { env: this.#env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Without a listener a failed spawn would throw; its outcome is read from the PID and 'close'.
    child.once('error', () => undefined);
    const pid = child.pid;
    if (pid === undefined) {
      return new Error(`${command} could not be started`);
    }
    this.#child = child;
    const onLine = (line: string) => {
      if (line.trim()) this.#events.onLine(pid, line);
    };
    forEachLine(child.stdout, onLine);
    forEachLine(child.stderr, onLine);
    this.#exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        if (this.#child === child) this.#child = undefined;
        this.#events.onExit(pid, code, signal);
        resolve();
      });
    });
    return pid;
  }

  /** `signal` to the postmaster `pid`, if that one still runs. */
  signal(pid: number, signal: PostmasterSignal): boolean {
    if (this.#child?.pid !== pid) return false;
    return this.#child.kill(signal);
  }

  /**
   * Stops it now: `first` (SIGQUIT, immediate shutdown; SIGINT, fast), SIGKILL if it has not exited
   * after `killAfterMs` (SIGKILL of the postmaster alone would leave backends serving, so it comes
   * last). Resolves once it has exited.
   */
  async stop(first: 'SIGQUIT' | 'SIGINT', killAfterMs = KILL_AFTER_MS): Promise<void> {
    const child = this.#child;
    if (!child) return;
    const exited = this.#exited;
    child.kill(first);
    const timer = new AbortController();
    const inTime = await Promise.race([
      exited.then(() => true),
      sleepUnlessAborted(killAfterMs, timer.signal).then(() => false),
    ]);
    timer.abort();
    if (!inTime) child.kill('SIGKILL');
    await exited;
  }
}
