/**
 * Hands a new PGO switchover trigger to Kanri's switchover (pgo-trigger-plan.ts): one merge patch
 * sets the request and records the value served, so neither exists without the other.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION } from '../../contract/index.js';
import type { StepOutcome } from '../step-outcome.js';
import { PGO_TRIGGER_SWITCHOVER, planPgoTrigger } from './pgo-trigger-plan.js';

export async function reconcilePgoTrigger(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'resource' | 'event' | 'log' | 'signal'>,
): Promise<StepOutcome> {
  const annotations = cluster.metadata?.annotations ?? {};
  const served = annotations[ANNOTATION.pgoSwitchoverServed];
  const switchover = cluster.spec.patroni?.switchover;
  const step = planPgoTrigger({
    enabled: switchover?.enabled ?? false,
    ...(switchover?.targetInstance ? { targetInstance: switchover.targetInstance } : {}),
    ...(annotations[PGO_TRIGGER_SWITCHOVER] !== undefined ? { trigger: annotations[PGO_TRIGGER_SWITCHOVER] } : {}),
    ...(served !== undefined ? { served } : {}),
    ...(annotations[ANNOTATION.switchover] !== undefined ? { pending: annotations[ANNOTATION.switchover] } : {}),
  });
  const status = served !== undefined ? { patroni: { switchover: served } } : {};
  if (!step) return { status };
  ctx.log.info({ trigger: step.served, to: step.request }, "switching over on PGO's trigger annotation");
  await ctx.resource.patch(
    cluster.metadata?.name ?? '',
    {
      metadata: {
        annotations: { [ANNOTATION.switchover]: step.request, [ANNOTATION.pgoSwitchoverServed]: step.served },
      },
    },
    { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
  );
  await ctx.event(
    'Normal',
    'SwitchoverRequested',
    `${PGO_TRIGGER_SWITCHOVER}=${step.served}: switching over to ${step.request === '*' ? 'the best replica' : step.request}`,
  );
  return { status: { patroni: { switchover: step.served } } };
}
