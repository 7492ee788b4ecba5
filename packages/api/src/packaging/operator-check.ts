/** Tells whether an imported value is an OperatorDefinition, and if not, what it lacks. Pure. */
import type { OperatorDefinition } from '../operator.js';

/**
 * What keeps `value` from being an OperatorDefinition (`"missing controllers"`), or undefined
 * when it is one. For loaders that import a user's module and must say what is wrong with it.
 *
 * @example
 * ```ts
 * const problem = operatorDefinitionProblem(module.default);
 * if (problem) throw new Error(`dist/src/operator.js: default export is not an OperatorDefinition (${problem})`);
 * ```
 */
export function operatorDefinitionProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return `it is ${value === null ? 'null' : typeof value}`;
  const v = value as Record<string, unknown>;
  for (const field of ['name', 'image', 'namespace'] as const) {
    if (typeof v[field] !== 'string') return `missing ${field}`;
  }
  for (const field of ['controllers', 'resources'] as const) {
    if (!Array.isArray(v[field])) return `missing ${field}`;
  }
  for (const method of ['crds', 'rbac', 'policies', 'policyNames', 'webhookManifests', 'manager'] as const) {
    if (typeof v[method] !== 'function') return `missing ${method}() (make it with defineOperator)`;
  }
  return undefined;
}

/** Narrows `value` to an OperatorDefinition. */
export const isOperatorDefinition = (value: unknown): value is OperatorDefinition =>
  operatorDefinitionProblem(value) === undefined;
