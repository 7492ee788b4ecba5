import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient, type KubeObject } from '@kanri/client';
import { controller, Manager } from '@kanri/runtime';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import { pino } from 'pino';
import { z } from 'zod';
import { defineResource, deriveRbac, type PolicyRule } from '../src/index.js';

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

  const install = async (objects: Record<string, unknown>[]) => {
    for (const object of objects) {
      const o = object as KubeObject;
      await admin
        .resourceFor(o)
        .delete(o.metadata?.name ?? '', { namespace: o.metadata?.namespace })
        .catch(() => undefined);
      await admin.resourceFor(o).create(o);
    }
    // The API server's RBAC authorizer learns of role changes through its own watch.
    await new Promise((r) => setTimeout(r, 1_000));
  };
  /** Runs the operator as its own user for a while; true if a new Gadget fully converged, with its Event. */
  const operatorWorks = async (name: string, timeoutMs: number) => {
    const client = await KubeClient.load({ kubeconfig: operatorKubeconfig });
    const manager = new Manager(client, {
      name: 'gadget-operator',
      bindAddress: false,
      handleSignals: false,
      logger: pino({ level: 'silent' }),
      leaderElection: { namespace: 'default', leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 },
    }).add(gadgets);
    const running = manager.start();
    try {
      await admin
        .resource<Gadget>(Gadget.apiVersion, Gadget.kind)
        .create({ metadata: { name, namespace: 'default' }, spec: { color: 'blue' } });
      return await waitFor(
        `${name} to converge`,
        async () => {
          const g = await admin.resource<Gadget>(Gadget.apiVersion, Gadget.kind).get(name, { namespace: 'default' });
          const cm = await admin
            .resource('v1', 'ConfigMap')
            .get(`gadget-${name}`, { namespace: 'default' })
            .catch(() => undefined);
          const events = await admin
            .resource<KubeObject & { regarding?: { name?: string } }>('events.k8s.io/v1', 'Event')
            .list({ namespace: 'default' });
          return g.status?.color === 'blue' && cm !== undefined && events.items.some((e) => e.regarding?.name === name);
        },
        timeoutMs,
      ).catch(() => false);
    } finally {
      manager.stop();
      await running;
      await client.close();
    }
  };

  it('is sufficient: the operator works under exactly the generated rules', async () => {
    await install(manifests);
    assert.equal(await operatorWorks('complete', 20_000), true);
  });

  it('is minimal: dropping any single rule breaks the operator', async () => {
    const rules = manifests.flatMap((m, i) =>
      ((m.rules as PolicyRule[] | undefined) ?? []).map((_, j) => [i, j] as const),
    );
    assert.ok(rules.length >= 5, `${rules.length} rules`);
    for (const [i, j] of rules) {
      const trimmed = manifests.map((m, k) =>
        k === i ? { ...m, rules: (m.rules as PolicyRule[]).filter((_, n) => n !== j) } : m,
      );
      await install(trimmed);
      const rule = ((manifests[i]?.rules ?? []) as PolicyRule[])[j];
      assert.equal(
        await operatorWorks(`without-${i}-${j}`, 5_000),
        false,
        `still works without ${JSON.stringify(rule)}`,
      );
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
