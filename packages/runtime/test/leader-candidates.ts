/**
 * The leader-election tests' candidates: one in this process that notes when each callback ran,
 * and one in a child process (fixtures/leader-child.ts) that can be SIGKILLed or sent SIGTERM.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { KubeClient } from '@kanri/client';
import { withParentDeathSignal } from '@kanri/testenv';
import { type LeaderElectionOptions, LeaderElector } from '../src/index.js';
import type { LeaderChildConfig } from './fixtures/leader-child.js';

export const NAMESPACE = 'leader-election';
const CHILD_SCRIPT = fileURLToPath(new URL('./fixtures/leader-child.js', import.meta.url));

export interface Timings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** Polls a synchronous probe (a candidate's fields) every 20 ms until it is truthy. */
export async function waitFor<T>(what: string, probe: () => T, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** An in-process candidate that records when (performance.now()) each callback ran. */
export class Candidate {
  readonly identity: string;
  readonly stop = new AbortController();
  readonly elector: LeaderElector;
  readonly done: Promise<void>;
  readonly newLeaders: string[] = [];
  readonly warnings: string[] = [];
  readonly startedAt = performance.now();
  ledAt: number | undefined;
  ledAtEpochMs: number | undefined;
  leadershipSignal: AbortSignal | undefined;
  abortedAt: number | undefined;
  abortedAtEpochMs: number | undefined;
  stoppedAt: number | undefined;

  constructor(
    client: KubeClient,
    name: string,
    identity: string,
    timings: Timings,
    adopt?: LeaderElectionOptions['adopt'],
    mayAcquire?: LeaderElectionOptions['mayAcquire'],
    hooks: Pick<LeaderElectionOptions, 'keepLeadingWithoutApi' | 'onLeadingUntil'> = {},
  ) {
    this.identity = identity;
    this.elector = new LeaderElector({
      client,
      namespace: NAMESPACE,
      name,
      identity,
      ...timings,
      ...(adopt ? { adopt } : {}),
      ...(mayAcquire ? { mayAcquire } : {}),
      ...hooks,
      onStartedLeading: (signal) => {
        this.ledAt = performance.now();
        this.ledAtEpochMs = Date.now();
        this.leadershipSignal = signal;
        signal.addEventListener(
          'abort',
          () => {
            this.abortedAt = performance.now();
            this.abortedAtEpochMs = Date.now();
          },
          { once: true },
        );
      },
      onStoppedLeading: () => {
        this.stoppedAt = performance.now();
      },
      onNewLeader: (leader) => this.newLeaders.push(leader),
      logger: { info() {}, warn: (_obj, msg) => this.warnings.push(msg ?? '') },
    });
    this.done = this.elector.run(this.stop.signal);
  }

  async shutdown(): Promise<void> {
    this.stop.abort();
    await this.done;
  }
}

/** A candidate in a child process (fixtures/leader-child.ts), so it can be SIGKILLed or sent SIGTERM. */
export class ChildCandidate {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exitedAt: number | undefined;

  constructor(config: LeaderChildConfig) {
    this.child = spawn(
      ...withParentDeathSignal(process.execPath, ['--enable-source-maps', CHILD_SCRIPT, JSON.stringify(config)]),
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    createInterface({ input: this.child.stdout }).on('line', (line) => this.lines.push(line));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exitedAt = performance.now();
        resolve({ code, signal });
      }),
    );
  }

  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error('the leader child did not start');
    return pid;
  }

  line(prefix: string): string | undefined {
    return this.lines.find((line) => line.startsWith(prefix));
  }
}
