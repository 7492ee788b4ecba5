/**
 * Carries out switchover-plan.ts's step: writes or removes the orders on the instance Pods,
 * removes a served request from the cluster, and records the Events. The agents do the
 * switchover itself (agent/roles/switchover.ts).
 */
import { randomBytes } from 'node:crypto';
import { ignoreNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster, PostgresClusterStatus } from '../../api/postgres-cluster.js';
import { ANNOTATION } from '../../contract/index.js';
import { readReport } from '../cluster-status.js';
import { planSwitchover, type SwitchoverInProgress } from './switchover-plan.js';

/** Unique per request: the time, and a random part for two requests within one millisecond. */
function newToken(): string {
  return `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/**
 * The switchover request's next step, given the status computed so far (its primary and
 * instances); resolves what `status.switchover` is to say.
 */
export async function reconcileSwitchover(
  cluster: PostgresCluster,
  status: PostgresClusterStatus,
  pods: readonly Pod[],
  ctx: ReconcileContext<PostgresCluster>,
): Promise<SwitchoverInProgress | undefined> {
  const namespace = cluster.metadata?.namespace;
  const step = planSwitchover({
    request: cluster.metadata?.annotations?.[ANNOTATION.switchover],
    known: cluster.status?.switchover,
    primary: status.primary,
    replicas: (status.instances ?? []).filter((i) => i.role === 'replica').map((i) => i.name),
    members: pods.map((pod) => {
      const order = pod.metadata?.annotations?.[ANNOTATION.switchoverOrder];
      const served = readReport(pod)?.switchoverServed;
      return {
        name: pod.metadata?.name ?? '',
        ...(order !== undefined ? { order } : {}),
        ...(served !== undefined ? { served } : {}),
      };
    }),
    newToken: newToken(),
  });
  const podOrder = (name: string, value: string | null) =>
    ctx.client
      .resource<Pod>('v1', 'Pod')
      .patch(
        name,
        { metadata: { annotations: { [ANNOTATION.switchoverOrder]: value } } },
        { namespace, type: 'merge', signal: ctx.signal },
      );
  // The request before its order: a request standing without its order would be a new one.
  if (step.clearRequest)
    await ctx.resource.patch(
      cluster.metadata?.name ?? '',
      { metadata: { annotations: { [ANNOTATION.switchover]: null } } },
      { namespace, type: 'merge', signal: ctx.signal },
    );
  for (const name of step.clearOrders) await ignoreNotFound(podOrder(name, null));
  if (step.order) {
    ctx.log.info({ pod: step.order.pod, order: step.order.value }, 'ordering a switchover');
    await podOrder(step.order.pod, step.order.value);
  }
  for (const event of step.events) await ctx.event(event.type, event.reason, event.message);
  return step.status;
}
