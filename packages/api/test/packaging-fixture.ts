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

/**
 * The same operator, narrowing its own writes to the Gizmos' objects and installing a policy of
 * its own keyed on its identity: the packaging of admission policies.
 */
export const ownedGizmoOperator = defineOperator({
  name: 'owned-gizmo-operator',
  image: 'registry.example/owned-gizmo-operator:1.0.0',
  resources: [Gizmo],
  controllers: [gizmos],
  ownership: { label: 'packaging-test.kanri.dev/gizmo', owner: { apiVersion: Gizmo.apiVersion, kind: Gizmo.kind } },
  admissionPolicies: (install) => [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'gizmo-configmaps.packaging-test.kanri.dev' },
      spec: {
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['configmaps'] }],
        },
        matchConditions: [
          { name: 'not-the-operator', expression: `request.userInfo.username != '${install.username}'` },
        ],
        validations: [
          {
            expression:
              "!has(oldObject.metadata.labels) || !('packaging-test.kanri.dev/gizmo' in oldObject.metadata.labels)",
          },
        ],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'gizmo-configmaps.packaging-test.kanri.dev' },
      spec: { policyName: 'gizmo-configmaps.packaging-test.kanri.dev', validationActions: ['Deny'] },
    },
  ],
});
