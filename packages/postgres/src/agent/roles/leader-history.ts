/**
 * What the leader Lease records besides its holder: the leader history (contract/leader-history.ts),
 * which the primary keeps current and against which a candidate refuses to take the Lease when its
 * own timeline is behind, and the Lease's owner (the cluster), so that it goes with the cluster.
 */
import { annotateLease, type Lease } from '@kanri/runtime';
import {
  API_VERSION,
  encodeLeaderHistory,
  KIND,
  LABEL,
  LEADER_HISTORY_ANNOTATION,
  type LeaderHistory,
  leadRefusal,
  readLeaderHistory,
} from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { readControlData } from '../postgres/rewind.js';

/** How often the primary refreshes the recorded WAL position when its timeline has not changed. */
const REFRESH_MS = 30_000;

/**
 * The LeaderElector's `mayAcquire` for this instance: why it must not take `lease`, or undefined.
 * Its own timeline is read from pg_control, so it holds while postgres is stopped (fenced) too.
 */
export async function historyRefusal(ctx: AgentContext, lease: Lease | undefined): Promise<string | undefined> {
  // Creating the Lease without its owner would outlive the cluster (nothing collects it) and forbid
  // initdb to a later cluster of the same name; until the cache has the cluster, wait. Its absence
  // also means the cluster was deleted while this Pod still runs: nothing to lead then.
  if (!lease && !ctx.view.cluster?.metadata?.uid)
    return `cluster ${ctx.config.cluster} is not in the cache: not creating its leader Lease without its owner`;
  const recorded = readLeaderHistory(lease?.metadata?.annotations);
  // Its own record (a failover that took the Lease, then restarted before promoting) binds nobody.
  if (!recorded || recorded.holder === ctx.config.podName) return undefined;
  let timeline: number;
  try {
    timeline = (await readControlData(ctx.pgBin, ctx.config.pgdata, ctx.redactor)).timeline;
  } catch (error) {
    return `cannot read this instance's timeline (${ctx.redactor.describe(error)}): not leading without knowing its history covers the leader's`;
  }
  const refusal = leadRefusal(recorded, timeline);
  if (refusal) ctx.state.setPhase(`not leading: ${refusal}`);
  return refusal;
}

/**
 * On the primary: writes its timeline and WAL position on the Lease when the timeline differs from
 * the recorded one (at once after a promotion) or the record is older than REFRESH_MS.
 * Resolves when the record was last written (`performance.now()`).
 */
export async function recordHistory(ctx: AgentContext, leadership: AbortSignal, writtenAt: number): Promise<number> {
  const [row] = await ctx.db.query<{ lsn: string; wal: string }>(
    'SELECT pg_current_wal_lsn()::text AS lsn, pg_walfile_name(pg_current_wal_lsn()) AS wal',
  );
  if (!row) return writtenAt;
  const history: LeaderHistory = {
    timeline: Number.parseInt(row.wal.slice(0, 8), 16),
    lsn: row.lsn,
    holder: ctx.config.podName,
  };
  const recorded = readLeaderHistory(ctx.view.lease.view?.lease?.metadata?.annotations);
  const current = recorded?.timeline === history.timeline && recorded.holder === history.holder;
  if (current && performance.now() - writtenAt < REFRESH_MS) return writtenAt;
  const written = await annotateLease(
    ctx.leaseRef,
    { [LEADER_HISTORY_ANNOTATION]: encodeLeaderHistory(history) },
    { onlyIfHolder: ctx.config.podName, signal: leadership },
  );
  if (!written) return writtenAt;
  ctx.view.lease.see(written);
  if (!current) ctx.log.info({ history }, 'leader history recorded on the Lease');
  return performance.now();
}

/** The leader Lease's labels and owner (the PostgresCluster, once the cache has it). */
export function leaseMetadataFor(ctx: AgentContext) {
  const cluster = ctx.view.cluster;
  const uid = cluster?.metadata?.uid;
  return {
    labels: { [LABEL.cluster]: ctx.config.cluster },
    ...(uid
      ? {
          ownerReferences: [
            { apiVersion: API_VERSION, kind: KIND, name: ctx.config.cluster, uid, blockOwnerDeletion: false },
          ],
        }
      : {}),
  };
}
