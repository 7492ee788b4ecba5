import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ForbiddenError, KubeClient, type KubeObject } from '@kanri/client';
import { controller, Manager } from '@kanri/runtime';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import { z } from 'zod';
import { defineResource, deriveRbac, type PolicyRule } from '../src/index.js';
import {
  forbiddenRecorder,
  grants,
  type Permission,
  permissionOf,
  permissionsOf,
  showPermission,
  waitForAccess,
} from './rbac-observation.js';

const Gadget = defineResource({
  group: 'rbac-test.kanri.dev',
  kind: 'Gadget',
  versions: { v1: { spec: z.object({ color: z.string() }), status: z.object({ color: z.string().optional() }) } },
});
type Gadget = typeof Gadget.$object;

const gadgets = controller<Gadget>(Gadget.apiVersion, Gadget.kind)
  .owns('v1', 'ConfigMap')
  .options({ resync: 0 })
  .reconcile(async (gadget, ctx) => {
    await ctx.apply({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `gadget-${gadget.metadata?.name}` },
      data: { color: gadget.spec.color },
    });
    if (gadget.status?.color !== gadget.spec.color)
      await ctx.event('Normal', 'Painted', `painted ${gadget.spec.color}`);
    await ctx.setStatus({ color: gadget.spec.color });
  });

describe('RBAC derived from the controllers', () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let operatorKubeconfig: string;
  const manifests = deriveRbac([gadgets], {
    name: 'gadget-operator',
    namespace: 'default',
    subject: { kind: 'User', name: 'gadget-operator' },
  });
  before(async () => {
    cp = await startControlPlane();
    admin = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await admin.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(Gadget.crd);
    await waitFor('the CRD', () => admin.resource(Gadget.apiVersion, Gadget.kind).list({ namespace: 'default' }));
    operatorKubeconfig = (await cp.addUser({ name: 'gadget-operator' })).kubeconfigPath;
  });
  after(async () => {
    await admin?.close();
    await cp?.stop();
  });

  const user = 'gadget-operator';
  /** Every permission the roles among `objects` grant to the operator. */
  const granted = (objects: readonly Record<string, unknown>[]) =>
    objects.flatMap((m) =>
      ((m.rules as PolicyRule[] | undefined) ?? []).flatMap((rule) =>
        permissionsOf(rule, ((m.metadata as { namespace?: string }).namespace ?? 'default') as string),
      ),
    );
  /**
   * Writes the roles (replacing their rules) and waits until the authorizer grants every
   * permission they list and refuses each one in `denied`.
   */
  const install = async (objects: readonly Record<string, unknown>[], denied: readonly Permission[] = []) => {
    for (const object of objects) await admin.apply(object as KubeObject, { fieldManager: 'rbac-test', force: true });
    await waitForAccess(admin, user, { allowed: granted(objects), denied });
  };
  /**
   * Runs the operator as its own user until `done` says so (given the ForbiddenErrors its
   * components logged so far), after creating Gadget `name`. Returns those errors.
   */
  const runOperator = async (name: string, done: (forbidden: readonly ForbiddenError[]) => Promise<boolean>) => {
    const client = await KubeClient.load({ kubeconfig: operatorKubeconfig });
    const { logger, seen } = forbiddenRecorder();
    const manager = new Manager(client, {
      name: 'gadget-operator',
      bindAddress: false,
      handleSignals: false,
      logger,
      leaderElection: { namespace: 'default', leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 },
    }).add(gadgets);
    const running = manager.start();
    try {
      await admin
        .resource<Gadget>(Gadget.apiVersion, Gadget.kind)
        .create({ metadata: { name, namespace: 'default' }, spec: { color: 'blue' } });
      await waitFor(`${name}: the operator to get there`, () => done(seen), 30_000);
      return seen;
    } finally {
      manager.stop();
      await running;
      await client.close();
    }
  };
  /** True once Gadget `name` fully converged: status, ConfigMap and Event. */
  const converged = async (name: string) => {
    const g = await admin.resource<Gadget>(Gadget.apiVersion, Gadget.kind).get(name, { namespace: 'default' });
    const cm = await admin
      .resource('v1', 'ConfigMap')
      .get(`gadget-${name}`, { namespace: 'default' })
      .catch(() => undefined);
    const events = await admin
      .resource<KubeObject & { regarding?: { name?: string } }>('events.k8s.io/v1', 'Event')
      .list({ namespace: 'default' });
    return g.status?.color === 'blue' && cm !== undefined && events.items.some((e) => e.regarding?.name === name);
  };

  it('is sufficient: the operator works under exactly the generated rules, and is refused nothing', async () => {
    await install(manifests);
    const forbidden = await runOperator('complete', () => converged('complete'));
    assert.deepEqual(
      forbidden.map((e) => showPermission(permissionOf(e))),
      [],
      'refused requests',
    );
  });

  it('is minimal: without any single rule, a request the operator needs is refused with 403', async (t) => {
    const rules = manifests.flatMap((m, i) =>
      ((m.rules as PolicyRule[] | undefined) ?? []).map((rule, j) => ({ i, j, rule })),
    );
    assert.ok(rules.length >= 5, `${rules.length} rules`);
    const all = granted(manifests);
    for (const { i, j, rule } of rules) {
      const trimmed = manifests.map((m, k) =>
        k === i ? { ...m, rules: (m.rules as PolicyRule[]).filter((_, n) => n !== j) } : m,
      );
      // Only what the dropped rule alone granted must be refused now.
      const lost = all.filter((p) => grants(rule, p));
      await install(trimmed, lost);
      const forbidden = await runOperator(`without-${i}-${j}`, async (seen) => {
        if (seen.some((e) => grants(rule, permissionOf(e)))) return true;
        // Thrown, not returned: waitFor's timeout message then says what was refused instead.
        throw new Error(`refused so far: ${seen.map((e) => showPermission(permissionOf(e))).join(', ') || 'nothing'}`);
      });
      const refused = forbidden.map((e) => permissionOf(e));
      t.diagnostic(`without ${JSON.stringify(rule)}: refused ${[...new Set(refused.map(showPermission))].join(', ')}`);
      // Any other refusal would mean the authorizer still lagged behind, or a rule the operator lacks.
      for (const p of refused)
        assert.ok(grants(rule, p), `${showPermission(p)} refused without ${JSON.stringify(rule)}`);
    }
    await install(manifests);
  });

  it('grants nothing undeclared: no Secrets, no Pods, no cluster-wide deletes of the primary', async () => {
    const operator = await KubeClient.load({ kubeconfig: operatorKubeconfig });
    try {
      const can = async (verb: string, resource: string, group = '') => {
        const review = await operator
          .resource<KubeObject & { status?: { allowed: boolean } }>(
            'authorization.k8s.io/v1',
            'SelfSubjectAccessReview',
          )
          .create({
            spec: { resourceAttributes: { verb, resource, group } },
          } as KubeObject);
        return review.status?.allowed === true;
      };
      assert.equal(await can('list', 'configmaps'), true, 'declared: owns ConfigMap');
      assert.equal(await can('list', 'secrets'), false);
      assert.equal(await can('get', 'pods'), false);
      assert.equal(
        await can('delete', 'gadgets', 'rbac-test.kanri.dev'),
        false,
        'the primary is never deleted by its operator',
      );
      assert.equal(await can('create', 'clusterroles', 'rbac.authorization.k8s.io'), false);
    } finally {
      await operator.close();
    }
  });
});
