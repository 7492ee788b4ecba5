/** Why an instance's container will not start by itself, from its Pod's status. Pure. */
import type { Pod } from 'kubernetes-types/core/v1.js';

/** Waiting reasons of a container that will not start by itself. */
const CANNOT_RUN = /^(ErrImagePull|ImagePullBackOff|InvalidImageName|CrashLoopBackOff|CreateContainer(Config)?Error)$/;

/**
 * `<reason>: <message>` of the first container stuck in one of those reasons, else undefined.
 *
 * @example
 * ```ts
 * containerFailure(pod); // 'ErrImagePull: image ghcr.io/kanri-dev/postgres:13 is not mapped on node-1'
 * ```
 */
export function containerFailure(pod: Pod): string | undefined {
  const waiting = pod.status?.containerStatuses?.find(
    (c) => c.state?.waiting && CANNOT_RUN.test(c.state.waiting.reason ?? ''),
  )?.state?.waiting;
  return waiting ? `${waiting.reason}: ${waiting.message ?? ''}`.trim() : undefined;
}
