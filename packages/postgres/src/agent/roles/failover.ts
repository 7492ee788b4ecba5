/**
 * Failover, seen from a replica: rank the candidates once the holder's Lease has expired
 * (plan/leadership/failover-plan.ts decides), and, if this instance wins, take the Lease over with the
 * version the decision was made on. Ranking and the take-over are on the path to RTO: peers are
 * asked while this instance looks at itself, and the Pods come from the cache.
 */
import { type LeaseView, takeOverLease } from '@kanri/runtime';
import {
  ANNOTATION,
  EVENT_REASON,
  encodeLeaderHistory,
  LABEL,
  LEADER_HISTORY_ANNOTATION,
  type LiveStatus,
  parseMembers,
  ROLE,
  readPodReport,
} from '../../contract/index.js';
import { type AgentContext, podNames, type Takeover } from '../context.js';
import { leaseTimings } from '../lease-timings.js';
import type { PeerAddress } from '../peers/peer-client.js';
import { fetchPeerStatus } from '../peers/peer-status.js';
import { decideFailover } from '../plan/leadership/failover-plan.js';
import {
  bindingMembers,
  encodeFailsafeMembers,
  isVouchedFor,
  memberListFor,
  readFailsafeMembers,
} from '../plan/leadership/failsafe-plan.js';
import { toCandidate } from '../plan/leadership/switchover-plan.js';
import { maxLsn } from '../plan/lsn.js';
import { ensureSlots } from '../postgres/primary-tasks.js';

export interface FailoverOutcome {
  /** This instance won the ranking (it may still have lost the race for the Lease). */
  readonly take: boolean;
  readonly message: string;
  /** Set when this instance won and holds the Lease now. */
  readonly takeover?: Takeover;
  /** When another replica won the ranking: its name (it is about to take the Lease). */
  readonly best?: string;
  /** When this instance's and each peer's status came in, ms after the ranking began. */
  readonly timings: { readonly selfMs: number; readonly peersMs: readonly number[] };
}

export async function considerFailover(
  ctx: AgentContext,
  lease: LeaseView,
  lastHolder: string | undefined,
  expiredSince: number,
): Promise<FailoverOutcome> {
  const { config, view, state } = ctx;
  const { maximumLagOnFailover, synchronousNumber } = view.ha;
  const pods = view.pods();
  const peers = rankingPeers(ctx, lastHolder);
  // How long each part took: the ranking is on the path to RTO, and the log breaks it down.
  const started = performance.now();
  const timed = async <T>(work: Promise<T>): Promise<[T, number]> => [
    await work,
    Math.round(performance.now() - started),
  ];
  const [[me, selfMs], ...peerAnswers] = await Promise.all([
    timed(ctx.liveStatus()),
    ...peers.map((peer) => timed(fetchPeerStatus(ctx.peers, peer))),
  ]);
  const answers = peerAnswers.map(([answer]) => answer);
  const timings = { selfMs, peersMs: peerAnswers.map(([, ms]) => ms) };
  const answered = answers.filter((p): p is LiveStatus => p !== undefined);
  // The last primary's own report (its Pod, which only it may write) is kept; what peers say the
  // primary reached counts for this decision only, never stored or passed on: a peer that lied once
  // (or a spoofed answer) must not block every failover after it.
  state.seePrimaryLsn(readPodReport(pods.find((p) => p.metadata?.name === lastHolder))?.receivedLsn);
  const listed = bindingMembers(readFailsafeMembers(lease.lease?.metadata?.annotations), lastHolder);
  const decision = decideFailover({
    self: config.podName,
    candidates: [me as LiveStatus, ...answered].map(toCandidate),
    systemIdentifier: (me as LiveStatus).systemIdentifier,
    primaryLsn: answered.reduce<string | undefined>(
      (lsn, peer) => maxLsn(lsn, peer.primaryLsnSeen),
      state.snapshot().primaryLsnSeen,
    ),
    maximumLagBytes: maximumLagOnFailover,
    synchronousStandbys:
      synchronousNumber > 0 ? parseMembers(lease.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]) : undefined,
    graceOver: performance.now() - expiredSince > leaseTimings(ctx).leaseDurationMs,
    ...(lastHolder &&
    isVouchedFor(state.snapshot().vouch, lastHolder, performance.now(), leaseTimings(ctx).leaseDurationMs)
      ? { vouchedFor: lastHolder }
      : {}),
    ...(listed ? { failsafeMembers: listed } : {}),
  });
  if (!decision.take)
    return { take: false, message: decision.message, timings, ...(decision.best ? { best: decision.best } : {}) };
  if (synchronousNumber > 0)
    await slotsBeforeLeading(
      ctx,
      answered.map((peer) => peer.name),
    );
  // The promotion starts a timeline past this instance's: recorded with the take-over itself, so a
  // former primary cannot lead from its older history while this one is still promoting.
  const takeover = await takeLease(ctx, lease, lastHolder, decision.message, (me as LiveStatus).timeline + 1);
  return takeover
    ? { take: true, message: state.snapshot().decisions.failover ?? decision.message, takeover, timings }
    : { take: true, message: decision.message, timings };
}

/** The peers asked in a ranking: every other instance with an address, but the last holder. */
function rankingPeers(ctx: AgentContext, lastHolder: string | undefined): PeerAddress[] {
  return ctx.view.pods().flatMap((p) => {
    const name = p.metadata?.name;
    const ip = p.status?.podIP;
    return name && ip && name !== ctx.config.podName && name !== lastHolder ? [{ name, ip }] : [];
  });
}

/**
 * Opens the connections a ranking will use, seconds before the holder's Lease expires (peer
 * connections stay open 30 s, peers/peer-server.ts). A new mutual-TLS connection at the expiry cost
 * 34–59 ms of the ranking's 58–105 ms (bench:failover --sync, 2026-12-03): time on the path to
 * RTO. The answers are dropped: a ranking must see the peers as they are at the expiry.
 */
export function warmRankingConnections(ctx: AgentContext, lastHolder: string | undefined): void {
  for (const peer of rankingPeers(ctx, lastHolder)) void fetchPeerStatus(ctx.peers, peer);
  // The local ones too: the ranking, the peers' requests and the promotion query at once.
  void ctx.db.warm();
}

/**
 * Synchronous mode acknowledges no commit until a replica streams from the new primary, and the
 * replicas follow whoever the Lease names at once. A replica that connects before its slot exists
 * is refused, and postgres retries only after `wal_retrieve_retry_interval` (1 s without a commit;
 * made while promoting, the slot often lost that race). So the slots of the peers that
 * answered (the live replicas) exist before the Lease names this instance. Made on a standby
 * without reserving WAL, they hold nothing if the take-over then fails; promote.ts adds the rest.
 */
async function slotsBeforeLeading(ctx: AgentContext, peers: readonly string[]): Promise<void> {
  const started = performance.now();
  try {
    const created = await ensureSlots(ctx.db, ctx.config, peers, ctx.log);
    // On the path to the first commit: how long it took is worth seeing.
    ctx.log.info({ created, ms: Math.round(performance.now() - started) }, "the replicas' slots are ready");
  } catch (error) {
    ctx.log.warn({ err: error }, "cannot create the replicas' slots before taking the Lease; promoting creates them");
  }
}

/** Takes the expired Lease with its resourceVersion as precondition; undefined when someone else moved it first. */
async function takeLease(
  ctx: AgentContext,
  lease: LeaseView,
  lastHolder: string | undefined,
  why: string,
  nextTimeline: number,
): Promise<Takeover | undefined> {
  const { config, view, state, log } = ctx;
  const sentAtMs = performance.now();
  const written = await takeOverLease(ctx.leaseRef, {
    observed: lease,
    identity: config.podName,
    leaseDurationSeconds: view.ha.leaseDurationSeconds,
    reason: why,
    // The old primary's synchronous standbys are not this one's: it publishes its own.
    annotations: {
      [ANNOTATION.syncStandbys]: null,
      [LEADER_HISTORY_ANNOTATION]: encodeLeaderHistory({ timeline: nextTimeline, holder: config.podName }),
      // Its own member list in the same write: it may lead on vouches from the start.
      [ANNOTATION.failsafeMembers]:
        view.ha.failsafeMode && view.podsSynced
          ? encodeFailsafeMembers(memberListFor(config.podName, podNames(ctx)))
          : null,
    },
  });
  if (!written) {
    log.info('the leader Lease changed while taking it over; looking again');
    await view.lease.refresh().catch(() => undefined);
    return undefined;
  }
  view.lease.see(written);
  const message = `promoted: took over the leader Lease from ${lastHolder ?? 'nobody'} (${why.replace(/^taking over: /, '')})`;
  state.decide('failover', message);
  log.warn({ from: lastHolder ?? null }, 'FAILOVER: took over the leader Lease');
  return {
    lease: written,
    sentAtMs,
    // After the promotion, not beside it: on a busy API server these requests would delay the
    // role label that clients look for. A client trying the dead Pod first is refused at once.
    afterPromotion: () => {
      ctx.events.record('Warning', EVENT_REASON.promoted, `${config.podName} ${message}`);
      void relabelStalePrimaries(ctx).catch((error: unknown) =>
        log.warn({ err: error }, 'cannot move the primary label off the former primary'),
      );
    },
  };
}

/**
 * A dead primary's Pod keeps its role label (its agent cannot change it) and, on a node that is
 * down, stays Ready until the node controller notices: move it off, so `-primary` has only us.
 */
async function relabelStalePrimaries(ctx: AgentContext): Promise<void> {
  const { client, config, view, log } = ctx;
  for (const pod of view.pods()) {
    const name = pod.metadata?.name;
    if (!name || name === config.podName || pod.metadata?.labels?.[LABEL.role] !== ROLE.primary) continue;
    await client
      .resource('v1', 'Pod')
      .patch(
        name,
        { metadata: { labels: { [LABEL.role]: ROLE.replica } } },
        { namespace: config.namespace, type: 'merge' },
      );
    log.info({ pod: name }, 'moved the primary role label off the former primary');
  }
}
