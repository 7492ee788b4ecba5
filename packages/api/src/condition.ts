/**
 * The standard Kubernetes condition (metav1.Condition) as a zod schema, for a status's
 * `conditions`, and its type: what @kanri/runtime's setCondition reads and returns, so a status
 * built from this schema takes its result without a cast.
 */
import { z } from 'zod';

/**
 * One condition: `status` is `True`, `False` or `Unknown`, as the API server requires of metav1.Condition.
 *
 * @example
 * ```ts
 * const status = z.object({ conditions: z.array(conditionSchema).optional() });
 * ```
 */
export const conditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.number().int().optional(),
});

export type Condition = z.output<typeof conditionSchema>;
