import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, startFaultProxy } from '@kanri/testenv';
import { Informer } from '../src/index.js';
import { compactEtcd, freshSnapshot, snapshotOf, synced, waitFor } from './helpers.js';

describe('Informer after etcd compaction (410 Gone)', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    // Without the watch cache, watches read etcd directly, so a compacted revision reliably yields 410.
    cp = await startControlPlane({ apiServerArgs: ['--watch-cache=false'] });
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('v1', 'Namespace').create({ metadata: { name: 'gone' } });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('relists and swaps the store, with no lost and no phantom objects', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    for (let i = 0; i < 10; i++) await configMaps.create({ metadata: { name: `keep-${i}`, namespace: 'gone' } });
    for (let i = 0; i < 5; i++) await configMaps.create({ metadata: { name: `drop-${i}`, namespace: 'gone' } });

    const proxy = await startFaultProxy(cp.server);
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url });
    const informer = new Informer(viaProxy.resource('v1', 'ConfigMap'), {
      namespace: 'gone',
      backoff: { initialMs: 100, maxMs: 500 },
    }).start();
    const deltas: string[] = [];
    informer.onChange((d) => deltas.push(`${d.type} ${d.object.metadata?.name}`));
    try {
      await synced(informer);
      // The first list comes from the watch cache, which can lag the creates just above.
      await waitFor('the 15 ConfigMaps', () => informer.size === 15);
      deltas.length = 0;

      // Cut the informer off, change things behind its back, and compact away its resourceVersion.
      proxy.refuseNew(true);
      proxy.dropAll();
      for (let i = 0; i < 5; i++) await configMaps.delete(`drop-${i}`, { namespace: 'gone' });
      for (let i = 0; i < 3; i++)
        await configMaps.patch(`keep-${i}`, { data: { changed: 'yes' } }, { namespace: 'gone' });
      for (let i = 0; i < 4; i++) await configMaps.create({ metadata: { name: `new-${i}`, namespace: 'gone' } });
      await compactEtcd(cp.etcdUrl ?? '');
      proxy.refuseNew(false);

      const truth = await freshSnapshot(configMaps, 'gone');
      await waitFor('the relist', () => informer.status.relists >= 1, 20_000);
      const cached = snapshotOf(informer.list() as KubeObject[]);
      assert.deepEqual([...cached].sort(), [...truth].sort(), 'exactly what a fresh list shows');
      assert.deepEqual(
        deltas.sort(),
        [
          ...[0, 1, 2, 3, 4].map((i) => `deleted drop-${i}`),
          ...[0, 1, 2].map((i) => `updated keep-${i}`),
          ...[0, 1, 2, 3].map((i) => `added new-${i}`),
        ].sort(),
        'the swap reported exactly what changed',
      );
    } finally {
      await informer.stop();
      await viaProxy.close();
      await proxy.close();
    }
  });
});
