/**
 * Promotion of a standby to primary (pg_promote), kept tight because it is on the path to RTO:
 * poll every 10 ms instead of pg_promote's 100 ms, and in synchronous mode create the peers'
 * slots beside it, so re-following replicas stream through the timeline switch at once.
 */
import { sleepUnlessAborted } from '@kanri/timing';
import { type AgentContext, podNames } from '../context.js';
import { ensureSlots, reconcileSlots } from '../postgres/primary-tasks.js';

/**
 * Asks for the promotion and checks that postgres is a standby in one statement: on the path to
 * RTO, where each round trip on a busy machine cost several ms (a separate ping and
 * pg_is_in_recovery() put 12–20 ms between the take-over and pg_promote in bench:failover).
 * NULL when postgres is a primary already.
 */
const PROMOTE_IF_STANDBY = 'SELECT CASE WHEN pg_is_in_recovery() THEN pg_promote(false) END AS sent';

/** True if postgres was a standby and is promoted now; postgres must be running. */
export async function promoteIfStandby(ctx: AgentContext, leadership: AbortSignal): Promise<boolean> {
  const { db, log, state } = ctx;
  const started = performance.now();
  let requested = false;
  while (!leadership.aborted) {
    try {
      // pg_promote(true) polls every 100 ms; promotion takes a few tens of ms, so poll closer.
      const [row] = await db.query<{ sent: boolean | null }>(PROMOTE_IF_STANDBY);
      if (row?.sent == null) {
        if (!requested) return false;
        break; // promoted by an earlier request
      }
      if (!requested) {
        requested = true;
        state.setPhase('promoting');
        // How long the request took: on the path to RTO, and the breakdown script reads it.
        log.info({ ms: Math.round(performance.now() - started) }, 'promoting postgres (pg_promote)');
        // Synchronous mode: the replicas re-follow this instance as soon as it holds the Lease;
        // with their slots in place they stream from it at once (through the promotion's
        // timeline switch) instead of retrying after wal_retrieve_retry_interval, time without
        // any commit. A failover made the live replicas' slots before taking the Lease
        // (failover.ts); this adds the others (the former primary's) and serves a switchover's
        // target. Asynchronous commits need no replica: the slots come right after the
        // promotion (below), and their fsyncs do not compete with the promotion's.
        if (ctx.view.ha.synchronousNumber > 0) {
          void reconcileSlots(db, ctx.config, podNames(ctx), log).catch(() => undefined);
        }
      }
      if (row.sent && (await untilPromoted(ctx, leadership, 60_000))) break;
    } catch (error) {
      log.warn({ err: error }, 'pg_promote failed; retrying');
    }
    await sleepUnlessAborted(requested ? 500 : 100, leadership);
  }
  if (!requested) return false;
  const ms = Math.round(performance.now() - started);
  log.info({ ms }, 'promoted');
  // Asynchronous mode: the replicas re-follow as soon as they see the Lease, and postgres refuses
  // a replica whose slot is missing; it then waits wal_retrieve_retry_interval without WAL. The
  // primary's first pass makes the slots only after its configuration and roles (~0.3 s), so make
  // them now, before the checkpoint below.
  if (ctx.view.ha.synchronousNumber <= 0 && !leadership.aborted)
    void ensureSlots(db, ctx.config, podNames(ctx), log).catch(() => undefined);
  // The new timeline reaches pg_control (where pg_rewind looks) with a checkpoint: do it now, in the
  // background, so that a former primary rewinding from here sees the fork.
  db.query('CHECKPOINT').catch((error: unknown) => log.warn({ err: error }, 'checkpoint after promotion failed'));
  state.decide('failover', `${state.snapshot().decisions.failover ?? 'promoted'} (promoted in ${ms} ms)`);
  return !leadership.aborted;
}

/**
 * A startup process that sees the promote request while streaming counts it as a failed source,
 * and if its last failed attempt (the dead primary's) was less than wal_retrieve_retry_interval ago,
 * it sleeps out the rest of that interval before it promotes: up to a second, in 1 of 10
 * asynchronous failovers of bench:failover on 2026-12-03 ("received promote request", then
 * "waiting for WAL to become available", then the new timeline 1.0 s later). A reload wakes that
 * sleep (its SIGHUP sets the startup process's latch), so a promotion not done after this long is
 * woken, and again every as long, while it lasts.
 */
const PROMOTE_NUDGE_MS = 30;

/** Waits until postgres has left recovery; false after `timeoutMs`. */
async function untilPromoted(ctx: AgentContext, leadership: AbortSignal, timeoutMs: number): Promise<boolean> {
  const started = performance.now();
  let nudgedAt = started;
  while (!leadership.aborted && performance.now() < started + timeoutMs) {
    const [row] = await ctx.db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    if (row && !row.r) return true;
    if (performance.now() - nudgedAt >= PROMOTE_NUDGE_MS) {
      nudgedAt = performance.now();
      await ctx.db.query('SELECT pg_reload_conf()').catch(() => undefined);
    }
    await sleepUnlessAborted(10, leadership);
  }
  return false;
}
