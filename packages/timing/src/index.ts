/**
 * @kanri/timing: the timing primitives shared by every Kanri layer (and the one MicroTime formatter
 * and the one Kubernetes quantity parser), with no dependencies, so that even the test harness
 * (which depends on no other Kanri package) uses the same rules.
 *
 * @example
 * ```ts
 * import { Backoff, Wakeup } from '@kanri/timing';
 * ```
 */
export { Backoff, type BackoffOptions, backoffCeiling, backoffDelay } from './backoff.js';
export { formatMicroTime } from './micro-time.js';
export {
  NON_NEGATIVE_QUANTITY_PATTERN,
  parseQuantity,
  QUANTITY_PATTERN,
  quantityMilliValue,
  quantityNanos,
  quantityValue,
} from './quantity.js';
export { sleepUnlessAborted, Wakeup } from './wakeup.js';
