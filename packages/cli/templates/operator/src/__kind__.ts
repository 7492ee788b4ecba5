/** The __Kind__ custom resource, declared once: its TypeScript types and its CRD both come from here. */
import { defineResource } from '@kanri/api';
import { z } from 'zod';

const condition = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.number().int().optional(),
});

export const __Kind__ = defineResource({
  group: '__group__',
  kind: '__Kind__',
  description: 'A __Kind__ asks the __name__ operator for a ConfigMap holding its message.',
  versions: {
    v1alpha1: {
      spec: z
        .object({
          message: z.string().min(1).max(256).describe('The text the operator writes into the ConfigMap.'),
          repeat: z.number().int().min(1).max(100).default(1).describe('How many lines of the message to write.'),
        })
        // A CEL rule: checked by the API server, so a bad object is refused before any reconcile sees it.
        .meta({
          'x-kubernetes-validations': [
            {
              rule: 'self.message.size() * self.repeat <= 1024',
              message: 'the message repeated `repeat` times must fit in 1024 characters',
              fieldPath: '.repeat',
            },
          ],
        }),
      status: z.object({
        observedGeneration: z.number().int().optional(),
        configMap: z.string().optional().describe('The ConfigMap holding the message.'),
        conditions: z.array(condition).optional(),
      }),
      printerColumns: [
        { name: 'Message', type: 'string', jsonPath: '.spec.message' },
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  },
});

/** A __Kind__ as the API server returns it (defaults applied). */
export type __Kind__ = typeof __Kind__.$object;
