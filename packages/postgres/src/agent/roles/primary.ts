/**
 * The primary role: campaigns for the leader Lease through the runtime's LeaderElector and, for
 * each leadership, runs postgres as primary (promoting a standby, or starting a fresh primary)
 * until the leadership ends; then postgres is stopped at once (fencing). Resolves the next mode:
 * rejoin once another instance holds the Lease, or undefined when the agent is stopping.
 *
 * Guarantee: postgres takes writes only inside a leadership, and is stopped the moment it ends,
 * which the renew deadline places strictly before any replica can see the Lease expire.
 */
import { LeaderElector } from '@kanri/runtime';
import { ANNOTATION, EVENT_REASON, names, parseMembers, ROLE } from '../../contract/index.js';
import { runPrimaryBackups } from '../backups/primary-backups.js';
import { type AgentContext, podNames, type Takeover, type Transition } from '../context.js';
import { leaseTimings } from '../lease-timings.js';
import { readFailsafeMembers, unlistedRefusal } from '../plan/leadership/failsafe-plan.js';
import { planLeadershipStart } from '../plan/leadership/leadership-plan.js';
import { ANY_STANDBY, renderSynchronousStandbyNames } from '../plan/leadership/sync-plan.js';
import { ensureSystemRoles, reconcileSlots } from '../postgres/primary-tasks.js';
import { writeAskedFiles } from '../requests/serve-requests.js';
import { retry, untilAccepting } from '../retry.js';
import { PrimaryFailsafe } from './failsafe.js';
import { historyRefusal, leaseMetadataFor } from './leader-history.js';
import { runPrimaryTasks, runSyncLoop } from './primary-loop.js';
import { PrimarySession } from './primary-session.js';
import { promoteIfStandby } from './promote.js';
import { watchStepDown } from './step-down.js';

export interface PrimaryEntry {
  readonly takeover?: Takeover;
  readonly fresh?: boolean;
}

export async function runPrimary(
  ctx: AgentContext,
  signal: AbortSignal,
  entry: PrimaryEntry,
): Promise<Transition | undefined> {
  const { config, log, state } = ctx;
  state.enter('lead', ROLE.primary, 'waiting for the leader Lease');
  const session = new PrimarySession();
  const failsafe = new PrimaryFailsafe(ctx);
  let leadership: Promise<void> = Promise.resolve();
  // Names the current leadership for the watchdog (see PostgresProcess.disarmWatchdog).
  let leadershipToken: object = {};
  let afterPromotion = entry.takeover?.afterPromotion;
  const reportTakeover = () => {
    const report = afterPromotion;
    afterPromotion = undefined;
    report?.();
  };
  const elector = new LeaderElector({
    client: ctx.client,
    namespace: config.namespace,
    name: names.leaderLease(config.cluster),
    identity: config.podName,
    ...leaseTimings(ctx),
    logger: log.child({ component: 'lease' }),
    // A failover's take-over: leading starts from that write, not from another read and write.
    ...(entry.takeover ? { adopt: { lease: entry.takeover.lease, sentAtMs: entry.takeover.sentAtMs } } : {}),
    // Never lead from a history behind the one the last primary recorded (a former primary), nor
    // from a holder that may lead on vouches without asking this instance (failsafe-plan.ts).
    mayAcquire: async (lease) =>
      unlistedRefusal(
        config.podName,
        lease?.spec?.holderIdentity || undefined,
        readFailsafeMembers(lease?.metadata?.annotations),
      ) ?? historyRefusal(ctx, lease),
    // Owned by the cluster: deleting it deletes the Lease (and its history), so a new cluster of the
    // same name starts afresh instead of finding an old Lease that forbids initdb.
    leaseMetadata: () => leaseMetadataFor(ctx),
    // While the API server cannot be reached, lead on only if every other member vouches (failsafe.ts).
    keepLeadingWithoutApi: (asking) => failsafe.keepLeading(asking),
    // The keeper stops postgres at this deadline unless fed a later one: the fencing below, done
    // from outside this event loop, for when it is stalled (or this process died). A vouched
    // extension moves it too.
    onLeadingUntil: (deadlineMs) => {
      failsafe.leadingUntil();
      ctx.postgres.feedWatchdog(deadlineMs, leadershipToken);
    },
    onStartedLeading: (lost) => {
      const token = {};
      leadershipToken = token;
      // One leadership at a time: a new one starts postgres only after the last one stopped it.
      leadership = leadership
        .then(() => lead(ctx, session, lost, signal, entry.fresh === true, reportTakeover, failsafe, token))
        .catch((error: unknown) => log.error({ err: error }, 'leading failed'));
      return leadership;
    },
    onNewLeader: (identity) => {
      if (identity === config.podName) return;
      // Someone else leads: this former primary must neither write nor campaign.
      session.lostTo(identity);
    },
  });
  await elector.run(AbortSignal.any([signal, session.ended]));
  await leadership;
  reportTakeover();
  // Released on the way out: whoever takes it over is rewound from, once the volume has room.
  if (!signal.aborted && session.steppedDown !== undefined)
    return { mode: 'rejoin', holder: session.takenBy, why: 'stepped down (data volume full)' };
  if (signal.aborted || session.takenBy === undefined) return undefined;
  log.warn({ leader: session.takenBy }, 'another instance holds the leader Lease; rejoining as its replica');
  return { mode: 'rejoin', holder: session.takenBy, why: 'former primary' };
}

/** One leadership: postgres runs as primary until `lost` aborts, then it is stopped. */
async function lead(
  ctx: AgentContext,
  session: PrimarySession,
  lost: AbortSignal,
  agentSignal: AbortSignal,
  fresh: boolean,
  reportTakeover: () => void,
  failsafe: PrimaryFailsafe,
  token: object,
): Promise<void> {
  const { config, files, postgres, state, log } = ctx;
  state.enter('lead', ROLE.primary, 'starting postgres as primary');
  state.forgetPrimaryLsn();
  // A former primary that handed the Lease over in a switchover may lead again later.
  session.endSwitching();
  // Fencing must not wait for in-flight work (an API request hanging on a dead network path):
  // postgres stops the moment leadership ends.
  const fence = () => void postgres.stop('fast', 2_000);
  lost.addEventListener('abort', fence, { once: true });
  // From the start: a postgres that cannot start on a full volume never reaches the tasks below.
  // It ends with the leadership (its errors are its own to log).
  void watchStepDown(ctx, session, lost);
  const nowLeading = () => {
    state.startedLeading();
    log.info('running as primary');
    ctx.primaryWakeup.wake();
    reportTakeover();
  };
  try {
    session.startSync(initialSynchronous(ctx, fresh));
    const synchronousStandbyNames = renderSynchronousStandbyNames(
      ctx.view.ha.synchronousNumber,
      session.syncConfigured,
    );
    const plan = planLeadershipStart({
      postgresRunning: postgres.wanted,
      writtenSynchronousStandbyNames: files.writtenSynchronousStandbyNames,
      synchronousStandbyNames,
    });
    let promoted = false;
    if (plan.promoteFirst) {
      // promoteIfStandby retries until postgres answers: no separate ping on the path to RTO.
      promoted = await promoteIfStandby(ctx, lost);
      if (lost.aborted) return;
      if (promoted) nowLeading();
    }
    files.setPrimary(undefined, undefined);
    files.setSynchronousStandbyNames(synchronousStandbyNames);
    const changed = await retry(log, 'write the configuration files', lost, () => files.write());
    if (lost.aborted) return;
    // A promoted replica's postgres runs already (in recovery): reload, then promote it.
    if (postgres.wanted && changed) postgres.reload();
    ctx.lastFatal.line = undefined;
    postgres.start();
    // A postgres that cannot start (a bad parameter value, say) says why in its log: the report says it too.
    await untilAccepting(ctx.db, lost, () => {
      const fatal = ctx.lastFatal.line;
      if (fatal) state.setPhase(`postgres does not start as primary: ${fatal.slice(0, 300)}`);
      // A corrected configuration reaches the postgres its supervisor starts again.
      void writeAskedFiles(ctx).catch(() => undefined);
    });
    if (lost.aborted) return;
    if (!promoted) {
      promoted = await promoteIfStandby(ctx, lost);
      if (lost.aborted) return;
      if (promoted) nowLeading();
    }
    // A promoted replica serves at once (above): it has the replication role already, and its
    // peers' slots were created while it promoted. A new primary creates both first, so that a
    // replica cloning as soon as it reports ready finds its slot in place.
    await retry(log, 'create the replication role', lost, () => ensureSystemRoles(ctx.db, config, log));
    if (lost.aborted) return;
    if (!promoted) {
      await reconcileSlots(ctx.db, config, podNames(ctx), log).catch(() => undefined);
      nowLeading();
    }
    await Promise.all([
      runPrimaryTasks(ctx, session, lost, failsafe),
      runSyncLoop(ctx, session, lost),
      runPrimaryBackups(ctx, lost).catch((error: unknown) => log.error({ err: error }, 'backup work failed')),
    ]);
  } finally {
    reportTakeover();
    let phase: string | undefined;
    if (!agentSignal.aborted) {
      const why = session.steppedDown
        ? `it gave the leader Lease up: ${session.steppedDown}`
        : session.takenBy
          ? `${session.takenBy} holds the leader Lease now`
          : `the leader Lease could not be renewed before the renew deadline${failsafe.refusal ? ` (failsafe: ${failsafe.refusal})` : ''}`;
      phase = `fenced: ${why}; postgres stopped`;
      if (!session.switching) {
        log.error({ reason: why }, 'FENCING: stopping postgres so that it takes no more writes');
        ctx.events.record('Warning', EVENT_REASON.fenced, `${config.podName} stopped postgres: ${why}`);
      }
    }
    state.stoppedLeading(phase);
    // Fast, escalating soon: clients are cut off at once, and postgres is down well before the
    // Lease can expire for the replicas (renew deadline < lease duration).
    lost.removeEventListener('abort', fence);
    await postgres.stop('fast', 2_000);
    postgres.disarmWatchdog(token);
  }
}

/** The synchronous standbys a new leadership starts with (see plan/leadership/sync-plan.ts). */
function initialSynchronous(ctx: AgentContext, fresh: boolean): string[] {
  const number = ctx.view.ha.synchronousNumber;
  if (number <= 0) return [];
  const published = parseMembers(ctx.view.lease.view?.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]).filter(
    (m) => m !== ctx.config.podName,
  );
  if (published.length >= number) return published;
  // A new cluster has no standby yet; any other primary waits for N standbys, whoever they are.
  return fresh ? [] : [...ANY_STANDBY];
}
