/**
 * Holds the agent's start (before boot runs or adopts postgres) until it has the cluster's
 * pg_hba.conf and parameters and, unless ENV.tlsOptional, its TLS material: a Pod recreated while
 * the operator's ConfigMap or TLS Secret is missing (deleted, or not readable yet) waits, reporting
 * why on its Pod, rather than starting postgres with weaker rules or without TLS
 * (plan/material-plan.ts). An agent restarted in the same Pod has both kept in its run volume.
 */
import { Wakeup } from '@kanri/timing';
import { EVENT_REASON, ROLE } from '../contract/index.js';
import type { AgentContext } from './context.js';
import { startBlockedBy } from './plan/material-plan.js';

/** The followers' word on what the agent lacks (undefined: it has it). */
export interface MissingMaterial {
  readonly config: () => string | undefined;
  readonly tls: () => string | undefined;
}

/** How often the gate looks again besides the changes it is woken by (the TLS files are written after the Secret's event). */
const RECHECK_MS = 500;

/**
 * Resolves once postgres may start, or when `signal` aborts (check it).
 *
 * @example
 * ```ts
 * await waitForMaterial(ctx, { config: () => configFollower.missing, tls: () => tlsFollower.missing }, signal);
 * if (!signal.aborted) await boot(ctx, signal, watchdog);
 * ```
 */
export async function waitForMaterial(ctx: AgentContext, missing: MissingMaterial, signal: AbortSignal): Promise<void> {
  const { view, state, log, events, config } = ctx;
  const wakeup = new Wakeup();
  const offs = [view.onConfigChange(() => wakeup.wake()), view.onTlsChange(() => wakeup.wake())];
  let reported: string | undefined;
  try {
    while (!signal.aborted) {
      const why = startBlockedBy({ config: missing.config(), tls: missing.tls(), tlsOptional: config.tlsOptional });
      if (why === undefined) {
        if (reported) {
          log.info('the cluster configuration and TLS material are here; starting');
          state.setPhase('starting');
        }
        return;
      }
      if (why !== reported) {
        log.warn({ why }, 'not starting postgres yet');
        // The reporter writes nothing before a role is known; the instance reports as a replica
        // that does not serve until boot decides what it is.
        if (reported === undefined) {
          state.boot(ROLE.replica);
          events.record('Warning', EVENT_REASON.waitingForMaterial, `${config.podName}: ${why}`);
        }
        state.setPhase(why, { report: true });
        reported = why;
      }
      await wakeup.wait(RECHECK_MS, signal);
    }
  } finally {
    for (const off of offs) off();
  }
}
