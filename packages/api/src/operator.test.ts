import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controller } from '@kanri/runtime';
import { z } from 'zod';
import { defineResource } from './define-resource.js';
import { defineOperator } from './operator.js';
import { watchNamespaceFromEnv } from './packaging/runtime-env.js';

const Widget = defineResource({
  group: 'op-test.kanri.dev',
  kind: 'Widget',
  versions: { v1: { spec: z.object({ size: z.number().int() }) } },
});
const widgets = controller(Widget.apiVersion, 'Widget')
  .owns('v1', 'ConfigMap')
  .reconcile(async () => undefined);

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
const rulesOf = (objects: Record<string, unknown>[], kind: string, name: string) =>
  (objects.find((o) => o.kind === kind && (o.metadata as { name: string }).name === name)?.rules ?? []) as Rule[];

describe('defineOperator', () => {
  it('refuses a name that is not a DNS-1123 label, naming it', () => {
    assert.throws(
      () => defineOperator({ name: 'Bad_Name', controllers: [widgets as never] }),
      /"Bad_Name" must be a DNS-1123 label/,
    );
  });

  it('derives RBAC including what the CRD deletion guard needs, and its webhook manifests', () => {
    const op = defineOperator({ name: 'widget-operator', resources: [Widget], controllers: [widgets as never] });
    assert.equal(op.namespace, 'widget-operator-system');
    assert.deepEqual(
      op.crds().map((c) => c.metadata.name),
      ['widgets.op-test.kanri.dev'],
    );
    const rbac = op.rbac();
    const cluster = rulesOf(rbac, 'ClusterRole', 'widget-operator');
    const widgetsRule = cluster.find((r) => r.resources[0] === 'widgets');
    assert.ok(widgetsRule?.verbs.includes('list'));
    assert.deepEqual(
      cluster.find((r) => r.resources[0] === 'validatingwebhookconfigurations'),
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        verbs: ['get', 'patch'],
        resourceNames: ['widget-operator-crd-deletion-guard'],
      },
    );
    const own = rulesOf(rbac, 'Role', 'widget-operator-namespace');
    assert.ok(own.some((r) => r.resourceNames?.includes('widget-operator-webhook-cert')));
    const [service, configuration] = op.webhookManifests() as { kind: string; metadata: { name: string } }[];
    assert.equal(service?.kind, 'Service');
    assert.equal(configuration?.kind, 'ValidatingWebhookConfiguration');
    assert.equal(configuration?.metadata.name, 'widget-operator-crd-deletion-guard');
  });

  it('has no guard when namespace-scoped: Roles only, nothing cluster-wide', () => {
    const op = defineOperator({
      name: 'widget-operator',
      resources: [Widget],
      controllers: [widgets as never],
      watchNamespace: 'team-a',
    });
    assert.deepEqual(op.webhookManifests(), []);
    assert.deepEqual(
      op.rbac().filter((o) => String(o.kind).startsWith('Cluster')),
      [],
    );
  });

  it("renders a cluster-wide definition for one namespace when the install asks (the chart's watchNamespace)", () => {
    const op = defineOperator({ name: 'widget-operator', resources: [Widget], controllers: [widgets as never] });
    assert.ok(
      op.rbac().some((o) => o.kind === 'ClusterRole'),
      'cluster-wide by default, with the guard',
    );
    const scoped = op.rbac({ watchNamespace: 'team-b' });
    assert.deepEqual(
      scoped.filter((o) => String(o.kind).startsWith('Cluster')),
      [],
    );
    const role = scoped.find((o) => o.kind === 'Role' && (o.metadata as { namespace?: string }).namespace === 'team-b');
    const rules = (role as { rules: { resources: string[]; resourceNames?: string[] }[] }).rules;
    assert.ok(rules.some((r) => r.resources.includes('widgets')));
    assert.ok(
      !rules.some((r) => r.resourceNames?.includes('widget-operator-webhook-cert')),
      "the guard's rules left out",
    );
    assert.equal(watchNamespaceFromEnv({ KANRI_WATCH_NAMESPACE: ' team-b ' }), 'team-b');
    assert.equal(watchNamespaceFromEnv({ KANRI_WATCH_NAMESPACE: '' }), undefined, 'empty: every namespace');
  });
});
