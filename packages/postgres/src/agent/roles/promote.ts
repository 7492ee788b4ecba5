/**
 * Promotion of a standby to primary (pg_promote), kept tight because it is on the path to RTO:
 * poll every 10 ms instead of pg_promote's 100 ms, and in synchronous mode create the peers'
 * slots beside it, so re-following replicas stream through the timeline switch at once.
 */
import { sleepUnlessAborted } from '@kanri/timing';
import type { AgentContext } from '../context.js';
import { reconcileSlots } from '../io/primary-tasks.js';
import { podNames } from './primary-loop.js';

/** True if postgres was a standby and is promoted now. */
export async function promoteIfStandby(ctx: AgentContext, leadership: AbortSignal): Promise<boolean> {
  const { db, log, state } = ctx;
  const [row] = await db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
  if (!row?.r) return false;
  const started = performance.now();
  state.setPhase('promoting');
  log.info('promoting postgres (pg_promote)');
  // Synchronous mode: the replicas re-follow this instance as soon as it holds the Lease; with
  // their slots in place they stream from it at once (through the promotion's timeline switch)
  // instead of retrying after wal_retrieve_retry_interval, time without any commit. A failover
  // made the live replicas' slots before taking the Lease (failover.ts); this adds the others
  // (the former primary's) and serves a switchover's target. Asynchronous commits need no
  // replica: the slots come right after the promotion (the primary's first pass), and their
  // fsyncs do not compete with the promotion's.
  if (ctx.view.ha.synchronousNumber > 0) {
    void reconcileSlots(db, ctx.config, podNames(ctx), log).catch(() => undefined);
  }
  while (!leadership.aborted) {
    try {
      // pg_promote(true) polls every 100 ms; promotion takes a few tens of ms, so poll closer.
      const [sent] = await db.query<{ ok: boolean }>('SELECT pg_promote(false) AS ok');
      if (sent?.ok && (await untilPromoted(ctx, leadership, 60_000))) break;
    } catch (error) {
      log.warn({ err: error }, 'pg_promote failed; retrying');
    }
    await sleepUnlessAborted(500, leadership);
  }
  const ms = Math.round(performance.now() - started);
  log.info({ ms }, 'promoted');
  // The new timeline reaches pg_control (where pg_rewind looks) with a checkpoint: do it now, in the
  // background, so that a former primary rewinding from here sees the fork.
  db.query('CHECKPOINT').catch((error: unknown) => log.warn({ err: error }, 'checkpoint after promotion failed'));
  state.decide('failover', `${state.snapshot().decisions.failover ?? 'promoted'} (promoted in ${ms} ms)`);
  return !leadership.aborted;
}

/** Waits until postgres has left recovery; false after `timeoutMs`. */
async function untilPromoted(ctx: AgentContext, leadership: AbortSignal, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (!leadership.aborted && performance.now() < until) {
    const [row] = await ctx.db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    if (row && !row.r) return true;
    await sleepUnlessAborted(10, leadership);
  }
  return false;
}
