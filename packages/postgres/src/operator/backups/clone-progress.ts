/**
 * Whether a clone still restores from its source: until it is initialised, and while a Pod of it
 * still runs the clone's restore (postgres then still fetches WAL from the source's archive). Pure.
 */
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { RestoreSource } from '../../contract/index.js';
import { readReport } from '../cluster-status.js';

/**
 * @example
 * ```ts
 * isCloneRestoring(source, initialised, instancePods); // true until the first instance reports its restore succeeded
 * ```
 */
export function isCloneRestoring(
  source: RestoreSource | undefined,
  initialised: boolean,
  instancePods: readonly Pod[],
): boolean {
  if (!source) return false;
  if (!initialised) return true;
  return instancePods.some((p) => {
    const restore = readReport(p)?.restore;
    return restore?.id === source.id && restore.result === 'running';
  });
}
