/**
 * Status conditions (metav1.Condition): set one, keeping lastTransitionTime unless its status
 * really changed, and compare statuses so a write happens only when something changed. Pure.
 */
import type { Condition } from 'kubernetes-types/meta/v1.js';

export type { Condition };

export interface ConditionInput {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  /** CamelCase, machine-readable: `Ready`, `WaitingForReplicas`. */
  readonly reason: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

/** Kubernetes' MicroTime/Time format without fractional seconds, as conditions use. */
export function conditionTime(now: Date = new Date()): string {
  return `${now.toISOString().slice(0, 19)}Z`;
}

/** A condition as setCondition writes it: its status is one of the three Kubernetes allows. */
export type SetCondition = Condition & { status: ConditionInput['status'] };

/**
 * Returns `conditions` with `input` set; lastTransitionTime moves only when the status flips.
 * The others come back as they were typed, so a status whose conditions have a narrower type
 * (e.g. @kanri/api's conditionSchema) takes the result as it is.
 */
export function setCondition<C extends Condition = Condition>(
  conditions: readonly C[] | undefined,
  input: ConditionInput,
  now: Date = new Date(),
): (C | SetCondition)[] {
  const existing = conditions?.find((c) => c.type === input.type);
  const next: SetCondition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message ?? '',
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
    lastTransitionTime: existing && existing.status === input.status ? existing.lastTransitionTime : conditionTime(now),
  };
  return [...(conditions ?? []).filter((c) => c.type !== input.type), next];
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Structural equality of JSON values, ignoring key order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ak = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ak.length !== bk.length) return false;
  return ak.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
