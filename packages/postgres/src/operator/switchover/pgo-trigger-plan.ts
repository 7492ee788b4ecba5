/**
 * PGO's way to ask for a switchover, served by Kanri's: with `spec.patroni.switchover.enabled`, a
 * new value of the cluster annotation `postgres-operator.crunchydata.com/trigger-switchover`
 * becomes one Kanri switchover request (ANNOTATION.switchover) to `targetInstance`, or to the best
 * replica without one. The value served is recorded beside the request, in the same write
 * (ANNOTATION.pgoSwitchoverServed), so a value is served once even if the operator stops between
 * writes; `status.patroni.switchover` shows it, as PGO's does. Pure.
 */

/** PGO's annotation. */
export const PGO_TRIGGER_SWITCHOVER = 'postgres-operator.crunchydata.com/trigger-switchover';

export interface PgoTriggerInput {
  readonly enabled: boolean;
  readonly targetInstance?: string;
  /** PGO_TRIGGER_SWITCHOVER's value, if set. */
  readonly trigger?: string;
  /** The last trigger value handed to Kanri's switchover. */
  readonly served?: string;
  /** A Kanri switchover request that stands (ANNOTATION.switchover), if any. */
  readonly pending?: string;
}

/** The annotations to write, when a trigger value is to be served now. */
export interface PgoTriggerStep {
  readonly request: string;
  readonly served: string;
}

/**
 * The request to make for `input`, or undefined: switchovers not enabled, no trigger, its value
 * already served, or another switchover still standing (the value is served after it).
 *
 * @example
 * ```ts
 * planPgoTrigger({ enabled: true, trigger: 'monday', served: 'sunday' }); // { request: '*', served: 'monday' }
 * ```
 */
export function planPgoTrigger(input: PgoTriggerInput): PgoTriggerStep | undefined {
  if (!input.enabled || input.trigger === undefined || input.trigger === input.served) return undefined;
  if (input.pending !== undefined) return undefined;
  return { request: input.targetInstance ?? '*', served: input.trigger };
}
