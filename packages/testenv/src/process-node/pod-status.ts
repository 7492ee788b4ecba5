/** A Pod's status from what its containers are doing, following the kubelet's rules. Pure. */
import type { ContainerStatus, Pod, PodCondition, PodStatus } from 'kubernetes-types/core/v1.js';

export type Phase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/**
 * The kubelet's phase rule: Pending while initialising or while a container has not started
 * yet; Running while one runs (or will be restarted); once all have stopped, Succeeded if all
 * exited 0, Failed if any did not and the policy does not restart it.
 */
export function podPhase(input: {
  readonly restartPolicy: string;
  readonly initialized: boolean;
  readonly initFailed: boolean;
  readonly containers: readonly ContainerStatus[];
}): Phase {
  if (input.initFailed && input.restartPolicy === 'Never') return 'Failed';
  if (!input.initialized) return 'Pending';
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const status of input.containers) {
    if (status.state?.running) running++;
    else if (status.state?.terminated) {
      stopped++;
      if (status.state.terminated.exitCode === 0) succeeded++;
    } else if (status.lastState?.terminated) stopped++;
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (input.restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (input.restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(
  previous: readonly PodCondition[],
  type: string,
  status: boolean,
  now: string,
  reason?: string,
  message?: string,
): PodCondition {
  const value = status ? 'True' : 'False';
  const before = previous.find((c) => c.type === type);
  return {
    type,
    status: value,
    lastTransitionTime: before?.status === value && before.lastTransitionTime ? before.lastTransitionTime : now,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

export interface PodStatusInput {
  readonly pod: Pod;
  readonly podIP: string | undefined;
  readonly hostIP: string;
  readonly startTime: string;
  /** True once the sandbox (address, volumes, credentials) is ready. */
  readonly sandboxReady: boolean;
  readonly initialized: boolean;
  readonly initFailed: boolean;
  readonly initContainerStatuses: readonly ContainerStatus[];
  readonly containerStatuses: readonly ContainerStatus[];
  /** A terminal phase reached before stays (a Pod never leaves Succeeded or Failed). */
  readonly previousPhase?: string;
  readonly now: string;
}

/** The status to write: phase, conditions (other writers' condition types are left alone), IPs and container statuses. */
export function buildPodStatus(input: PodStatusInput): PodStatus {
  const { pod, now } = input;
  const previous = pod.status?.conditions ?? [];
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const terminal = input.previousPhase === 'Succeeded' || input.previousPhase === 'Failed';
  const phase: Phase = terminal
    ? (input.previousPhase as Phase)
    : podPhase({
        restartPolicy,
        initialized: input.initialized,
        initFailed: input.initFailed,
        containers: input.containerStatuses,
      });
  const done = phase === 'Succeeded' || phase === 'Failed';
  const unready = input.containerStatuses.filter((c) => !c.ready).map((c) => c.name);
  const containersReady = !done && unready.length === 0 && input.containerStatuses.length > 0;
  const gates = (pod.spec?.readinessGates ?? []).map((g) => g.conditionType);
  const gatesMissing = gates.filter((type) => !previous.some((c) => c.type === type && c.status === 'True'));
  const ready = containersReady && gatesMissing.length === 0;
  const notReadyMessage = unready.length > 0 ? `containers with unready status: [${unready.join(' ')}]` : undefined;
  const pendingInit = input.initContainerStatuses
    .filter((c) => !(c.state?.terminated?.exitCode === 0))
    .map((c) => c.name);
  const conditions: PodCondition[] = [
    condition(previous, 'PodReadyToStartContainers', input.sandboxReady && !done, now),
    condition(
      previous,
      'Initialized',
      input.initialized,
      now,
      input.initialized ? undefined : 'ContainersNotInitialized',
      input.initialized ? undefined : `containers with incomplete status: [${pendingInit.join(' ')}]`,
    ),
    condition(
      previous,
      'ContainersReady',
      containersReady,
      now,
      containersReady ? undefined : done ? 'PodCompleted' : 'ContainersNotReady',
      containersReady || done ? undefined : notReadyMessage,
    ),
    condition(
      previous,
      'Ready',
      ready,
      now,
      ready
        ? undefined
        : done
          ? 'PodCompleted'
          : gatesMissing.length > 0 && containersReady
            ? 'ReadinessGatesNotReady'
            : 'ContainersNotReady',
      ready || done
        ? undefined
        : containersReady
          ? `corresponding condition of pod readiness gate "${gatesMissing[0]}" does not exist.`
          : notReadyMessage,
    ),
  ];
  if (!previous.some((c) => c.type === 'PodScheduled')) conditions.push(condition(previous, 'PodScheduled', true, now));
  return {
    phase,
    conditions,
    hostIP: input.hostIP,
    hostIPs: [{ ip: input.hostIP }],
    ...(input.podIP ? { podIP: input.podIP, podIPs: [{ ip: input.podIP }] } : {}),
    startTime: input.startTime,
    qosClass: pod.status?.qosClass,
    ...(input.initContainerStatuses.length > 0 ? { initContainerStatuses: [...input.initContainerStatuses] } : {}),
    containerStatuses: [...input.containerStatuses],
  };
}
