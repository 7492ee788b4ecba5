/**
 * The operator's gate on its admission policies (policy-presence.ts): it reads them through the
 * API, at most every few seconds for every cluster at once, and a cluster whose policies are not
 * in force gets the `AdmissionPolicies` condition saying which and why, and no new Pods; the
 * reconcile looks again shortly, so installing them lets the cluster proceed.
 */
import { admissionPolicyCheckFromEnv, OPERATOR_ENV } from '@kanri/api';
import { ForbiddenError, isNotFound, type KubeClient, UnknownKindError } from '@kanri/client';
import type { ConditionInput, ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import type { StepOutcome } from '../step-outcome.js';
import { type Observed, observedKey, type PolicyProblem, policyProblem } from './policy-presence.js';

export const ADMISSION_CONDITION = 'AdmissionPolicies';
/** How long one reading serves every cluster's reconcile. */
const FRESH_MS = 5_000;
/** How soon a cluster waiting for its policies looks again. */
export const POLICY_RECHECK_MS = 10_000;

let last: { readonly at: number; readonly problem: PolicyProblem | undefined } | undefined;
let reading: Promise<PolicyProblem | undefined> | undefined;

async function observe(client: KubeClient, object: Record<string, unknown>, signal: AbortSignal): Promise<Observed> {
  const { name } = object.metadata as { name: string };
  try {
    return { object: await client.resource(String(object.apiVersion), String(object.kind)).get(name, { signal }) };
  } catch (error) {
    if (isNotFound(error)) return 'missing';
    if (error instanceof ForbiddenError) return 'forbidden';
    if (error instanceof UnknownKindError) return 'unserved';
    throw error;
  }
}

/** The admission policies the operator installs, for the namespace it runs in (undefined: its default). */
export type ExpectedPolicies = (namespace: string | undefined) => readonly Record<string, unknown>[];

let expectedPolicies: ExpectedPolicies | undefined;

/**
 * Tells the gate which policies to look for. The operator's definition does, once it is defined:
 * the policies derive from the whole definition, controllers included, so this module (which the
 * controller imports) cannot import the definition without an import circle.
 *
 * @example
 * ```ts
 * expectPolicies((namespace) => postgresOperator.policies({ namespace: namespace ?? postgresOperator.namespace }));
 * ```
 */
export function expectPolicies(policies: ExpectedPolicies): void {
  expectedPolicies = policies;
  last = undefined;
}

async function read(client: KubeClient, signal: AbortSignal): Promise<PolicyProblem | undefined> {
  // Fail closed: a controller running without its operator's definition knows of no policy in force.
  if (!expectedPolicies)
    return { reason: 'PolicyUnreadable', message: "the operator's definition named no admission policies to check" };
  const expected = expectedPolicies(process.env[OPERATOR_ENV.podNamespace] || undefined);
  const observed = new Map<string, Observed>();
  for (const object of expected) {
    const { name } = object.metadata as { name: string };
    observed.set(observedKey(String(object.kind), name), await observe(client, object, signal));
  }
  return policyProblem(expected, observed, admissionPolicyCheckFromEnv(process.env) === 'installed');
}

/**
 * Why the operator's admission policies are not in force, or undefined when they are.
 *
 * @example
 * ```ts
 * const problem = await admissionPolicyProblem(ctx.client, ctx.signal);
 * ```
 */
export async function admissionPolicyProblem(
  client: KubeClient,
  signal: AbortSignal,
): Promise<PolicyProblem | undefined> {
  if (last && performance.now() - last.at < FRESH_MS) return last.problem;
  reading ??= read(client, signal).finally(() => {
    reading = undefined;
  });
  const problem = await reading;
  last = { at: performance.now(), problem };
  return problem;
}

/** The condition for `problem` (True, `InForce`, when there is none). */
export function admissionCondition(problem: PolicyProblem | undefined, observedGeneration?: number): ConditionInput {
  return {
    type: ADMISSION_CONDITION,
    status: problem ? 'False' : 'True',
    reason: problem?.reason ?? 'InForce',
    message: problem?.message ?? "the operator's admission policies are installed and deny",
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}

/**
 * The gate of `cluster`'s reconcile: with its policies in force, the `AdmissionPolicies`
 * condition saying so; without, a halt short of creating anything, with the condition saying why
 * (and an Event when the reason is new) and a look again soon.
 *
 * @example
 * ```ts
 * const gate = await admissionGate(cluster, ctx);
 * if (gate.halt) return haltReconcile(cluster, ctx, gate);
 * ```
 */
export async function admissionGate(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
): Promise<StepOutcome> {
  const problem = await admissionPolicyProblem(ctx.client, ctx.signal);
  const condition = admissionCondition(problem, cluster.metadata?.generation);
  if (!problem) return { conditions: [condition] };
  const previous = cluster.status?.conditions?.find((c) => c.type === ADMISSION_CONDITION);
  if (previous?.status !== 'False' || previous.message !== problem.message) {
    ctx.log.warn({ reason: problem.reason }, problem.message);
    await ctx.event('Warning', problem.reason, problem.message);
  }
  return { halt: problem.reason, conditions: [condition], requeueAfterMs: POLICY_RECHECK_MS };
}
