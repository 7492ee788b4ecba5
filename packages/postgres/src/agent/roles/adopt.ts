/**
 * The start of an agent whose keeper kept postgres running (the previous agent process died):
 * asks postgres its role and applies plan/adoption-plan.ts. Resolves the first mode when postgres
 * is kept, or 'boot' when the usual boot must run (postgres stopped by then).
 */
import { ROLE } from '../../contract/index.js';
import type { AgentContext, Transition } from '../context.js';
import type { WatchdogStatus } from '../keeper/protocol.js';
import { planAdoption } from '../plan/adoption-plan.js';
import { untilAccepting } from '../retry.js';

/** How long a kept postgres may take to answer: a running one answers at once. */
const ANSWER_WITHIN_MS = 5_000;

export async function adoptKept(
  ctx: AgentContext,
  signal: AbortSignal,
  input: {
    readonly leaseHolder: string | undefined;
    readonly restorePending: boolean;
    readonly watchdog: WatchdogStatus;
  },
): Promise<Transition | 'boot'> {
  const { postgres, config, state, log } = ctx;
  const plan = planAdoption({
    postgresRunning: postgres.running,
    inRecovery: postgres.running ? await inRecovery(ctx, signal) : undefined,
    watchdog: input.watchdog,
    leaseHolder: input.leaseHolder,
    self: config.podName,
    restorePending: input.restorePending,
  });
  log.info(
    { plan: plan.action, pid: postgres.pid ?? null, ...('why' in plan ? { why: plan.why } : {}) },
    'adoption plan',
  );
  switch (plan.action) {
    case 'lead':
      // The watchdog stays armed with the last agent's deadline: leading renews it, or it fires.
      postgres.adopt();
      state.boot(ROLE.primary);
      return { mode: 'lead' };
    case 'follow':
      postgres.adopt();
      postgres.disarmWatchdog();
      state.boot(ROLE.replica);
      return { mode: 'follow' };
    case 'stop':
      await postgres.stop('fast', 10_000);
      postgres.disarmWatchdog();
      return 'boot';
    case 'boot':
      // A fired watchdog would refuse even a standby's start; a new leadership arms it again.
      postgres.disarmWatchdog();
      return 'boot';
  }
}

async function inRecovery(ctx: AgentContext, signal: AbortSignal): Promise<boolean | undefined> {
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(ANSWER_WITHIN_MS)]);
  await untilAccepting(ctx.db, bounded);
  try {
    const [row] = await ctx.db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    return row?.r;
  } catch {
    return undefined;
  }
}
