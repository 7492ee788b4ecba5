/**
 * The postmaster, run by the keeper (keeper/keeper.ts) on the agent's behalf, so that it outlives
 * a crashed agent and is stopped by the keeper's watchdog if a leading agent stalls. Guarantees:
 * while wanted, an unexpected exit is followed by a restart, at once the first time (every moment
 * of a primary's downtime counts) and then with exponential backoff (1 s doubling to 30 s, reset
 * after a minute of running); `stop()` resolves only once the postmaster has exited. A restarted
 * agent attaches to the postmaster the keeper kept running, and may adopt it.
 */
import { join } from 'node:path';
import { Backoff, sleepUnlessAborted } from '@kanri/timing';
import type { KeeperLink } from '../keeper/keeper-link.js';
import type { WatchdogStatus } from '../keeper/protocol.js';
import type { Logger } from '../log/logger.js';

export type StopMode = 'fast' | 'immediate';

export interface PostgresProcessOptions {
  readonly keeper: KeeperLink;
  readonly pgBin: string;
  readonly pgdata: string;
  readonly log: Logger;
  /**
   * Called after each unexpected exit, with the postmaster's last lines. Some refusals to start
   * (max_connections below the reserved connections, say) are written without a FATAL prefix,
   * so they are the only account of why it exited.
   */
  readonly onCrash?: (lastLines: readonly string[]) => void;
  /** Sees every line postgres logs. */
  readonly onLine?: (line: string) => void;
}

interface Exit {
  readonly code: number | null;
  readonly signal: string | null;
  /** The keeper refused to start it (the watchdog fired), with its reason. */
  readonly refused?: string;
}

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
const STABLE_AFTER_MS = 60_000;
const SEVERE = /\b(ERROR|FATAL|PANIC):/;
/** Lines kept of the running postmaster's log, for `onCrash`. */
const LAST_LINES = 5;
/** Exits remembered for postmasters not (yet) waited for: an exit can arrive before its start's answer resolves. */
const REMEMBERED_EXITS = 16;

export class PostgresProcess {
  readonly #options: PostgresProcessOptions;
  #pid: number | undefined;
  readonly #exits = new Map<number, Exit>();
  readonly #waiters = new Map<number, ((exit: Exit) => void)[]>();
  #starting: Promise<unknown> = Promise.resolve();
  #supervisor: AbortController | undefined;
  #supervising: Promise<void> = Promise.resolve();
  #watchdogOwner: object | undefined;
  #lastLines: string[] = [];

  constructor(options: PostgresProcessOptions) {
    this.#options = options;
    const { keeper, log } = options;
    keeper.listen({
      onRunning: (pid) => {
        // A PID seen again is a new postmaster that reuses it: its predecessor's exit is not its own.
        if (pid !== undefined) this.#exits.delete(pid);
        if (pid !== undefined && pid !== this.#pid) this.#lastLines = [];
        this.#pid = pid;
      },
      onLine: (_pid, line) => {
        options.onLine?.(line);
        this.#lastLines.push(line);
        if (this.#lastLines.length > LAST_LINES) this.#lastLines.shift();
        if (SEVERE.test(line)) log.warn(line);
        else log.info(line);
      },
      onExit: (pid, code, signal) => {
        if (this.#pid === pid) this.#pid = undefined;
        log.info({ pid, code, signal }, 'postgres exited');
        this.#exited(pid, { code, signal });
      },
      onFired: (pid, lateMs) =>
        log.error(
          { pid: pid ?? null, lateMs: Math.round(lateMs) },
          'WATCHDOG: the keeper stopped postgres: this agent did not renew its leadership in time (was it stalled?)',
        ),
    });
  }

  /** The postmaster runs now. */
  get running(): boolean {
    return this.#pid !== undefined;
  }

  /** The agent wants it running (it may be between a crash and its restart). */
  get wanted(): boolean {
    return this.#supervisor !== undefined;
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  /** Asks the keeper what runs: a postmaster left by the previous agent is `running`, not yet `wanted`. */
  async attach(): Promise<{ running: boolean; watchdog: WatchdogStatus }> {
    const { pid, watchdog } = await this.#options.keeper.hello();
    return { running: pid !== undefined, watchdog };
  }

  /** Keeps the running postmaster (see attach) as if started here: wanted, restarted if it exits. */
  adopt(): void {
    const pid = this.#pid;
    if (this.#supervisor || pid === undefined) return;
    this.#options.log.info({ pid }, 'adopting the running postgres');
    this.#supervise(pid);
  }

  /** Starts the postmaster (and keeps it running) unless it is already wanted. */
  start(): void {
    if (!this.#supervisor) this.#supervise(undefined);
  }

  /** SIGHUP: postgres re-reads its configuration files. False if it is not running. */
  reload(): boolean {
    if (this.#pid === undefined) return false;
    this.#options.keeper.signal(this.#pid, 'SIGHUP');
    return true;
  }

  /**
   * Stops it and does not restart it. `fast` (SIGINT) disconnects clients and checkpoints; after
   * `timeoutMs` it escalates to immediate (SIGQUIT), then to SIGKILL.
   */
  async stop(mode: StopMode = 'fast', timeoutMs = 30_000): Promise<void> {
    this.#supervisor?.abort();
    this.#supervisor = undefined;
    // A start in flight has a PID only once the keeper answers.
    await this.#starting;
    const pid = this.#pid;
    if (pid !== undefined) {
      const { keeper, log } = this.#options;
      const exited = this.#waitExit(pid);
      keeper.signal(pid, mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
      if (!(await settles(exited, timeoutMs))) {
        log.warn({ timeoutMs }, 'postgres did not stop in time; immediate shutdown');
        keeper.signal(pid, 'SIGQUIT');
        if (!(await settles(exited, 10_000))) keeper.signal(pid, 'SIGKILL');
      }
      await exited;
    }
    await this.#supervising;
  }

  /**
   * Feeds the keeper's watchdog: unless fed again before `deadlineMs` (a `performance.now()`), the
   * keeper stops postgres. `leadership` names the leadership feeding it, for `disarmWatchdog`.
   */
  feedWatchdog(deadlineMs: number, leadership: object): void {
    this.#watchdogOwner = leadership;
    this.#options.keeper.arm(deadlineMs);
  }

  /**
   * No deadline any more. With `leadership`, only if that leadership fed it last: a leadership that
   * ended must not disarm the next one, which may have begun before the last one finished stopping.
   */
  disarmWatchdog(leadership?: object): void {
    if (leadership && leadership !== this.#watchdogOwner) return;
    this.#watchdogOwner = undefined;
    this.#options.keeper.disarm();
  }

  #supervise(adopted: number | undefined): void {
    const supervisor = new AbortController();
    this.#supervisor = supervisor;
    this.#supervising = this.#loop(supervisor.signal, adopted);
  }

  async #loop(signal: AbortSignal, adopted: number | undefined): Promise<void> {
    const { log, onCrash } = this.#options;
    const backoff = new Backoff({ initialMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS, jitter: 0 });
    let inARow = 0;
    let first: number | undefined = adopted;
    while (!signal.aborted) {
      const startedAt = performance.now();
      const exit = first !== undefined ? await this.#waitExit(first) : await this.#runOnce(signal);
      first = undefined;
      if (signal.aborted) return;
      if (!exit.refused) onCrash?.(this.#lastLines);
      if (performance.now() - startedAt > STABLE_AFTER_MS) {
        backoff.reset();
        inARow = 0;
      }
      const restartInMs = inARow++ === 0 ? 0 : backoff.next();
      if (exit.refused) log.error({ reason: exit.refused, retryInMs: restartInMs }, 'postgres may not start now');
      else log.error({ code: exit.code, signal: exit.signal, restartInMs }, 'postgres exited unexpectedly');
      await sleepUnlessAborted(restartInMs, signal);
    }
  }

  async #runOnce(signal: AbortSignal): Promise<Exit> {
    const { keeper, pgBin, pgdata, log } = this.#options;
    const starting = keeper.start(join(pgBin, 'postgres'), ['-D', pgdata]);
    this.#starting = starting;
    const answer = await starting;
    if ('refused' in answer) return { code: null, signal: null, refused: answer.refused };
    const { pid } = answer;
    log.info({ pid }, 'postgres started');
    // A stop() that came while the start was in flight finds the PID now and stops it.
    if (signal.aborted) return { code: null, signal: null };
    return this.#waitExit(pid);
  }

  #waitExit(pid: number): Promise<Exit> {
    const known = this.#exits.get(pid);
    if (known) return Promise.resolve(known);
    if (this.#pid !== pid) return Promise.resolve({ code: null, signal: null });
    return new Promise((resolve) => {
      this.#waiters.set(pid, [...(this.#waiters.get(pid) ?? []), resolve]);
    });
  }

  #exited(pid: number, exit: Exit): void {
    this.#exits.set(pid, exit);
    if (this.#exits.size > REMEMBERED_EXITS) this.#exits.delete(this.#exits.keys().next().value as number);
    for (const resolve of this.#waiters.get(pid) ?? []) resolve(exit);
    this.#waiters.delete(pid);
  }
}

async function settles(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([promise.then(() => true), sleepUnlessAborted(ms, timer.signal).then(() => false)]);
  } finally {
    timer.abort();
  }
}
