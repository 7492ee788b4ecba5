/**
 * The Website operator as one value (`defineOperator`), for `kanri dev run` and packaging. The
 * Website resource is declared here with zod, matching the hand-written `website-crd.ts` that
 * `main.ts` installs.
 */
import { defineOperator, defineResource } from '@kanri/api';
import { z } from 'zod';
import { websiteController } from './operator.js';

export const Website = defineResource({
  group: 'example.kanri.dev',
  kind: 'Website',
  shortNames: ['site'],
  versions: {
    v1: {
      spec: z.object({
        html: z.string().describe('The page to serve'),
        replicas: z.number().int().min(1).default(2).describe('How many nginx Pods serve it'),
      }),
      status: z.looseObject({}),
      printerColumns: [
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
      ],
    },
  },
});

export default defineOperator({
  name: 'website-operator',
  image: 'ghcr.io/example/website-operator:0.1.0',
  resources: [Website],
  controllers: [websiteController],
});
