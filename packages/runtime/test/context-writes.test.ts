/**
 * The reconcile context's tolerant writes against a real API server: `create` of an object that
 * exists, `delete` of one that is gone, and `applyMetadata` under its own field manager.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '@kanri/client';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import { pino } from 'pino';
import { controller, Manager, type ReconcileContext } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';

const quiet = pino({ level: 'silent' });

describe('ReconcileContext create, delete and applyMetadata', () => {
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    client = env.client;
  });

  const configMaps = () => client.resource<ConfigMap>('v1', 'ConfigMap');

  /** Runs `step` once inside a real reconcile of a fresh Widget and returns what it returned. */
  async function inReconcile<R>(ns: string, step: (ctx: ReconcileContext<Widget>) => Promise<R>): Promise<R> {
    await client.resource('v1', 'Namespace').create({ metadata: { name: ns } });
    let outcome: { value: R } | { error: unknown } | undefined;
    const definition = controller<Widget>('test.kanri.dev/v1', 'Widget')
      .owns('v1', 'ConfigMap')
      .reconcile(async (_widget, ctx) => {
        if (outcome) return;
        try {
          outcome = { value: await step(ctx) };
        } catch (error) {
          outcome = { error };
        }
      });
    const manager = new Manager(client, {
      name: 'ctx-test',
      namespace: ns,
      bindAddress: false,
      handleSignals: false,
      logger: quiet,
    }).add(definition);
    const done = manager.start();
    try {
      await client.resource<Widget>('test.kanri.dev/v1', 'Widget').create({ metadata: { name: 'w', namespace: ns } });
      await waitFor('the reconcile', () => outcome !== undefined);
    } finally {
      manager.stop();
      await done;
    }
    if (outcome && 'error' in outcome) throw outcome.error;
    return (outcome as { value: R }).value;
  }

  const configMap = (name: string, data: Record<string, string>): ConfigMap & KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name },
    data,
  });

  it('create makes an owned object, and resolves undefined (no error) when the name is taken', async () => {
    const ns = 'ctx-create';
    const results = await inReconcile(ns, async (ctx) => {
      // Not in the cache under the owner: made by someone else before the reconcile.
      await configMaps().create({ metadata: { name: 'taken', namespace: ns }, data: { by: 'someone' } });
      const created = await ctx.create(configMap('fresh', { by: 'ctx' }));
      const taken = await ctx.create(configMap('taken', { by: 'ctx' }));
      return { created, taken };
    });
    assert.equal(results.created?.metadata?.name, 'fresh');
    assert.equal(results.taken, undefined);
    const fresh = await configMaps().get('fresh', { namespace: ns });
    assert.deepEqual(
      fresh.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.controller]),
      [['Widget', 'w', true]],
    );
    assert.equal((await configMaps().get('taken', { namespace: ns })).data?.by, 'someone', 'left as it was');
  });

  it('create still rejects other failures', async () => {
    await assert.rejects(
      inReconcile('ctx-create-invalid', (ctx) => ctx.create(configMap('Not_A_Valid_Name', {}))),
      (error: unknown) => error instanceof Error && /Not_A_Valid_Name/.test(error.message),
    );
  });

  it('delete resolves true for an object it deleted and false for one already gone, by object or by ref', async () => {
    const ns = 'ctx-delete';
    const results = await inReconcile(ns, async (ctx) => {
      const doomed = await configMaps().create({ metadata: { name: 'doomed', namespace: ns } });
      const byObject = await ctx.delete({ ...doomed, apiVersion: 'v1', kind: 'ConfigMap' });
      const again = await ctx.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'doomed' });
      const never = await ctx.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'never-was', namespace: ns });
      return { byObject, again, never };
    });
    assert.deepEqual(results, { byObject: true, again: false, never: false });
    await assert.rejects(configMaps().get('doomed', { namespace: ns }), /not found/);
  });

  it('applyMetadata sets labels and annotations under its own field manager and claims nothing else', async () => {
    const ns = 'ctx-metadata';
    await inReconcile(ns, async (ctx) => {
      const target = await configMaps().create({ metadata: { name: 'target', namespace: ns }, data: { keep: 'me' } });
      await ctx.applyMetadata(
        { ...target, apiVersion: 'v1', kind: 'ConfigMap' },
        { labels: { tier: 'db' }, annotations: { note: 'set by ctx' } },
      );
    });
    const target = await configMaps().get('target', { namespace: ns });
    assert.equal(target.metadata?.labels?.tier, 'db');
    assert.equal(target.metadata?.annotations?.note, 'set by ctx');
    assert.deepEqual(target.data, { keep: 'me' });
    const applied = target.metadata?.managedFields?.find((f) => f.operation === 'Apply');
    assert.equal(applied?.manager, 'ctx-test/widget/metadata');
    assert.deepEqual(Object.keys(applied?.fieldsV1 ?? {}), ['f:metadata'], 'only metadata is claimed');
  });
});
