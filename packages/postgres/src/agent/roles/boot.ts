/**
 * The first step of every start: look at PGDATA and the leader Lease, adopt a postgres the keeper
 * kept running if that is safe (roles/adopt.ts), else plan (plan/bootstrap-plan.ts) and initialise
 * or clone if needed (PGDATA of another major first: roles/major-upgrade.ts). Resolves the first mode to run, or undefined when stopping.
 */
import { holderOf } from '@kanri/runtime';
import { ROLE } from '../../contract/index.js';
import type { AgentContext, Transition } from '../context.js';
import type { WatchdogStatus } from '../keeper/protocol.js';
import { planBoot } from '../plan/bootstrap-plan.js';
import { initdb, inspectDataDir } from '../postgres/bootstrap.js';
import { retry } from '../retry.js';
import { adoptKept } from './adopt.js';
import { bootstrapContext, cloneFromPrimary } from './clone.js';
import { settleMajorVersion } from './major-upgrade.js';
import { readRestoreMarker, restoreFromRepo } from './restore.js';
import { checkDataVolume } from './volume-check.js';

export async function boot(
  ctx: AgentContext,
  signal: AbortSignal,
  watchdog: WatchdogStatus,
): Promise<Transition | undefined> {
  const { config, state, log } = ctx;
  // Data of another major is upgraded (on the Pod made for it) or refused before anything reads it.
  const settled = await settleMajorVersion(ctx, signal);
  if (settled === 'refused') return undefined;
  let data = await inspectDataDir(config.pgdata);
  // Existing data (a restart, or a retained volume reattached) is checked before postgres runs on it;
  // data upgraded just now has a new system identifier, which the operator records once it serves.
  if (data.hasData && settled === 'boot') {
    const checked = await checkDataVolume(ctx, signal);
    if (checked === undefined) return undefined;
    if (checked === 'recloned') data = { hasData: true, isStandby: true };
  }
  // A quorum read, not the cache: initdb must never run while a Lease exists.
  const lease = await retry(log, 'read the leader Lease', signal, () => ctx.view.lease.refresh(signal));
  if (signal.aborted || !lease) return undefined;
  const leaseHolder = holderOf(lease);
  const marker = config.bootstrap === 'restore' ? await readRestoreMarker(config.dataDir) : undefined;
  if (marker) ctx.backups.restored(marker);
  const restorePending = !(
    marker?.result === 'succeeded' &&
    (config.restoreId === undefined || marker.id === config.restoreId)
  );
  const adopted = await adoptKept(ctx, signal, {
    leaseHolder,
    restorePending: config.bootstrap === 'restore' && restorePending,
    watchdog,
  });
  if (adopted !== 'boot') return adopted;
  const plan = planBoot({
    restorePending,
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
