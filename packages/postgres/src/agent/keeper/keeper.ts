/**
 * The keeper: the first process of an instance's container. It runs the instance agent as its
 * child, owns the postmaster on the agent's behalf, and is the agent's watchdog. Its event loop
 * does nothing else, so whatever stalls the agent (a long synchronous task, SIGSTOP, a debugger)
 * cannot stall it.
 *
 * Guarantees:
 * - The agent is restarted at once when it exits unexpectedly (then with backoff if it keeps
 *   failing); postgres runs on meanwhile, so an agent back within its renew deadline costs no write.
 * - While the agent leads, it feeds the watchdog the deadline of its leadership; if the deadline
 *   passes unfed, the postmaster is stopped (SIGQUIT, then SIGKILL) and no start is accepted until
 *   the agent renews or gives up its leadership (keeper/watchdog.ts).
 * - SIGTERM or SIGINT goes to the agent, which stops postgres and releases the Lease; the keeper
 *   then exits with the agent's code (stopping a postmaster the agent left running first).
 * - If the keeper dies, the agent (SIGKILL) and the postmaster (SIGQUIT) die with it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Backoff } from '@kanri/timing';
import { withParentDeathSignal } from '../commands.js';
import type { Logger } from '../log/logger.js';
import { Postmaster } from './postmaster.js';
import { AGENT_PROCESS_ENV, isMessage, monotonicMs, type ToAgent, type ToKeeper } from './protocol.js';
import { checkWatchdog, disarmWatchdog, feedWatchdog, IDLE, startRefusal, type WatchdogStep } from './watchdog.js';

export interface KeeperOptions {
  /** The script the agent runs (this very entrypoint, told by AGENT_PROCESS_ENV to be the agent). */
  readonly script: string;
  /** Variables postgres must not see (the agent alone needs them). */
  readonly secretVariables: readonly string[];
  readonly log: Logger;
}

/** An agent that ran this long before failing failed for a new reason: restart it at once again. */
const STABLE_AFTER_MS = 60_000;
/** A stopping agent that left postgres running: the time given to a fast shutdown before SIGKILL. */
const LEFTOVER_STOP_MS = 10_000;

/**
 * Runs the agent until it has stopped on request; resolves the exit code.
 *
 * @example
 * ```ts
 * const code = await runKeeper({ script: fileURLToPath(import.meta.url), secretVariables, log });
 * process.exit(code);
 * ```
 */
export function runKeeper(options: KeeperOptions): Promise<number> {
  return new Keeper(options).run();
}

class Keeper {
  readonly #options: KeeperOptions;
  readonly #log: Logger;
  readonly #postmaster: Postmaster;
  readonly #backoff = new Backoff({ initialMs: 1_000, maxMs: 30_000, jitter: 0 });
  #agent: ChildProcess | undefined;
  #stopping: NodeJS.Signals | undefined;
  #watchdog: WatchdogStep = { state: IDLE };
  #timer: NodeJS.Timeout | undefined;
  #finishing = false;
  #done!: (code: number) => void;

  constructor(options: KeeperOptions) {
    this.#options = options;
    this.#log = options.log;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of [...options.secretVariables, AGENT_PROCESS_ENV]) delete env[name];
    this.#postmaster = new Postmaster(env, {
      onLine: (pid, line) => {
        // Without an agent to log it, the keeper does: a crash's last lines matter most.
        if (!this.#send({ type: 'line', pid, line })) this.#log.info({ component: 'postgres', pid }, line);
      },
      onExit: (pid, code, signal) => {
        this.#log.info({ pid, code, signal }, 'postgres exited');
        this.#send({ type: 'exit', pid, code, signal });
      },
    });
  }

  run(): Promise<number> {
    const done = new Promise<number>((resolve) => {
      this.#done = resolve;
    });
    const onSignal = (signal: NodeJS.Signals) => this.#stop(signal);
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    this.#startAgent(0);
    return done;
  }

  #startAgent(crashes: number): void {
    const [file, args] = withParentDeathSignal(process.execPath, [...process.execArgv, this.#options.script], 'KILL');
    const agent = spawn(file, args, {
      env: { ...process.env, [AGENT_PROCESS_ENV]: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#agent = agent;
    const startedAt = performance.now();
    this.#log.info({ agentPid: agent.pid, postgresPid: this.#postmaster.pid ?? null }, 'agent process started');
    let attached = false;
    agent.on('message', (message: unknown) => {
      if (this.#agent !== agent || !isMessage<ToKeeper>(message)) return;
      if (message.type === 'hello') attached = true;
      this.#handle(message);
    });
    // A send to an agent that has just died fails here; its exit is handled below.
    agent.on('error', (error) => this.#log.warn({ err: error }, 'agent process error'));
    agent.once('exit', (code, signal) => {
      this.#agent = undefined;
      if (this.#stopping) {
        void this.#finish(code ?? 1);
        return;
      }
      if (!attached && this.#postmaster.pid === undefined) {
        // It failed before it started (an invalid environment, say) and there is no postgres to
        // keep: the container fails, as it did before the keeper, so the failure shows as restarts.
        this.#log.error({ code, signal }, 'the agent failed before it started; exiting');
        void this.#finish(code ?? 1);
        return;
      }
      const stable = performance.now() - startedAt > STABLE_AFTER_MS;
      if (stable) this.#backoff.reset();
      const inARow = stable ? 0 : crashes;
      // The first failure restarts at once: postgres runs on, and the watchdog deadline is near.
      const restartInMs = inARow === 0 ? 0 : this.#backoff.next();
      this.#log.error(
        { code, signal, restartInMs, postgresPid: this.#postmaster.pid ?? null, watchdog: this.#watchdog.state.kind },
        'the agent exited unexpectedly; restarting it (postgres keeps running, guarded by the watchdog)',
      );
      // A stop meanwhile has finished the keeper already (#stop without an agent).
      setTimeout(() => this.#stopping || this.#startAgent(inARow + 1), restartInMs);
    });
  }

  #handle(message: ToKeeper): void {
    switch (message.type) {
      case 'hello':
        this.#send({
          type: 'state',
          id: message.id,
          pid: this.#postmaster.pid,
          watchdog: this.#watchdog.state.kind,
        });
        return;
      case 'start': {
        const refusal = startRefusal(this.#watchdog.state, monotonicMs());
        if (refusal) {
          this.#send({ type: 'refused', id: message.id, reason: refusal });
          return;
        }
        const started = this.#postmaster.start(message.command, message.args);
        if (started instanceof Error) this.#send({ type: 'refused', id: message.id, reason: started.message });
        else this.#send({ type: 'started', id: message.id, pid: started });
        return;
      }
      case 'signal':
        this.#postmaster.signal(message.pid, message.signal);
        return;
      case 'arm':
        this.#step(feedWatchdog(this.#watchdog.state, message.untilMonotonicMs, monotonicMs()));
        return;
      case 'disarm':
        if (this.#watchdog.state.kind !== 'idle') this.#log.info('watchdog disarmed: the agent does not lead');
        this.#step(disarmWatchdog());
        return;
    }
  }

  /** Applies a watchdog step: the new state, its timer, and the stop it may call for. */
  #step(step: WatchdogStep): void {
    this.#watchdog = step;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (step.checkInMs !== undefined)
      this.#timer = setTimeout(() => this.#step(checkWatchdog(this.#watchdog.state, monotonicMs())), step.checkInMs);
    if (!step.fire) return;
    const pid = this.#postmaster.pid;
    this.#log.error(
      { postgresPid: pid ?? null, lateMs: Math.round(step.fire.lateMs), agentPid: this.#agent?.pid ?? null },
      'WATCHDOG: the agent did not renew its leadership before the deadline; stopping postgres (immediate shutdown) so that it takes no more writes',
    );
    this.#send({ type: 'fired', pid, lateMs: step.fire.lateMs });
    void this.#postmaster.stop('SIGQUIT');
  }

  #stop(signal: NodeJS.Signals): void {
    const agent = this.#agent;
    if (!this.#stopping) this.#log.info({ signal }, 'stopping');
    this.#stopping = signal;
    // Each signal is passed on: a second SIGINT from a terminal means the same to the agent.
    if (agent) agent.kill(signal);
    else void this.#finish(0);
  }

  async #finish(code: number): Promise<void> {
    if (this.#finishing) return;
    this.#finishing = true;
    clearTimeout(this.#timer);
    if (this.#postmaster.pid !== undefined) {
      this.#log.warn({ postgresPid: this.#postmaster.pid }, 'the agent left postgres running; stopping it (fast)');
      await this.#postmaster.stop('SIGINT', LEFTOVER_STOP_MS);
    }
    this.#log.info({ code }, 'keeper stopped');
    this.#done(code);
  }

  /** Sends to the current agent; false when there is none to hear it. */
  #send(message: ToAgent): boolean {
    const agent = this.#agent;
    if (!agent?.connected) return false;
    agent.send(message, (error) => {
      if (error) this.#log.debug({ err: error, type: message.type }, 'agent did not get a message');
    });
    return true;
  }
}
