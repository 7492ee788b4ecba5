/**
 * The first step of every start: look at PGDATA and the leader Lease, plan (plan/bootstrap-plan.ts),
 * and initialise or clone if needed. Resolves the first mode to run, or undefined when stopping.
 */
import { holderOf } from '@kanri/runtime';
import { ROLE } from '../../contract/index.js';
import type { AgentContext, Transition } from '../context.js';
import { initdb, inspectDataDir } from '../io/bootstrap.js';
import { retry } from '../io/retry.js';
import { planBoot } from '../plan/bootstrap-plan.js';
import { bootstrapContext, cloneFromPrimary } from './clone.js';
import { readRestoreMarker, restoreFromRepo } from './restore.js';

export async function boot(ctx: AgentContext, signal: AbortSignal): Promise<Transition | undefined> {
  const { config, state, log } = ctx;
  const data = await inspectDataDir(config.pgdata);
  // A quorum read, not the cache: initdb must never run while a Lease exists.
  const lease = await retry(log, 'read the leader Lease', signal, () => ctx.view.lease.refresh(signal));
  if (signal.aborted || !lease) return undefined;
  const leaseHolder = holderOf(lease);
  const marker = config.bootstrap === 'restore' ? await readRestoreMarker(config.dataDir) : undefined;
  if (marker) ctx.backups.restore = marker;
  const plan = planBoot({
    restorePending: !(
      marker?.result === 'succeeded' &&
      (config.restoreId === undefined || marker.id === config.restoreId)
    ),
    ...data,
    mode: config.bootstrap,
    leaseExists: lease.exists,
    leaseHolder,
    self: config.podName,
  });
  state.boot(
    plan.action === 'initdb' || plan.action === 'lead' || plan.action === 'restore' ? ROLE.primary : ROLE.replica,
  );
  log.info({ plan: plan.action, ...data, leaseHolder: leaseHolder ?? null }, 'boot plan');
  switch (plan.action) {
    case 'initdb': {
      state.setPhase('initialising a new cluster (initdb)');
      const started = performance.now();
      await initdb(bootstrapContext(ctx, signal), config.superuserPassword);
      log.info({ ms: Math.round(performance.now() - started) }, 'initdb done');
      return { mode: 'lead', fresh: true };
    }
    case 'basebackup':
      state.setPhase('looking for a primary to clone');
      return (await cloneFromPrimary(ctx, signal)) ? { mode: 'follow' } : undefined;
    case 'restore':
      if (await restoreFromRepo(ctx, signal)) return { mode: 'lead', fresh: true };
      // A failed restore leaves the instance down, reporting why, until the Pod is replaced.
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return undefined;
    case 'lead':
      return { mode: 'lead' };
    case 'follow':
      return { mode: 'follow' };
    case 'rejoin':
      return { mode: 'rejoin', holder: plan.leader, why: 'former primary' };
  }
}
