/**
 * Re-cloning a replica whose WAL is gone from the primary: its slot was invalidated because it
 * fell more than max_slot_wal_keep_size behind (a replica that was down), so streaming can never
 * resume and only a new clone brings it back. Its data directory is deleted first, not set aside
 * as a diverged one is: it holds nothing the primary lacks (it is only behind), and a copy beside
 * the clone would need the volume twice over.
 */
import { rm } from 'node:fs/promises';
import { EVENT_REASON } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { cloneFromPrimary } from './clone.js';

/**
 * Stops postgres, deletes PGDATA and clones the primary `holder`. True once PGDATA holds the new
 * clone; false if `signal` aborted first.
 *
 * @example
 * ```ts
 * if (step.kind === 'reclone') return (await recloneReplica(ctx, signal, holder, step.line)) ? { mode: 'follow' } : undefined;
 * ```
 */
export async function recloneReplica(
  ctx: AgentContext,
  signal: AbortSignal,
  holder: string | undefined,
  line: string,
): Promise<boolean> {
  const { config, postgres, state, log } = ctx;
  const primary = holder ?? 'the primary';
  const why = `the WAL it needs was removed from ${primary} (its replication slot was invalidated: it fell more than max_slot_wal_keep_size behind)`;
  log.error({ line, primary }, `${why}; re-cloning`);
  ctx.events.record('Warning', EVENT_REASON.recloned, `${config.podName}: ${why}; re-cloning (${line.slice(0, 200)})`);
  state.setPhase(`re-cloning ${primary}: ${why}`);
  await postgres.stop('fast', 10_000);
  ctx.walRemoved.reset();
  await rm(config.pgdata, { recursive: true, force: true });
  const started = performance.now();
  if (!(await cloneFromPrimary(ctx, signal))) return false;
  const decision = `re-cloned from ${primary} in ${Math.round(performance.now() - started)} ms: ${why}`;
  state.decide('rejoin', decision);
  log.info({ primary }, decision);
  ctx.events.record('Normal', EVENT_REASON.recloned, `${config.podName}: ${decision}`);
  return true;
}
