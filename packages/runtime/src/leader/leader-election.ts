/**
 * Leader election on a coordination.k8s.io/v1 Lease, by client-go's rules (expiry judged on the local
 * clock, a renew deadline, release on cancel), plus a watch on the Lease so that candidates take over
 * the moment a leader releases it rather than at their next poll.
 */
import { AlreadyExistsError, ConflictError, NotFoundError, type ResourceClient } from '@kanri/client';
import { sleepUnlessAborted, Wakeup } from '@kanri/timing';
import { AcquireGate } from './acquire-gate.js';
import { callSafely, withinBudget } from './bounded-call.js';
import { DEFAULT_ELECTION_TIMINGS, electionTimingProblems, jittered, settledWithin } from './election-timings.js';
import type { LeaderElectionLogger, LeaderElectionOptions } from './leader-election-options.js';
import { LeaseFollower } from './lease-follower.js';
import {
  expiresAtMs,
  holderSpec,
  judgeLease,
  type Lease,
  type Observation,
  observe,
  recordOf,
  withSpec,
} from './lease-record.js';
import { releaseLease } from './lease-writes.js';

/** `acquired`: we hold the Lease now; `lost`: someone else holds it; `failed`: the API did not let us find out. */
type Attempt = 'acquired' | 'lost' | 'failed';

const silentLogger: LeaderElectionLogger = { info() {}, warn() {} };

/** Monotonic, so expiry and deadlines are immune to wall-clock steps (NTP, manual changes). */
const monotonicNow = (): number => performance.now();

/**
 * Campaigns for a Lease and, while holding it, renews it; runs `onStartedLeading` for as long as it leads.
 *
 * Expiry is judged as client-go does: by the local time at which this candidate last saw the Lease
 * record change, plus the holder's leaseDurationSeconds; never by comparing the server's renewTime
 * with the local clock. Non-leaders poll every retryPeriod (jittered) and also watch the Lease, so a
 * release is acted on within one round trip. On abort, a leader releases the Lease before `run` resolves.
 *
 * This is not fencing: a leader that is paused longer than the lease duration may act after another
 * candidate took over. Keep `renewDeadlineMs` comfortably below `leaseDurationMs`.
 *
 * @example
 * ```ts
 * import { hostname } from 'node:os';
 * import { KubeClient } from '@kanri/client';
 * import { LeaderElector } from '@kanri/runtime';
 *
 * const client = await KubeClient.load();
 * const elector = new LeaderElector({
 *   client,
 *   namespace: 'operators',
 *   name: 'postgres-operator',
 *   identity: `${hostname()}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`,
 *   onStartedLeading: async (signal) => runControllers(signal),
 *   onStoppedLeading: () => console.log('no longer leading'),
 * });
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * await elector.run(stop.signal); // releases the Lease on SIGTERM, so a standby takes over at once
 * ```
 */
export class LeaderElector {
  readonly #options: LeaderElectionOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #leaseDurationSeconds: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #log: LeaderElectionLogger;
  readonly #context: { readonly lease: string; readonly identity: string };
  readonly #gate: AcquireGate;
  #observation: Observation | undefined;
  /** The Lease as our last successful write left it: renewals and the release write over it directly. */
  #ownLease: Lease | undefined;
  #leading = false;
  #reportedLeader: string | undefined;
  #running = false;

  constructor(options: LeaderElectionOptions) {
    const leaseDurationMs = options.leaseDurationMs ?? DEFAULT_ELECTION_TIMINGS.leaseDurationMs;
    const renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_ELECTION_TIMINGS.renewDeadlineMs;
    const retryPeriodMs = options.retryPeriodMs ?? DEFAULT_ELECTION_TIMINGS.retryPeriodMs;
    const [problem] = electionTimingProblems({ leaseDurationMs, renewDeadlineMs, retryPeriodMs });
    if (problem) throw new RangeError(problem);
    if (!options.identity) throw new RangeError('identity must not be empty');
    this.#options = options;
    this.#leases = options.client.resource('coordination.k8s.io/v1', 'Lease');
    // Rounded up: others judge our lease by the seconds written, which must not be shorter than we assume.
    this.#leaseDurationSeconds = Math.ceil(leaseDurationMs / 1_000);
    this.#renewDeadlineMs = renewDeadlineMs;
    this.#retryPeriodMs = retryPeriodMs;
    this.#log = options.logger ?? silentLogger;
    this.#context = { lease: `${options.namespace}/${options.name}`, identity: options.identity };
    this.#gate = new AcquireGate(options.mayAcquire, this.#log, this.#context);
  }

  /** True from a successful acquire until leadership is lost or released (the moment the leader's signal aborts). */
  get isLeader(): boolean {
    return this.#leading;
  }

  /** The holder this candidate last observed; undefined when the Lease is free or not yet seen. */
  get leader(): string | undefined {
    return this.#observation?.record.holderIdentity || undefined;
  }

  /**
   * Campaigns, leads, and campaigns again after losing leadership, until `signal` aborts. API errors are
   * logged and retried, never thrown. On abort while leading, the leader signal aborts, `onStartedLeading`'s
   * promise is given until the renew deadline to settle, the Lease is released, and only then does this resolve.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`LeaderElector for ${this.#context.lease} is already running`);
    this.#running = true;
    try {
      let adopted = this.#adopt();
      while (!signal.aborted) {
        const acquiredAtMs = adopted ?? (await this.#campaign(signal));
        adopted = undefined;
        if (acquiredAtMs === undefined) return;
        await this.#lead(signal, acquiredAtMs);
      }
    } finally {
      this.#running = false;
    }
  }

  /** The `adopt` option's send time, once its Lease is taken as our own write; undefined without one. */
  #adopt(): number | undefined {
    const adopt = this.#options.adopt;
    if (!adopt || recordOf(adopt.lease).holderIdentity !== this.#options.identity) return undefined;
    this.#wrote({ ...adopt.lease, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
    this.#log.info(this.#context, 'adopted the lease written by this candidate');
    return adopt.sentAtMs;
  }

  /** Resolves with the local time at which the winning write was sent, or undefined on abort. */
  async #campaign(signal: AbortSignal): Promise<number | undefined> {
    this.#log.info(this.#context, 'campaigning for the lease');
    const wakeup = new Wakeup();
    // The watch only makes a release (or a deletion) felt at once; the poll below is what decides.
    const follower = new LeaseFollower({
      client: this.#options.client,
      namespace: this.#options.namespace,
      name: this.#options.name,
      onError: (error, retryInMs) =>
        this.#log.warn({ ...this.#context, err: error, retryInMs }, 'watch on the lease failed; polling goes on'),
    });
    const unsubscribe = follower.onChange((view) => {
      if (!view.lease) {
        this.#observation = undefined;
        this.#reportedLeader = undefined;
        wakeup.wake();
        return;
      }
      this.#see(view.lease);
      if (recordOf(view.lease).holderIdentity === '') wakeup.wake();
    });
    follower.start();
    try {
      while (!signal.aborted) {
        const startedAt = monotonicNow();
        const attempt = await this.#attempt('campaign', signal, this.#renewDeadlineMs);
        if (attempt === 'acquired') return startedAt;
        await this.#waitForChance(wakeup, signal);
      }
      return undefined;
    } finally {
      unsubscribe();
      await follower.stop();
    }
  }

  /**
   * Waits for the next poll (retryPeriod, jittered), the watch seeing a release, or the observed
   * holder's lease running out, whichever comes first. Waking at expiry means a dead leader is replaced
   * about leaseDuration after its last renewal, not up to 2.2 retry periods later.
   */
  async #waitForChance(wakeup: Wakeup, signal: AbortSignal): Promise<void> {
    const pollAt = monotonicNow() + jittered(this.#retryPeriodMs);
    for (;;) {
      const now = monotonicNow();
      if (signal.aborted || now >= pollAt) return;
      const seen = this.#observation;
      // Only a lease still held can run out later; a free or expired one that we just failed to take waits for the poll.
      const expiry =
        seen && judgeLease(seen, this.#options.identity, now) === 'held' ? expiresAtMs(seen) : Number.POSITIVE_INFINITY;
      if (await wakeup.wait(Math.min(pollAt, expiry) - now, signal)) return;
      const after = this.#observation;
      if (after && judgeLease(after, this.#options.identity, monotonicNow()) === 'expired') return;
    }
  }

  /** Holds the Lease: renews every retryPeriod until the renew deadline passes, the Lease is lost, or `signal` aborts. */
  async #lead(signal: AbortSignal, acquiredAtMs: number): Promise<void> {
    const leadership = new AbortController();
    this.#leading = true;
    this.#log.info(this.#context, 'became leader');
    const work = callSafely(() => this.#options.onStartedLeading?.(leadership.signal), this.#threw('onStartedLeading'));
    // Counted from when the last successful write was sent: the server stored it some time after that,
    // so no other candidate can have started its expiry clock earlier.
    let renewedAtMs = acquiredAtMs;
    this.#leadingUntil(renewedAtMs);
    // With vouching, the peers are asked once per renew deadline, this long before it ends.
    const reserve = this.#options.keepLeadingWithoutApi
      ? Math.min(this.#retryPeriodMs, (this.#renewDeadlineMs - this.#retryPeriodMs) / 2)
      : 0;
    let askedFor: number | undefined;
    let lostBecause: string | undefined;
    while (!signal.aborted && lostBecause === undefined) {
      await sleepUnlessAborted(this.#retryPeriodMs, signal);
      while (!signal.aborted) {
        const remaining = renewedAtMs + this.#renewDeadlineMs - monotonicNow();
        if (remaining <= 0) {
          lostBecause = `no successful renew within renewDeadline (${this.#renewDeadlineMs} ms)`;
          break;
        }
        // Only reached after a failed renewal: a successful one leaves more than the reserve.
        if (reserve > 0 && remaining <= reserve && askedFor !== renewedAtMs) {
          askedFor = renewedAtMs;
          const askedAt = monotonicNow();
          if (await this.#vouched(signal, remaining)) {
            renewedAtMs = askedAt;
            this.#leadingUntil(renewedAtMs);
          }
          continue;
        }
        const startedAt = monotonicNow();
        // Neither a hung request nor the pause after it may eat the reserve before the peers are asked.
        const keep = askedFor === renewedAtMs ? 0 : reserve;
        const attempt = await this.#attempt('renew', signal, remaining - keep);
        if (attempt === 'acquired') {
          renewedAtMs = startedAt;
          this.#leadingUntil(renewedAtMs);
          break;
        }
        if (attempt === 'lost') {
          lostBecause = `the lease is now held by ${this.leader ?? 'nobody'}`;
          break;
        }
        await sleepUnlessAborted(
          Math.min(this.#retryPeriodMs, renewedAtMs + this.#renewDeadlineMs - keep - monotonicNow()),
          signal,
        );
      }
    }
    this.#leading = false;
    leadership.abort();
    if (lostBecause !== undefined) {
      this.#ownLease = undefined;
      this.#log.warn({ ...this.#context, reason: lostBecause }, 'stopped leading');
    } else {
      // Releasing before the work has stopped would let a successor overlap with it; past the renew
      // deadline we would have stepped down anyway, so that bounds the wait.
      await settledWithin(work, renewedAtMs + this.#renewDeadlineMs - monotonicNow());
      await this.#release();
    }
    void callSafely(() => this.#options.onStoppedLeading?.(), this.#threw('onStoppedLeading'));
  }

  #threw(callback: string): (error: unknown) => void {
    return (error) => this.#log.warn({ ...this.#context, err: error }, `${callback} failed`);
  }

  /** One try, bounded by `budgetMs` (see bounded-call.ts). */
  #attempt(mode: 'campaign' | 'renew', signal: AbortSignal, budgetMs: number): Promise<Attempt> {
    // A hung API server answers nothing, so the timeout's warning is the only trace of it.
    return withinBudget(
      budgetMs,
      signal,
      (bounded) => this.#tryAcquireOrRenew(mode, bounded),
      'failed',
      (budget) => this.#log.warn({ ...this.#context, budgetMs: budget }, `${mode} attempt timed out`),
    );
  }

  /** Asks `keepLeadingWithoutApi` within the time left; anything but a timely true is a no. */
  async #vouched(signal: AbortSignal, budgetMs: number): Promise<boolean> {
    const ask = this.#options.keepLeadingWithoutApi;
    if (!ask) return false;
    const call = (bounded: AbortSignal) => ask(bounded).catch((error: unknown) => void this.#threw('vouching')(error));
    const kept = await withinBudget<boolean | undefined>(budgetMs, signal, call, false, (budget) =>
      this.#log.warn({ ...this.#context, budgetMs: budget }, 'keepLeadingWithoutApi timed out'),
    );
    if (kept) this.#log.warn(this.#context, 'the API server cannot be reached; leading on, vouched for');
    return kept === true;
  }

  #leadingUntil(renewedAtMs: number): void {
    void callSafely(
      () => this.#options.onLeadingUntil?.(renewedAtMs + this.#renewDeadlineMs),
      this.#threw('onLeadingUntil'),
    );
  }

  async #tryAcquireOrRenew(mode: 'campaign' | 'renew', signal: AbortSignal): Promise<Attempt> {
    const { identity, name, namespace } = this.#options;
    const own = this.#ownLease;
    if (mode === 'renew' && own) {
      // Fast path: write over our own last write. A conflict (someone else touched the Lease) or a
      // deleted Lease sends us down the slow path to look; anything else is the API failing.
      try {
        const spec = holderSpec(recordOf(own), identity, this.#leaseDurationSeconds, new Date());
        this.#wrote(await this.#leases.update(withSpec(own, spec), { signal }));
        return 'acquired';
      } catch (error) {
        if (!(error instanceof ConflictError || error instanceof NotFoundError))
          return this.#failed(error, signal, 'cannot renew the lease');
      }
    }

    let current: Lease;
    try {
      current = await this.#leases.get(name, { namespace, signal });
    } catch (error) {
      if (!(error instanceof NotFoundError)) return this.#failed(error, signal, 'cannot read the lease');
      if (await this.#gate.refuses(undefined)) return 'lost';
      try {
        const spec = holderSpec(undefined, identity, this.#leaseDurationSeconds, new Date());
        const metadata = { ...this.#options.leaseMetadata?.(), name, namespace };
        this.#wrote(await this.#leases.create({ metadata, spec }, { signal }));
        return 'acquired';
      } catch (createError) {
        if (createError instanceof AlreadyExistsError) return 'lost';
        return this.#failed(createError, signal, 'cannot create the lease');
      }
    }

    const seen = this.#see(current);
    const verdict = judgeLease(seen, identity, monotonicNow());
    // A leader that finds another holder, even an expired one, has been replaced at some point: step down.
    if (verdict === 'held' || (mode === 'renew' && verdict !== 'ours')) return 'lost';
    if (verdict !== 'ours' && (await this.#gate.refuses(current))) return 'lost';
    try {
      const spec = holderSpec(seen.record, identity, this.#leaseDurationSeconds, new Date());
      this.#wrote(await this.#leases.update(withSpec(current, spec), { signal }));
      if (verdict === 'expired')
        this.#log.info({ ...this.#context, from: seen.record.holderIdentity }, 'took over an expired lease');
      return 'acquired';
    } catch (error) {
      // Another candidate won the race (or the holder renewed) between our read and our write.
      if (error instanceof ConflictError) return mode === 'campaign' ? 'lost' : 'failed';
      return this.#failed(error, signal, 'cannot update the lease');
    }
  }

  #failed(error: unknown, signal: AbortSignal, message: string): Attempt {
    // An abort is our own time budget (logged by #attempt) or a shutdown, not an API failure.
    if (!signal.aborted) this.#log.warn({ ...this.#context, err: error }, message);
    return 'failed';
  }

  #wrote(lease: Lease): void {
    this.#ownLease = lease;
    this.#see(lease);
  }

  /** Folds a Lease read or written into the observation, and reports a new holder. */
  #see(lease: Lease): Observation {
    const seen = observe(this.#observation, lease, monotonicNow());
    this.#observation = seen;
    const holder = seen.record.holderIdentity;
    if (holder === '') {
      // After a release, whoever takes the Lease next is news, even the same holder again.
      this.#reportedLeader = undefined;
      return seen;
    }
    if (holder === this.#reportedLeader) return seen;
    this.#reportedLeader = holder;
    this.#log.info({ ...this.#context, leader: holder }, 'new leader observed');
    void callSafely(() => this.#options.onNewLeader?.(holder), this.#threw('onNewLeader'));
    return seen;
  }

  /**
   * Gives the Lease up as client-go's ReleaseOnCancel does (no holder, one-second duration), so the
   * candidates' watches fire and one takes over at once. Best effort: if it fails, the Lease expires.
   */
  async #release(): Promise<void> {
    const own = this.#ownLease;
    this.#ownLease = undefined;
    if (!own) return;
    const { client, identity, name, namespace } = this.#options;
    try {
      const released = await releaseLease(
        { client, namespace, name },
        own,
        identity,
        AbortSignal.timeout(this.#renewDeadlineMs),
      );
      if (released) {
        this.#see(released);
        this.#log.info(this.#context, 'released the lease');
      }
    } catch (error) {
      this.#log.warn({ ...this.#context, err: error }, 'cannot release the lease; it will expire instead');
    }
  }
}
