import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, startControlPlane } from '@kanri/testenv';
import { Informer } from '../src/index.js';
import { synced } from './helpers.js';

// Ten pages of 500, for the list and for the informer's own paged list: enough to cross many
// continue tokens. It was 20,000 (40 pages), which cost CI about 40 CPU-seconds to create one by
// one and tested nothing that ten pages do not.
const COUNT = 5_000;

describe(`${COUNT.toLocaleString('en')} objects`, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('v1', 'Namespace').create({ metadata: { name: 'many' } });
    const configMaps = client.resource('v1', 'ConfigMap');
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < COUNT) {
          const i = next++;
          await configMaps.create({ metadata: { name: `cm-${i}`, namespace: 'many' }, data: { i: String(i) } });
        }
      }),
    );
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('lists them page by page with continue tokens', async () => {
    let pages = 0;
    const names = new Set<string>();
    for await (const page of client.resource('v1', 'ConfigMap').listPages({ namespace: 'many', limit: 500 })) {
      pages++;
      assert.ok(page.items.length <= 500);
      for (const item of page.items) names.add(item.metadata?.name ?? '');
    }
    assert.equal(names.size, COUNT);
    assert.equal(pages, COUNT / 500);
  });

  it('syncs them into an informer', async () => {
    const informer = new Informer(client.resource('v1', 'ConfigMap'), { namespace: 'many' }).start();
    try {
      await synced(informer, 120_000);
      assert.equal(informer.size, COUNT);
      assert.equal(informer.getByName('many', 'cm-4321')?.metadata?.name, 'cm-4321');
    } finally {
      await informer.stop();
    }
  });
});
