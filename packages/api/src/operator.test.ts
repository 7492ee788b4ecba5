import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controller } from '@kanri/runtime';
import { z } from 'zod';
import { defineResource } from './define-resource.js';
import { defineOperator } from './operator.js';
import { admissionPolicyCheckFromEnv, watchNamespaceFromEnv } from './packaging/runtime-env.js';
import { mergeRules } from './rbac.js';

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

  describe('with ownership and admission policies', () => {
    const op = defineOperator({
      name: 'widget-operator',
      resources: [Widget],
      controllers: [widgets as never],
      ownership: { label: 'op-test.kanri.dev/widget', owner: { apiVersion: Widget.apiVersion, kind: 'Widget' } },
      admissionPolicies: (install) => [
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicy',
          metadata: { name: 'widgets.op-test.kanri.dev' },
          spec: { matchConditions: [{ name: 'x', expression: `request.userInfo.username != '${install.username}'` }] },
        },
      ],
    });
    const conditionsOf = (objects: Record<string, unknown>[], name: string) =>
      JSON.stringify((objects.find((o) => (o.metadata as { name: string }).name === name)?.spec as object) ?? {});

    it("keys every policy on the operator's ServiceAccount in the install's namespace", () => {
      assert.deepEqual(op.policyNames(), [
        'widgets.op-test.kanri.dev',
        'widget-operator-owned-writes.kanri.dev',
        'widget-operator-owner-exists.kanri.dev',
      ]);
      const there = op.policies({ namespace: 'ops' });
      for (const name of op.policyNames()) {
        assert.match(conditionsOf(there, name), /system:serviceaccount:ops:widget-operator/, name);
        assert.doesNotMatch(conditionsOf(there, name), /widget-operator-system/, name);
      }
      assert.match(
        conditionsOf(op.admissionPolicies as Record<string, unknown>[], 'widget-operator-owned-writes.kanri.dev'),
        /system:serviceaccount:widget-operator-system:widget-operator/,
        'the definition namespace by default',
      );
    });

    it('leaves its own Lease and the guard Secrets of its namespace out of the owned-writes policy', () => {
      const writes = conditionsOf(op.policies(), 'widget-operator-owned-writes.kanri.dev');
      for (const own of [
        'coordination.k8s.io/leases/widget-operator-leader',
        '/secrets/widget-operator-webhook-cert',
        '/secrets/widget-operator-webhook-cert-ca',
      ])
        assert.ok(writes.includes(own), own);
    });

    it('may read its own policies, by name, cluster-wide only (a namespace-scoped install vouches instead)', () => {
      const cluster = rulesOf(op.rbac(), 'ClusterRole', 'widget-operator');
      assert.deepEqual(
        cluster.find((r) => r.resources.includes('validatingadmissionpolicies')),
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
          verbs: ['get'],
          resourceNames: op.policyNames(),
        },
      );
      const scoped = op.rbac({ watchNamespace: 'team-a' });
      assert.ok(!JSON.stringify(scoped).includes('validatingadmissionpolicies'));
      assert.equal(admissionPolicyCheckFromEnv({}), 'check');
      assert.equal(admissionPolicyCheckFromEnv({ KANRI_ADMISSION_POLICIES: 'Installed' }), 'installed');
      assert.throws(() => admissionPolicyCheckFromEnv({ KANRI_ADMISSION_POLICIES: 'yes' }), /"check" or "installed"/);
    });

    it('explains every rule it grants: the explained roles merge into exactly the RBAC it writes', () => {
      for (const options of [{}, { watchNamespace: 'team-a' }, { crdDeletionGuard: false }]) {
        const written = op.rbac(options).filter((o) => String(o.kind).endsWith('Role'));
        const explained = op.explainRbac(options);
        assert.deepEqual(
          explained.map((r) => `${r.kind}/${r.name}`),
          written.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`),
        );
        for (const role of explained) {
          for (const rule of role.rules) assert.ok(rule.reason.length > 10, JSON.stringify(rule));
          assert.deepEqual(mergeRules(role.rules), rulesOf(written, role.kind, role.name), role.name);
        }
      }
    });
  });
});
