/**
 * Cloning the primary with pg_basebackup (a new replica, or a former primary whose rewind
 * failed): waits until a primary holds the Lease and reports ready, then clones through this
 * replica's own slot. Failures back off with the shared Backoff and try again.
 */
import { holderOf } from '@kanri/runtime';
import { Backoff, sleepUnlessAborted } from '@kanri/timing';
import { memberServerName, names } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { leaseTimings } from '../lease-timings.js';
import { type BootstrapContext, basebackup } from '../postgres/bootstrap.js';

export function bootstrapContext(ctx: AgentContext, signal: AbortSignal): BootstrapContext {
  return {
    pgBin: ctx.pgBin,
    pgdata: ctx.config.pgdata,
    runDir: ctx.config.runDir,
    log: ctx.log,
    redactor: ctx.redactor,
    signal,
  };
}

/** True once PGDATA holds a clone of the primary; false if `signal` aborted first. */
export async function cloneFromPrimary(ctx: AgentContext, signal: AbortSignal): Promise<boolean> {
  const { config, view, state, log } = ctx;
  const { retryPeriodMs } = leaseTimings(ctx);
  const backoff = new Backoff({ initialMs: 2 * retryPeriodMs, maxMs: Math.min(16 * retryPeriodMs, 30_000), jitter: 0 });
  while (!signal.aborted) {
    let delayMs = retryPeriodMs;
    try {
      const lease = view.lease.view ?? (await view.lease.refresh(signal));
      const leader = view.leader(holderOf(lease));
      if (!leader.holder || !leader.podIP || leader.holder === config.podName) {
        state.setPhase('waiting for a primary to clone (nobody holds the leader Lease)');
      } else if (!leader.ready) {
        // Trying now would fail and back off; the primary reports ready within seconds.
        state.setPhase(`waiting for the primary ${leader.holder} to be ready before cloning it`);
      } else {
        state.setPhase(`cloning the primary ${leader.holder} (pg_basebackup)`);
        const started = performance.now();
        await basebackup(bootstrapContext(ctx, signal), {
          target: {
            ip: leader.podIP,
            serverName: memberServerName(config.cluster, config.namespace),
            tls: ctx.files.tls,
          },
          slot: names.slot(config.podName),
          applicationName: config.podName,
          replicationPassword: config.replicationPassword,
        });
        log.info({ ms: Math.round(performance.now() - started), from: leader.holder }, 'pg_basebackup done');
        return true;
      }
    } catch (error) {
      if (signal.aborted) return false;
      delayMs = backoff.next();
      state.setPhase(`cannot clone the primary yet: ${ctx.redactor.describe(error).slice(0, 200)}`);
      log.warn({ err: error, attempt: backoff.attempt, retryInMs: delayMs }, 'cannot clone the primary yet; retrying');
    }
    await sleepUnlessAborted(delayMs, signal);
  }
  return false;
}
