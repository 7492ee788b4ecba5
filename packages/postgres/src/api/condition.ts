/** The standard Kubernetes condition (metav1.Condition), shared by every status here. */
import { z } from 'zod';

export const condition = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.number().int().optional(),
});
