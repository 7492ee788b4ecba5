/**
 * Rejoining as a replica after losing the primary role (or diverging): stop postgres, wait for the
 * new primary to be ready, pg_rewind from it, and re-clone if the rewind fails (the diverged data
 * directory is set aside, never deleted). Resolves follow, or lead if the Lease came back to us.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { holderOf } from '@kanri/runtime';
import { sleepUnlessAborted } from '@kanri/timing';
import { EVENT_REASON, memberServerName, names, ROLE } from '../../contract/index.js';
import type { AgentContext, Transition } from '../context.js';
import { leaseTimings } from '../lease-timings.js';
import { planRejoin } from '../plan/leadership/rejoin-plan.js';
import { rewind, setAside } from '../postgres/rewind.js';
import { cloneFromPrimary } from './clone.js';

export async function runRejoin(
  ctx: AgentContext,
  signal: AbortSignal,
  from: { readonly holder: string | undefined; readonly why: string },
): Promise<Transition | undefined> {
  const { config, postgres, state, view, log } = ctx;
  state.enter(
    'rejoin',
    ROLE.replica,
    `${from.why}: the leader Lease is held by ${from.holder ?? 'another instance'}; rejoining as its replica`,
  );
  await postgres.stop('fast', 10_000);
  // No leadership here: a watchdog still armed by an adopted primary that never led again (its Lease
  // was taken meanwhile) would fire, then refuse the standby's start.
  postgres.disarmWatchdog();
  ctx.divergence.line = undefined;
  // Cleanly stopped (also in recovery) is what pg_rewind needs; a crashed one has no standby.signal,
  // and pg_rewind's own crash recovery runs in single-user mode, which refuses standby mode.
  await rm(join(config.pgdata, 'standby.signal'), { force: true });
  let source: { holder: string; podIP: string } | undefined;
  while (!signal.aborted && !source) {
    try {
      const leader = view.leader(holderOf(await view.lease.refresh(signal)));
      const step = planRejoin({ self: config.podName, ...leader });
      if (step.kind === 'lead') return { mode: 'lead' };
      if (step.kind === 'rewind') source = step;
      else state.setPhase(`${from.why}: waiting for the new primary ${leader.holder ?? '(none)'} to be ready`);
    } catch (error) {
      if (signal.aborted) return undefined;
      log.warn({ err: error }, 'cannot look up the new primary; retrying');
    }
    if (!source) await sleepUnlessAborted(leaseTimings(ctx).retryPeriodMs, signal);
  }
  if (signal.aborted || !source) return undefined;
  const primary = source.holder;
  state.setPhase(`${from.why}: rewinding from ${primary} (pg_rewind)`);
  try {
    const result = await rewind({
      pgBin: ctx.pgBin,
      pgdata: config.pgdata,
      source: {
        ip: source.podIP,
        serverName: memberServerName(config.cluster, config.namespace),
        tls: ctx.files.tls,
      },
      replicationPassword: config.replicationPassword,
      log: log.child({ component: 'pg_rewind' }),
      redactor: ctx.redactor,
    });
    const decision = result.needed
      ? `pg_rewind: rewound from ${primary} in ${result.ms} ms`
      : `pg_rewind: no rewind required (its WAL is part of ${primary}'s history)`;
    state.decide('rejoin', decision);
    log.info({ from: primary, ...result }, 'rejoining as a replica after pg_rewind');
    ctx.events.record(
      'Normal',
      EVENT_REASON.rewound,
      `${config.podName} rejoins as a replica of ${primary}: ${decision}`,
    );
  } catch (error) {
    const why = ctx.redactor.describe(error).slice(0, 300);
    log.error({ err: error, from: primary }, 'pg_rewind failed; cloning the new primary instead');
    ctx.events.record(
      'Warning',
      EVENT_REASON.rewindFailed,
      `${config.podName}: pg_rewind from ${primary} failed: ${why}`,
    );
    const aside = await setAside(config.pgdata);
    state.setPhase(`${why}: re-cloning ${primary} (pg_rewind failed)`);
    if (!(await cloneFromPrimary(ctx, signal))) return undefined;
    const decision = `re-cloned from ${primary}: pg_rewind failed (${why}); the diverged data directory is kept at ${aside}`;
    state.decide('rejoin', decision);
    ctx.events.record('Warning', EVENT_REASON.recloned, `${config.podName}: ${decision}`);
  }
  // pg_rewind copies the source's configuration files: the agent's own go back before the start.
  ctx.files.setPrimary(undefined, names.slot(config.podName));
  return { mode: 'follow' };
}
