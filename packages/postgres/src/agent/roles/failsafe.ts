/**
 * The failsafe mode at the edges (plan/leadership/failsafe-plan.ts decides): the primary publishing its
 * members on the Lease and asking each of them to vouch for it while the API server cannot be
 * reached, and a replica answering such a request over the peer API.
 *
 * Caveat: a replica's vouch lives in its agent's memory. An agent restarted during an outage has
 * none, and refuses to vouch (it does not follow yet), so the primary fences; but if it restarts
 * after the API server is back and before the primary renewed, nothing stops it from judging the
 * Lease expired. The primary renews within a retry period of the API server's return.
 */
import { annotateLease, holderOf, leaseExpiresAtMs } from '@kanri/runtime';
import { ANNOTATION, EVENT_REASON, type FailsafeAnswer, type FailsafeRequest } from '../../contract/index.js';
import { type AgentContext, podNames } from '../context.js';
import { leaseTimings } from '../lease-timings.js';
import { requestVouch } from '../peers/peer-failsafe.js';
import {
  decideFailsafe,
  decideVouch,
  encodeFailsafeMembers,
  type FailsafeMembers,
  type MemberAnswer,
  planMemberList,
  planVouchRound,
  readFailsafeMembers,
} from '../plan/leadership/failsafe-plan.js';

/**
 * One leadership's failsafe mode, for the LeaderElector's `keepLeadingWithoutApi` and
 * `onLeadingUntil` hooks: logs and records an Event when the primary enters it and when a renewal
 * ends it. The spec is read at each question, so turning the mode off takes effect at once.
 *
 * @example
 * ```ts
 * const failsafe = new PrimaryFailsafe(ctx);
 * new LeaderElector({ ..., keepLeadingWithoutApi: (s) => failsafe.keepLeading(s), onLeadingUntil: () => failsafe.leadingUntil() });
 * ```
 */
export class PrimaryFailsafe {
  readonly #ctx: AgentContext;
  #since: { readonly atMs: number; readonly at: Date } | undefined;
  #vouches = 0;
  /** The elector reports the extension just granted through onLeadingUntil: that one is no renewal. */
  #extending = false;
  /** A vouch round is under way: its members were fixed when it began. */
  #asking = false;
  /** Member lists sent to the Lease (null: the removal) whose write has not been seen to land. */
  #unconfirmed: (FailsafeMembers | null)[] = [];
  /** Why the members did not vouch, when that is why this leadership ended. */
  refusal: string | undefined;

  constructor(ctx: AgentContext) {
    this.#ctx = ctx;
  }

  /** Asks every other member it published at once (planVouchRound); true only if each one vouched (decideFailsafe). */
  async keepLeading(signal: AbortSignal): Promise<boolean> {
    const { config, view, log, events } = this.#ctx;
    if (!view.ha.failsafeMode) {
      this.refusal = 'failsafe mode is off';
      return false;
    }
    if (!view.podsSynced) {
      // Without the full member list, "every member" could be nobody.
      this.refusal = "the cluster's Pods were never listed";
      return false;
    }
    // The members it published, not the Pods it sees: an instance it never published may not take over.
    const round = planVouchRound({
      self: config.podName,
      published: readFailsafeMembers(view.lease.view?.lease?.metadata?.annotations),
      unconfirmed: this.#unconfirmed,
    });
    if ('refuse' in round) {
      this.refusal = round.refuse;
      log.error({ decision: round.refuse }, 'FAILSAFE: the API server cannot be reached and no member may vouch');
      return false;
    }
    this.#asking = true;
    let answers: MemberAnswer[];
    try {
      answers = await Promise.all(round.ask.map((name) => this.#ask(name, signal)));
    } finally {
      this.#asking = false;
    }
    const decision = decideFailsafe(answers);
    if (!decision.keep) {
      this.refusal = decision.message;
      log.error(
        { decision: decision.message },
        'FAILSAFE: the API server cannot be reached and not every member vouched for this primary',
      );
      return false;
    }
    this.refusal = undefined;
    this.#vouches++;
    this.#extending = true;
    if (this.#since === undefined) {
      this.#since = { atMs: performance.now(), at: new Date() };
      log.warn(
        { decision: decision.message },
        'FAILSAFE: the API server cannot be reached; every member vouched for this primary, which keeps taking writes',
      );
      // Best effort: it reaches the API server only if the client's retries outlast the outage.
      events.record(
        'Warning',
        EVENT_REASON.failsafe,
        `${config.podName} cannot renew the leader Lease (the API server cannot be reached) and runs on in failsafe mode: ${decision.message}`,
      );
    } else log.info({ decision: decision.message, vouches: this.#vouches }, 'failsafe: vouched for again');
    return true;
  }

  async #ask(name: string, signal: AbortSignal): Promise<MemberAnswer> {
    const ip = this.#ctx.view.pod(name)?.status?.podIP;
    if (!ip) return { name, answer: undefined, problem: 'no Pod with an IP by that name' };
    const got = await requestVouch(this.#ctx.peers, { name, ip }, { leader: this.#ctx.config.podName }, signal);
    return 'answer' in got ? { name, answer: got.answer } : { name, answer: undefined, problem: got.problem };
  }

  /**
   * Publishes the members on the Lease when they changed (planMemberList), from the primary's
   * periodic tasks. A write whose outcome is unknown counts as maybe landed: its members are asked
   * too, until a later write lands over it.
   */
  async publishMembers(signal: AbortSignal): Promise<void> {
    const { config, view, log } = this.#ctx;
    const change = planMemberList({
      self: config.podName,
      failsafeMode: view.ha.failsafeMode,
      podsSynced: view.podsSynced,
      pods: podNames(this.#ctx),
      published: readFailsafeMembers(view.lease.view?.lease?.metadata?.annotations),
      leadingOnVouches: this.#since !== undefined || this.#asking,
    });
    if (!change) return;
    this.#unconfirmed.push(change.write);
    let written: Awaited<ReturnType<typeof annotateLease>>;
    try {
      written = await annotateLease(
        this.#ctx.leaseRef,
        { [ANNOTATION.failsafeMembers]: change.write && encodeFailsafeMembers(change.write) },
        { onlyIfHolder: config.podName, signal },
      );
    } catch (error) {
      if (!signal.aborted) log.warn({ err: error }, 'cannot publish the failsafe member list on the Lease; retrying');
      return;
    }
    if (!written) return;
    // Landed: an earlier write still in flight carries an older version, which the API server refuses.
    this.#unconfirmed = [];
    view.lease.see(written);
    log.info({ members: change.write?.members ?? null }, 'failsafe member list published on the Lease');
  }

  /** Each acquire, renewal or extension: one that is not the extension just granted ends the failsafe run. */
  leadingUntil(): void {
    if (this.#extending) {
      this.#extending = false;
      return;
    }
    this.refusal = undefined;
    const since = this.#since;
    if (since === undefined) return;
    const { config, log, events } = this.#ctx;
    const seconds = ((performance.now() - since.atMs) / 1000).toFixed(1);
    log.info({ seconds: Number(seconds), vouches: this.#vouches }, 'FAILSAFE over: the leader Lease was renewed');
    events.record(
      'Normal',
      EVENT_REASON.failsafeEnded,
      `${config.podName} renewed the leader Lease again after ${seconds} s in failsafe mode (since ${since.at.toISOString()}, vouched for ${this.#vouches} times by every other member)`,
    );
    this.#since = undefined;
    this.#vouches = 0;
  }
}

/**
 * A replica's answer to a primary that asks it to vouch (`POST /failsafe`). An accepted request is
 * remembered (AgentState.vouch): the replica then follows that holder for a lease duration, however
 * expired its Lease looks (plan/leadership/replica-plan.ts, plan/leadership/failover-plan.ts).
 *
 * @example
 * ```ts
 * answerVouch(ctx, { leader: 'hippo-instance1-0' }); // { name: 'hippo-instance1-1', accepted: true }
 * ```
 */
export function answerVouch(ctx: AgentContext, request: FailsafeRequest): FailsafeAnswer {
  const { config, view, state, log } = ctx;
  const now = performance.now();
  const lease = view.lease.view;
  const snapshot = state.snapshot();
  const decision = decideVouch({
    self: config.podName,
    caller: request.leader,
    failsafeMode: view.ha.failsafeMode,
    following: snapshot.mode === 'follow' && !snapshot.stopping,
    holder: holderOf(lease),
    holderExpired: !lease?.exists || now >= leaseExpiresAtMs(lease),
    vouch: snapshot.vouch,
    nowMs: now,
    leaseDurationMs: leaseTimings(ctx).leaseDurationMs,
  });
  if (!decision.accept) {
    log.warn({ leader: request.leader, reason: decision.reason }, 'failsafe: refused to vouch for the primary');
    return { name: config.podName, accepted: false, reason: decision.reason };
  }
  log.info({ leader: request.leader }, 'failsafe: vouched for the primary, which cannot reach the API server');
  state.vouchFor(request.leader, now);
  return { name: config.podName, accepted: true };
}
