/**
 * Carries out the rolling update's next step (rollout-plan.ts): deletes the Pod to replace (the
 * controller recreates it from the current spec, on the same volume) or asks for a switchover
 * through the cluster's annotation, as a user would (switchover-actions.ts orders it). One step
 * per reconcile; Pod and report changes wake the controller for the next.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION, haSettings, LABEL, ROLE, readPodReport } from '../../contract/index.js';
import { parametersHash } from '../builders/postgres-config.js';
import { readReport } from '../cluster-status.js';
import { containerFailure } from '../container-failure.js';
import type { PlannedInstance } from '../instance-plan.js';
import type { StepOutcome } from '../step-outcome.js';
import { podTemplateHash } from './pod-template-hash.js';
import { planRestart } from './restart-plan.js';
import { planRollout, ROLLOUT_READY_TIMEOUT_MS, type RolloutMember, type RolloutStep } from './rollout-plan.js';

function member(
  cluster: PostgresCluster,
  instance: PlannedInstance,
  pod: Pod | undefined,
  primary: string,
  nowMs: number,
): RolloutMember {
  if (!pod) return { name: instance.name, primary: false, updated: true, ready: false, deleting: true };
  const report = readReport(pod);
  const failure = containerFailure(pod);
  const ready = report?.ready === true && !pod.metadata?.deletionTimestamp;
  const readyCondition = pod.status?.conditions?.find((c) => c.type === 'Ready');
  const since = Date.parse(readyCondition?.lastTransitionTime ?? pod.metadata?.creationTimestamp ?? '') || nowMs;
  return {
    name: instance.name,
    // The status's primary (the one ready instance serving as primary), not the role labels: right
    // after a switchover the old primary's label still says primary for a moment, and planning
    // from it asked for a second switchover away from the new primary.
    primary: instance.name === primary,
    updated: pod.metadata?.annotations?.[ANNOTATION.podTemplateHash] === podTemplateHash(cluster, instance),
    ready,
    ...(report ? { lagBytes: report.lagBytes } : {}),
    ...(failure ? { failure } : {}),
    ...(ready ? {} : { notReadySinceMs: since }),
    deleting: Boolean(pod.metadata?.deletionTimestamp),
  };
}

/**
 * Plans and takes the rollout's next step; resolves the step (for the status), or undefined when
 * no rollout can run now (shut down, not initialised, mid-failover).
 */
async function rolloutStep(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  keep: readonly PlannedInstance[],
  primary: string | undefined,
): Promise<RolloutStep | undefined> {
  if (cluster.spec.shutdown || !primary || keep.length === 0) return undefined;
  const nowMs = Date.now();
  const members = keep.map((k) =>
    member(
      cluster,
      k,
      pods.find((p) => p.metadata?.name === k.name),
      primary,
      nowMs,
    ),
  );
  const running = cluster.status?.postgresVersion;
  const wanted = cluster.spec.postgresVersion;
  if (running && Number.parseInt(running, 10) !== wanted && members.some((m) => !m.updated)) {
    return {
      phase: 'Halted',
      reason: 'MajorVersionChange',
      action: { kind: 'none' },
      message:
        Number.parseInt(running, 10) < wanted
          ? `spec.postgresVersion is ${wanted} but the cluster runs ${running}: a major upgrade stops every instance for a while, so it runs only with the annotation ${ANNOTATION.allowMajorUpgrade}=${wanted}; or set postgresVersion back`
          : `spec.postgresVersion is ${wanted} but the cluster runs ${running}: a major version cannot be downgraded; set postgresVersion back`,
      updated: members.filter((m) => m.updated).length,
      desired: members.length,
    };
  }
  const step = planRollout({
    members,
    strategy: cluster.spec.primaryUpdateStrategy ?? 'unsupervised',
    method: cluster.spec.primaryUpdateMethod ?? 'switchover',
    maximumLagBytes: haSettings(cluster.spec).maximumLagOnFailover,
    switchoverPending: Boolean(cluster.metadata?.annotations?.[ANNOTATION.switchover]),
    nowMs,
    readyTimeoutMs: ROLLOUT_READY_TIMEOUT_MS,
  });
  const { action } = step;
  if (action.kind === 'replace') {
    ctx.log.info({ instance: action.pod, phase: step.phase }, 'rolling update: replacing Pod');
    await ctx.event('Normal', 'RollingUpdate', step.message);
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name: action.pod, namespace: cluster.metadata?.namespace });
  } else if (action.kind === 'switchover') {
    ctx.log.info({ to: action.to }, 'rolling update: switching over');
    await ctx.event('Normal', 'RollingUpdate', step.message);
    await ctx.resource.patch(
      cluster.metadata?.name ?? '',
      { metadata: { annotations: { [ANNOTATION.switchover]: action.to } } },
      { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
    );
  }
  return step;
}

/**
 * Once the Pods are up to date: the next in-place restart for restart-only parameters
 * (restart-plan.ts), asked of the agent through its Pod's annotation. Resolves the step for the
 * status, or undefined when none is pending.
 */
async function restartStep(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  keep: readonly PlannedInstance[],
): Promise<RolloutStep | undefined> {
  const members = keep.flatMap((k) => {
    const pod = pods.find((p) => p.metadata?.name === k.name);
    const report = pod ? readPodReport(pod) : undefined;
    if (!pod || !report) return [];
    const requested = pod.metadata?.annotations?.[ANNOTATION.restartPostgres];
    return [
      {
        name: k.name,
        primary: pod.metadata?.labels?.[LABEL.role] === ROLE.primary,
        ready: report.ready && !pod.metadata?.deletionTimestamp,
        ...(report.pendingRestart ? { pendingRestart: report.pendingRestart } : {}),
        ...(report.controlLimits ? { controlLimits: report.controlLimits } : {}),
        ...(requested ? { requested } : {}),
        ...(report.restartServed ? { served: report.restartServed } : {}),
        ...(report.configHash ? { configHash: report.configHash } : {}),
      },
    ];
  });
  const step = planRestart(members, parametersHash(cluster));
  if (step.kind === 'idle') return undefined;
  const status = (current: string, message: string): RolloutStep => ({
    phase: 'Restarting',
    action: { kind: 'none' },
    current,
    message,
    updated: keep.length,
    desired: keep.length,
  });
  if (step.kind === 'wait') return status(step.current, step.message);
  ctx.log.info({ instance: step.pod }, step.message);
  await ctx.event('Normal', 'RestartingInstance', step.message);
  // A fresh token per request: the agent restarts once for each.
  const token = Date.now().toString(36);
  await ctx.client
    .resource<Pod>('v1', 'Pod')
    .patch(
      step.pod,
      { metadata: { annotations: { [ANNOTATION.restartPostgres]: token } } },
      { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
    );
  return status(step.pod, step.message);
}

/**
 * Takes the rolling update's next step, or once the Pods are up to date the next in-place
 * restart; resolves it as `status.rollout` and the `RolloutHalted` condition (a Warning Event
 * when it halts). Nothing when no rollout can run now.
 *
 * @example
 * ```ts
 * outcomes.push(await reconcileRollout(cluster, ctx, instancePods, plan.keep, observed.primary));
 * ```
 */
export async function reconcileRollout(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  keep: readonly PlannedInstance[],
  primary: string | undefined,
): Promise<StepOutcome> {
  const rolling = await rolloutStep(cluster, ctx, pods, keep, primary);
  if (!rolling) return {};
  const step = (rolling.phase === 'Idle' && (await restartStep(cluster, ctx, pods, keep))) || rolling;
  const { phase, current, updated, desired, message, reason } = step;
  const halted = phase === 'Halted';
  if (halted && cluster.status?.rollout?.phase !== 'Halted') await ctx.event('Warning', 'RolloutHalted', message);
  return {
    status: { rollout: { phase, ...(current ? { current } : {}), updated, desired, message } },
    conditions: [
      {
        type: 'RolloutHalted',
        status: halted ? 'True' : 'False',
        reason: halted ? (reason ?? 'Halted') : 'AsExpected',
        message: halted ? message : `${updated}/${desired} instances up to date`,
        observedGeneration: cluster.metadata?.generation,
      },
    ],
  };
}
