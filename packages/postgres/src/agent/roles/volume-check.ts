/**
 * The data volume's check at start (plan/volume-check-plan.ts): before postgres runs on an
 * existing PGDATA, its system identifier is compared with the cluster's and its timeline with the
 * leader's, and the result is logged and recorded as an Event. Another cluster's data is moved
 * aside (`<pgdata>.foreign`, replacing an older one: it is not ours to delete) and the primary is
 * cloned in its place; the copy keeps its space on the volume until someone removes it.
 */
import { rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { holderOf, type LeaseView, leaseExpiresAtMs } from '@kanri/runtime';
import { sleepUnlessAborted } from '@kanri/timing';
import { EVENT_REASON, ROLE, readLeaderHistory, readPodReport } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { fsyncDir } from '../files.js';
import { leaseTimings } from '../lease-timings.js';
import { planVolumeCheck, type VolumeCheck } from '../plan/volume-check-plan.js';
import { readControlData } from '../postgres/rewind.js';
import { retry } from '../retry.js';
import { cloneFromPrimary } from './clone.js';

/** The system identifier the operator recorded in the cluster's status, if any. */
function recordedSystemIdentifier(ctx: AgentContext): string | undefined {
  const status = (ctx.view.cluster as { status?: { systemIdentifier?: unknown } } | undefined)?.status;
  return typeof status?.systemIdentifier === 'string' && status.systemIdentifier ? status.systemIdentifier : undefined;
}

function plan(ctx: AgentContext, own: { systemIdentifier: string; timeline: number }, lease: LeaseView): VolumeCheck {
  const holder = holderOf(lease);
  return planVolumeCheck({
    own,
    recorded: recordedSystemIdentifier(ctx),
    // Its own old report proves nothing about its data.
    ...(holder && holder !== ctx.config.podName
      ? {
          holder: {
            name: holder,
            systemIdentifier: readPodReport(ctx.view.pod(holder))?.systemIdentifier || undefined,
            expired: performance.now() >= leaseExpiresAtMs(lease),
          },
        }
      : {}),
    leaderTimeline: readLeaderHistory(lease.lease?.metadata?.annotations)?.timeline,
    leaseExists: lease.exists,
    mode: ctx.config.bootstrap,
  });
}

/**
 * Checks the existing PGDATA. Resolves `use` (as it is), `recloned` (it now holds a clone of the
 * primary, as a standby), or undefined when `signal` aborted first.
 *
 * @example
 * ```ts
 * const checked = data.hasData ? await checkDataVolume(ctx, signal) : 'use';
 * ```
 */
export async function checkDataVolume(ctx: AgentContext, signal: AbortSignal): Promise<'use' | 'recloned' | undefined> {
  const { config, log, state } = ctx;
  let own: { systemIdentifier: string; timeline: number };
  try {
    own = await readControlData(ctx.pgBin, config.pgdata, ctx.redactor);
  } catch (error) {
    // postgres itself refuses a data directory whose pg_control cannot be read, and says why.
    log.warn({ err: error }, 'data volume check: cannot read pg_control; starting postgres on it as it is');
    return 'use';
  }
  // A quorum read: a new cluster's Lease (or its absence) must not come from a stale cache.
  const lease = await retry(log, 'read the leader Lease', signal, () => ctx.view.lease.refresh(signal));
  if (signal.aborted || !lease) return undefined;
  let check = plan(ctx, own, lease);
  let waiting = '';
  while (check.action === 'wait' && !signal.aborted) {
    if (check.message !== waiting) {
      waiting = check.message;
      state.boot(ROLE.replica);
      state.setPhase(`data volume check: ${check.message}`);
      log.info({ ...own }, `data volume check: ${check.message}`);
    }
    await sleepUnlessAborted(leaseTimings(ctx).retryPeriodMs, signal);
    check = plan(ctx, own, ctx.view.lease.view ?? lease);
  }
  if (signal.aborted) return undefined;
  const note = `${config.podName}: data volume checked before use: ${check.message}`;
  if (check.action === 'use') {
    log.info({ ...own }, `data volume check: ${check.message}`);
    ctx.events.record('Normal', EVENT_REASON.dataVolumeChecked, note);
    return 'use';
  }
  log.error({ ...own }, `data volume check: ${check.message}`);
  ctx.events.record('Warning', EVENT_REASON.dataVolumeChecked, note);
  state.boot(ROLE.replica);
  state.setPhase(`data volume check: ${check.message}`);
  const aside = `${config.pgdata}.foreign`;
  await rm(aside, { recursive: true, force: true });
  await rename(config.pgdata, aside);
  await fsyncDir(dirname(aside));
  if (!(await cloneFromPrimary(ctx, signal))) return undefined;
  const decision = `re-cloned: its data volume held another cluster's data (${check.message.split(':')[0]}), kept at ${aside}`;
  state.decide('rejoin', decision);
  log.info(decision);
  ctx.events.record('Normal', EVENT_REASON.recloned, `${config.podName}: ${decision}`);
  return 'recloned';
}
