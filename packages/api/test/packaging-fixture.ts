/** A small operator for the packaging tests: a Gizmo resource whose controller owns ConfigMaps and Deployments. */
import { controller } from '@kanri/runtime';
import { z } from 'zod';
import { defineOperator, defineResource } from '../src/index.js';

export const Gizmo = defineResource({
  group: 'packaging-test.kanri.dev',
  kind: 'Gizmo',
  versions: {
    v1: {
      spec: z.object({ size: z.number().int().min(1) }),
      status: z.object({ ready: z.boolean().optional() }),
    },
  },
});

export const gizmos = controller(Gizmo.apiVersion, Gizmo.kind)
  .owns('v1', 'ConfigMap')
  .owns('apps/v1', 'Deployment')
  .reconcile(async () => undefined);

export const gizmoOperator = defineOperator({
  name: 'gizmo-operator',
  image: 'registry.example/gizmo-operator:1.4.2',
  resources: [Gizmo],
  controllers: [gizmos],
});
