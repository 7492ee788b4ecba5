/**
 * Whether a clone still restores from its source: until it is initialised, and while a Pod of it
 * still runs a restore (postgres then still fetches WAL from the source's archive, until it
 * promotes). The source's grants on its clone port and the clone's NetworkPolicy to it follow this
 * one predicate, so neither outlives the other. Pure.
 */
import type { Pod } from 'kubernetes-types/core/v1.js';
import { readPodReport } from '../../contract/index.js';

/**
 * @example
 * ```ts
 * isCloneRestoring(initialised, instancePods); // true until the first instance reports its restore succeeded
 * ```
 */
export function isCloneRestoring(initialised: boolean, instancePods: readonly Pod[]): boolean {
  if (!initialised) return true;
  return instancePods.some((p) => readPodReport(p)?.restore?.result === 'running');
}
