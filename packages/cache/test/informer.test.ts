import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, startFaultProxy } from '@kanri/testenv';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import { Informer } from '../src/index.js';
import { freshSnapshot, snapshotOf, synced, waitFor } from './helpers.js';

describe('Informer against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    for (const name of ['cache-a', 'cache-b', 'cache-meta', 'cache-own']) {
      await client.resource('v1', 'Namespace').create({ metadata: { name } });
    }
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('shows creates, updates and deletes, with deltas and indexes', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    await configMaps.create({ metadata: { name: 'before', namespace: 'cache-a', labels: { tier: 'db' } } });
    const informer = new Informer(configMaps, {
      namespace: 'cache-a',
      indexers: { firstKey: (o) => Object.keys((o as ConfigMap).data ?? {}).slice(0, 1) },
    }).start();
    const deltas: string[] = [];
    informer.onChange((d) => deltas.push(`${d.type} ${d.object.metadata?.name}`));
    try {
      await synced(informer);
      // The first list is served from the API server's watch cache (resourceVersion "0", as
      // client-go's reflector does), which may not hold a write made just before it yet: the watch
      // brings it. Synced therefore does not promise it, and the test waits for it.
      await waitFor('the ConfigMap made before the informer started', () => informer.getByName('cache-a', 'before'));
      assert.equal(
        informer.getByName('cache-a', 'before')?.metadata?.managedFields,
        undefined,
        'managedFields stripped',
      );

      const owner = await configMaps.create({
        metadata: { name: 'owner', namespace: 'cache-a' },
        data: { color: 'red' },
      });
      await configMaps.create({
        metadata: {
          name: 'child',
          namespace: 'cache-a',
          labels: { tier: 'db' },
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' }],
        },
      });
      await waitFor('the child', () => informer.getByName('cache-a', 'child'));
      assert.deepEqual(
        informer.byIndex('owner', owner.metadata?.uid ?? '').map((o) => o.metadata?.name),
        ['child'],
      );
      assert.deepEqual(
        informer
          .byIndex('label', 'tier=db')
          .map((o) => o.metadata?.name)
          .sort(),
        ['before', 'child'],
      );
      assert.deepEqual(
        informer.byIndex('firstKey', 'color').map((o) => o.metadata?.name),
        ['owner'],
      );
      assert.equal(informer.byIndex('namespace', 'cache-a').length, 3);

      await configMaps.patch('owner', { data: { color: 'blue' } }, { namespace: 'cache-a' });
      await waitFor(
        'the update',
        () => (informer.getByName('cache-a', 'owner') as ConfigMap | undefined)?.data?.color === 'blue',
      );
      await configMaps.delete('before', { namespace: 'cache-a' });
      await waitFor('the delete', () => !informer.getByName('cache-a', 'before'));
      assert.deepEqual(deltas, ['added before', 'added owner', 'added child', 'updated owner', 'deleted before']);
      assert.equal(informer.status.synced, true);
    } finally {
      await informer.stop();
    }
  });

  it('keeps running, without unhandled rejections, when its kind is not served yet and the client writes', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    const errors: unknown[] = [];
    const informer = new Informer(client.resource('missing.kanri.dev/v1', 'Nothing'), {
      client,
      backoff: { initialMs: 50, maxMs: 200 },
      onError: (error) => errors.push(error),
    }).start();
    try {
      // Every write through `client` is offered to the informer's read-your-own-writes tracking.
      await client.resource('v1', 'ConfigMap').create({ metadata: { name: 'unrelated', namespace: 'cache-a' } });
      await waitFor('the informer to report its failing list', () => errors.length >= 2);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(rejections, []);
      assert.equal(informer.status.synced, false);
    } finally {
      process.off('unhandledRejection', onRejection);
      await informer.stop();
    }
  });

  it('caches metadata only when asked', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    await configMaps.create({
      metadata: { name: 'big', namespace: 'cache-meta', labels: { a: 'b' } },
      data: { payload: 'x'.repeat(10_000) },
    });
    const informer = new Informer(configMaps, { namespace: 'cache-meta', metadataOnly: true }).start();
    try {
      await synced(informer);
      // As above: a list from the watch cache may come before the create reached it.
      const object = (await waitFor('the ConfigMap big', () =>
        informer.getByName('cache-meta', 'big'),
      )) as KubeObject & {
        data?: unknown;
      };
      assert.equal(object.kind, 'PartialObjectMetadata');
      assert.deepEqual(object.metadata?.labels, { a: 'b' });
      assert.equal(object.data, undefined);
    } finally {
      await informer.stop();
    }
  });

  it('reconnects within its idle timeout when the stream silently stalls', async () => {
    const proxy = await startFaultProxy(cp.server);
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url });
    const informer = new Informer(viaProxy.resource('v1', 'ConfigMap'), {
      namespace: 'cache-b',
      idleTimeoutMs: 2_000,
    }).start();
    try {
      await synced(informer);
      await waitFor('the watch to be open', () => proxy.connections > 0);
      proxy.stallOpenConnections();
      const stalledAt = Date.now();
      await client.resource('v1', 'ConfigMap').create({ metadata: { name: 'after-stall', namespace: 'cache-b' } });
      await waitFor(
        'the informer to see the object through a new connection',
        () => informer.getByName('cache-b', 'after-stall'),
        15_000,
      );
      const took = Date.now() - stalledAt;
      assert.ok(informer.status.reconnects >= 1, 'it counted the reconnect');
      assert.ok(took < 2_000 + 5_000, `recovered ${took} ms after the stall`);
    } finally {
      await informer.stop();
      await viaProxy.close();
      await proxy.close();
    }
  });

  it('reads its own writes before the watch delivers them', async () => {
    const proxy = await startFaultProxy(cp.server);
    const watchClient = new KubeClient({ ...client.connection, server: proxy.url });
    const writer = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    const configMaps = writer.resource('v1', 'ConfigMap');
    await configMaps.create({ metadata: { name: 'doomed', namespace: 'cache-own' } });
    const informer = new Informer(watchClient.resource('v1', 'ConfigMap'), {
      namespace: 'cache-own',
      client: writer,
      idleTimeoutMs: 600_000,
    }).start();
    try {
      await synced(informer);
      await waitFor('the watch to be open', () => proxy.connections > 0);
      proxy.stallOpenConnections(); // the informer now hears nothing from the server

      const written = await configMaps.create({
        metadata: { name: 'mine', namespace: 'cache-own', labels: { own: 'yes' } },
        data: { v: '1' },
      });
      await new Promise((r) => setImmediate(r));
      assert.equal(
        informer.getByName('cache-own', 'mine')?.metadata?.resourceVersion,
        written.metadata?.resourceVersion,
      );
      const updated = await configMaps.patch('mine', { data: { v: '2' } }, { namespace: 'cache-own' });
      await new Promise((r) => setImmediate(r));
      assert.equal((informer.getByName('cache-own', 'mine') as ConfigMap).data?.v, '2');
      assert.equal(
        informer.getByName('cache-own', 'mine')?.metadata?.resourceVersion,
        updated.metadata?.resourceVersion,
      );
      await configMaps.delete('doomed', { namespace: 'cache-own' });
      await new Promise((r) => setImmediate(r));
      assert.equal(informer.getByName('cache-own', 'doomed'), undefined, 'our delete hides it');
      assert.deepEqual(
        informer.list().map((o) => o.metadata?.name),
        ['mine'],
      );
      assert.deepEqual(
        informer.byIndex('label', 'own=yes').map((o) => o.metadata?.name),
        ['mine'],
        'indexes see the pending write too',
      );
      assert.equal(informer.size, 1);

      // Let the watch through again; once it has caught up, others' writes are visible too.
      proxy.dropAll();
      const other = await client
        .resource('v1', 'ConfigMap')
        .patch('mine', { data: { v: 'theirs' } }, { namespace: 'cache-own' });
      await waitFor(
        "another writer's later change",
        () => informer.getByName('cache-own', 'mine')?.metadata?.resourceVersion === other.metadata?.resourceVersion,
        20_000,
      );
    } finally {
      await informer.stop();
      await watchClient.close();
      await writer.close();
      await proxy.close();
    }
  });

  it('converges to a fresh list after kube-apiserver is killed and restarted mid-watch', async () => {
    const namespace = 'cache-restart';
    await client.resource('v1', 'Namespace').create({ metadata: { name: namespace } });
    const writer = await KubeClient.load({ kubeconfig: cp.kubeconfigPath, maxAttempts: 1 });
    const configMaps = writer.resource('v1', 'ConfigMap');
    for (let i = 0; i < 20; i++)
      await configMaps.create({ metadata: { name: `cm-${i}`, namespace }, data: { n: '0' } });
    const informer = new Informer(client.resource('v1', 'ConfigMap'), {
      namespace,
      backoff: { initialMs: 100, maxMs: 1_000 },
    }).start();
    await synced(informer);
    let writing = true;
    let writes = 0;
    // Keep changing objects (update, delete, create) the whole time; failures while the server is down are expected.
    const churn = (async () => {
      for (let n = 1; writing; n++) {
        const i = n % 20;
        try {
          if (n % 7 === 0) await configMaps.delete(`cm-${i}`, { namespace });
          else
            await configMaps.apply(
              { metadata: { name: `cm-${i}`, namespace }, data: { n: String(n) } },
              { fieldManager: 'churn', force: true },
            );
          writes++;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();
    try {
      await waitFor('some writes before the kill', () => writes > 30);
      await cp.killComponent('kube-apiserver');
      await new Promise((r) => setTimeout(r, 1_000));
      await cp.startComponent('kube-apiserver');
      const afterRestart = writes;
      await waitFor('writes after the restart', () => writes > afterRestart + 30);
      writing = false;
      await churn;
      const truth = await freshSnapshot(client.resource('v1', 'ConfigMap'), namespace);
      await waitFor('the cache to equal a fresh list', () => {
        const cached = snapshotOf(informer.list() as KubeObject[]);
        return cached.size === truth.size && [...truth].every(([k, rv]) => cached.get(k) === rv);
      });
      assert.ok(informer.status.reconnects >= 1, 'the outage was noticed and survived');
    } finally {
      writing = false;
      await churn;
      await informer.stop();
      await writer.close();
    }
  });
});
