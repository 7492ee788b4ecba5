/**
 * Example 03's operator as one value: the Website resource, its controller and what the operator
 * runs as. `kanri generate` packages it (CRD, RBAC, manifests, Helm chart); a `main` would run it
 * with `await (await websiteOperator.manager()).start()`.
 */
import { defineOperator, defineResource } from '@kanri/api';
import { z } from 'zod';
import { websiteController } from './operator.js';

const condition = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
  observedGeneration: z.number().int().optional(),
});

export const Website = defineResource({
  group: 'example.kanri.dev',
  kind: 'Website',
  shortNames: ['site'],
  description: 'A static web page served by nginx.',
  versions: {
    v1: {
      spec: z.object({
        html: z.string().min(1).describe('The page to serve'),
        replicas: z.number().int().min(1).default(2).describe('How many nginx Pods serve it'),
      }),
      status: z.object({
        conditions: z.array(condition).optional(),
        observedGeneration: z.number().int().optional(),
        url: z.string().optional(),
      }),
      printerColumns: [
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
      ],
    },
  },
});

export const websiteOperator = defineOperator({
  name: 'website-operator',
  image: 'ghcr.io/kanri-dev/website-operator:0.1.0',
  resources: [Website],
  controllers: [websiteController],
});

export default websiteOperator;
