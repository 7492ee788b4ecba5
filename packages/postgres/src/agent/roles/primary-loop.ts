/**
 * The primary's periodic work while it leads: the failsafe member list, replication slots, users and databases, planned
 * switchovers, spec.databaseInitSQL once, the reloads and restarts asked of postgres (requests/serve-requests.ts), a major upgrade's pre-flight check (every 5 s, or at once on a spec change), and in synchronous mode the standbys
 * (every 250 ms, one step of plan/leadership/sync-plan.ts at a time, 100 ms apart while a new set is on its
 * way). Errors are logged and retried.
 */
import { annotateLease, type LeaseView } from '@kanri/runtime';
import { sleepUnlessAborted } from '@kanri/timing';
import { ANNOTATION, EVENT_REASON, parseMembers } from '../../contract/index.js';
import { type AgentContext, podNames } from '../context.js';
import { planSync, renderSynchronousStandbyNames, type StandbyConnection } from '../plan/leadership/sync-plan.js';
import { maybeRunDatabaseInitSql } from '../postgres/database-init-sql.js';
import { checkpointIfTimelineLags, reconcileSlots, reconcileUsers } from '../postgres/primary-tasks.js';
import { servePostgresRequests } from '../requests/serve-requests.js';
import type { PrimaryFailsafe } from './failsafe.js';
import { recordHistory } from './leader-history.js';
import type { PrimarySession } from './primary-session.js';
import { maybeSwitchover, wakeOnSwitchoverOrder } from './switchover.js';
import { maybeCheckUpgrade } from './upgrade-check.js';

const PRIMARY_TASK_PERIOD_MS = 5_000;
const USERS_RESYNC_MS = 30_000;
/** A standby that left is noticed within this (a local query; the Lease is read only to act). */
const SYNC_PERIOD_MS = 250;
const SYNC_STEP_MS = 100;
const ASYNC_PERIOD_MS = 1_000;

export async function runPrimaryTasks(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
  failsafe: PrimaryFailsafe,
): Promise<void> {
  const { log } = ctx;
  let lastUsersMs = Number.NEGATIVE_INFINITY;
  let historyWrittenAt = Number.NEGATIVE_INFINITY;
  let specVersion: string | undefined;
  let checkpoint: Promise<void> | undefined;
  leadership.addEventListener('abort', wakeOnSwitchoverOrder(ctx), { once: true });
  while (!leadership.aborted) {
    // First: after a promotion, the new timeline must reach the Lease before anything else.
    historyWrittenAt = await recordHistory(ctx, leadership, historyWrittenAt).catch((error: unknown) => {
      if (!leadership.aborted) log.warn({ err: error }, 'cannot record the leader history on the Lease; retrying');
      return historyWrittenAt;
    });
    // Before an outage, not during it: the members it would ask to vouch for it (failsafe mode).
    await failsafe.publishMembers(leadership);
    // A new version of the cluster object may declare new users: look at once.
    const version = ctx.view.cluster?.metadata?.resourceVersion;
    if (version !== specVersion) {
      specVersion = version;
      session.usersChanged();
    }
    if (!session.switching) {
      try {
        await reconcileSlots(ctx.db, ctx.config, podNames(ctx), log);
      } catch (error) {
        if (!leadership.aborted) log.warn({ err: error }, 'cannot reconcile replication slots; retrying');
      }
      if (session.usersDue || performance.now() - lastUsersMs > USERS_RESYNC_MS) {
        session.usersPassStarted();
        lastUsersMs = performance.now();
        try {
          const cluster = { spec: ctx.view.spec, generation: ctx.view.cluster?.metadata?.generation ?? 0 };
          ctx.state.reportUsers(await reconcileUsers(ctx.db, ctx.client, ctx.config, cluster, log, ctx.redactor));
          // After spec.users, as in PGO: the SQL may use their roles and databases.
          await maybeRunDatabaseInitSql(ctx, leadership).catch((error: unknown) => {
            session.usersChanged();
            if (!leadership.aborted) log.warn({ err: error }, 'cannot read spec.databaseInitSQL; retrying');
          });
        } catch (error) {
          session.usersChanged();
          if (!leadership.aborted) log.warn({ err: error }, 'cannot reconcile users and databases; retrying');
        }
      }
      await maybeSwitchover(ctx, session, leadership).catch((error: unknown) => {
        log.error({ err: error }, 'switchover failed');
      });
      await servePostgresRequests(ctx, leadership).catch((error: unknown) => {
        log.error({ err: error }, 'cannot reload or restart postgres as asked');
      });
      await maybeCheckUpgrade(ctx, leadership).catch((error: unknown) => {
        if (!leadership.aborted) log.warn({ err: error }, 'cannot run the major upgrade pre-flight check; retrying');
      });
      // In the background: a checkpoint can take long, and this loop serves switchovers.
      const started = await checkpointIfTimelineLags(ctx.db, checkpoint, log).catch(() => undefined);
      if (started) checkpoint = started.done.finally(() => (checkpoint = undefined));
    }
    await ctx.primaryWakeup.wait(PRIMARY_TASK_PERIOD_MS, leadership);
  }
}

export async function runSyncLoop(ctx: AgentContext, session: PrimarySession, leadership: AbortSignal): Promise<void> {
  let lastReason = '';
  while (!leadership.aborted) {
    if (!session.switching) {
      try {
        const reason = await syncStep(ctx, session, leadership);
        if (reason !== lastReason && reason) ctx.log.info({ reason }, 'synchronous replication');
        lastReason = reason;
      } catch (error) {
        if (!leadership.aborted) ctx.log.warn({ err: error }, 'cannot manage synchronous standbys; retrying');
      }
    }
    // While a new set is on its way (configured, not yet published) commits may be waiting for it:
    // each step follows the last at once instead of a period later.
    // Asynchronous (nothing to hand over) it only watches for the mode to change.
    const period = ctx.view.ha.synchronousNumber > 0 ? SYNC_PERIOD_MS : ASYNC_PERIOD_MS;
    await sleepUnlessAborted(session.syncPending ? SYNC_STEP_MS : period, leadership);
  }
}

/** One step of sync-plan.ts; resolves what it waits for ('' when nothing). */
async function syncStep(ctx: AgentContext, session: PrimarySession, leadership: AbortSignal): Promise<string> {
  const { db, files, postgres, state, log, config } = ctx;
  const number = ctx.view.ha.synchronousNumber;
  const observeAndPlan = async (lease: LeaseView | undefined) => {
    const published = parseMembers(lease?.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]);
    const connections = await db.query<{ name: string; state: string; sync_state: string; flush_lsn: string | null }>(
      'SELECT application_name AS name, state, sync_state, flush_lsn::text FROM pg_stat_replication',
    );
    const [current] = await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    const action = planSync({
      number,
      published,
      configured: session.syncConfigured,
      connections: connections.map(
        (c): StandbyConnection => ({ name: c.name, state: c.state, syncState: c.sync_state, flushLsn: c.flush_lsn }),
      ),
      pending: session.syncPending,
      currentLsn: current?.lsn ?? '0/0',
    });
    return { published, action };
  };
  // Looked at every period from the followed Lease (no API request); before changing anything, read
  // fresh and plan again: planning from a stale published set could skip the unpublish-first step.
  let { published, action } = await observeAndPlan(ctx.view.lease.view);
  if (action.kind === 'publish' || action.kind === 'configure')
    ({ published, action } = await observeAndPlan(await ctx.view.lease.refresh(leadership)));
  state.reportSynchronousStandbys(number > 0 ? published : undefined);
  switch (action.kind) {
    case 'none':
      return '';
    case 'wait':
      return action.reason;
    case 'capture':
      session.captureSync(action.lsn);
      // Waiting commits are released only when a standby reports, and an idle standby reports only
      // every wal_receiver_status_interval (10 s): commits stuck on a standby that left would wait
      // that long for the one that replaced it. A WAL record (no transaction, so it waits for
      // nobody) makes every standby report as soon as it has flushed it.
      await db.query("SELECT pg_logical_emit_message(false, 'kanri', 'synchronous standbys changed')");
      return `synchronous standbys must flush ${action.lsn}`;
    case 'configure': {
      const value = renderSynchronousStandbyNames(number, action.members);
      files.setSynchronousStandbyNames(value);
      if (await files.write()) postgres.reload();
      session.configureSync(action.members);
      log.info({ synchronous_standby_names: value }, 'synchronous standbys configured');
      return `configured ${value || 'no synchronous standbys'}`;
    }
    case 'publish': {
      const members = [...action.members];
      const written = await annotateLease(
        ctx.leaseRef,
        { [ANNOTATION.syncStandbys]: members.join(',') || null },
        { onlyIfHolder: config.podName, signal: leadership },
      ).catch((error: unknown) => {
        log.warn({ err: error }, 'cannot update the leader Lease');
        return undefined;
      });
      if (!written) return 'cannot publish the synchronous standbys';
      ctx.view.lease.see(written);
      state.reportSynchronousStandbys(members);
      log.info({ members }, 'synchronous standbys published in the Lease');
      ctx.events.record(
        'Normal',
        EVENT_REASON.synchronousStandbys,
        `synchronous standbys: ${members.join(', ') || 'none'} (of ${number} required)`,
      );
      session.publishedSync(members);
      return '';
    }
  }
}
