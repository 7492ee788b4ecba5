/**
 * The postmaster as the agent's child. Guarantees: it is started with a parent-death signal, so it
 * shuts down (immediate mode) if the agent dies however it dies; while wanted, an unexpected exit is
 * followed by a restart with exponential backoff (1 s doubling to 30 s, reset after a minute of
 * running); `stop()` resolves only once the postmaster has exited.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Backoff, sleepUnlessAborted } from '@kanri/timing';
import { forEachLine, withParentDeathSignal } from './commands.js';
import type { Logger } from './logger.js';

export type StopMode = 'fast' | 'immediate';

export interface PostgresProcessOptions {
  readonly pgBin: string;
  readonly pgdata: string;
  readonly log: Logger;
  /** Called after each unexpected exit (for metrics). */
  readonly onCrash?: () => void;
  /** Sees every line postgres logs. */
  readonly onLine?: (line: string) => void;
}

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
const STABLE_AFTER_MS = 60_000;
const SEVERE = /\b(ERROR|FATAL|PANIC):/;

export class PostgresProcess {
  readonly #options: PostgresProcessOptions;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #supervisor: AbortController | undefined;
  #supervising: Promise<void> = Promise.resolve();

  constructor(options: PostgresProcessOptions) {
    this.#options = options;
  }

  /** The postmaster runs now. */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /** The agent wants it running (it may be between a crash and its restart). */
  get wanted(): boolean {
    return this.#supervisor !== undefined;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the postmaster (and keeps it running) unless it is already wanted. */
  start(): void {
    if (this.#supervisor) return;
    const supervisor = new AbortController();
    this.#supervisor = supervisor;
    this.#supervising = this.#supervise(supervisor.signal);
  }

  /** SIGHUP: postgres re-reads its configuration files. False if it is not running. */
  reload(): boolean {
    return this.#child?.kill('SIGHUP') ?? false;
  }

  /**
   * Stops it and does not restart it. `fast` (SIGINT) disconnects clients and checkpoints; after
   * `timeoutMs` it escalates to immediate (SIGQUIT), then to SIGKILL.
   */
  async stop(mode: StopMode = 'fast', timeoutMs = 30_000): Promise<void> {
    this.#supervisor?.abort();
    this.#supervisor = undefined;
    const child = this.#child;
    if (child) {
      const exited = this.#exited;
      child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
      if (!(await settles(exited, timeoutMs))) {
        this.#options.log.warn({ timeoutMs }, 'postgres did not stop in time; immediate shutdown');
        child.kill('SIGQUIT');
        if (!(await settles(exited, 10_000))) child.kill('SIGKILL');
      }
      await exited;
    }
    await this.#supervising;
  }

  async #supervise(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ initialMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS, jitter: 0 });
    while (!signal.aborted) {
      const startedAt = performance.now();
      const { code, signal: bySignal } = await this.#runOnce();
      if (signal.aborted) return;
      this.#options.onCrash?.();
      if (performance.now() - startedAt > STABLE_AFTER_MS) backoff.reset();
      const restartInMs = backoff.next();
      this.#options.log.error({ code, signal: bySignal, restartInMs }, 'postgres exited unexpectedly');
      await sleepUnlessAborted(restartInMs, signal);
    }
  }

  #runOnce(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const { pgBin, pgdata, log } = this.#options;
    // SIGQUIT on the agent's death: postgres's immediate shutdown, which takes its own children down too.
    const [file, args] = withParentDeathSignal(join(pgBin, 'postgres'), ['-D', pgdata], 'QUIT');
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const onLine = (line: string) => {
      if (!line.trim()) return;
      this.#options.onLine?.(line);
      if (SEVERE.test(line)) log.warn(line);
      else log.info(line);
    };
    forEachLine(child.stdout, onLine);
    forEachLine(child.stderr, onLine);
    log.info({ pid: child.pid }, 'postgres started');
    const result = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('error', (error) => {
        log.error({ err: error }, 'postgres could not be started');
        this.#child = undefined;
        resolve({ code: 127, signal: null });
      });
      child.once('close', (code, signal) => {
        if (this.#child === child) this.#child = undefined;
        log.info({ code, signal }, 'postgres exited');
        resolve({ code, signal });
      });
    });
    this.#exited = result.then(() => undefined);
    return result;
  }
}

async function settles(promise: Promise<void>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([promise.then(() => true), sleepUnlessAborted(ms, timer.signal).then(() => false)]);
  } finally {
    timer.abort();
  }
}
