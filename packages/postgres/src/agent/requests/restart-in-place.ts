/**
 * Restarts postgres in place when the operator asks (a new token in ANNOTATION.restartPostgres on
 * this Pod, taken as a restart request by agent/requests/restart-follower.ts): parameters such as
 * shared_buffers take effect only then. The Pod stays, and so does a primary's leadership (its
 * renewals go on meanwhile), so there is no failover, only a pause. The operator orders the
 * restarts across instances (operator/rollout/restart-plan.ts).
 *
 * Served by the role cycle (requests/serve-requests.ts), which owns postgres: `role` is the role's
 * signal (for a primary, its leadership), checked right before postgres starts again, so a primary
 * that lost its Lease during the restart stays stopped (fencing already ran).
 */
import { EVENT_REASON } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { untilAccepting } from '../retry.js';

/** Restarts postgres for the operator's `token`; resolves whether it did (the token is reported served then). */
export async function restartInPlace(ctx: AgentContext, role: AbortSignal, token: string): Promise<boolean> {
  const { config, log, postgres, state } = ctx;
  if (token === state.snapshot().decisions.restartServed) return true;
  if (!postgres.running || role.aborted) return false;
  const pending = await ctx.db
    .query<{ name: string }>('SELECT name FROM pg_settings WHERE pending_restart')
    .catch(() => [] as { name: string }[]);
  const why = pending.length > 0 ? `for ${pending.map((p) => p.name).join(', ')}` : 'as asked';
  log.info({ token, parameters: pending.map((p) => p.name) }, `restarting postgres in place ${why}`);
  const started = performance.now();
  await postgres.stop('fast');
  if (role.aborted) return false;
  postgres.start();
  await untilAccepting(ctx.db, role);
  if (role.aborted) return false;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  state.decide('restartServed', token);
  ctx.events.record(
    'Normal',
    EVENT_REASON.restarted,
    `${config.podName} restarted postgres in place ${why} (${seconds} s)`,
  );
  return true;
}
