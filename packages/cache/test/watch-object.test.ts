import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, startControlPlane, startFaultProxy } from '@kanri/testenv';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import { watchObject } from '../src/index.js';
import { waitFor } from './helpers.js';

const namespace = 'watch-object';

describe('watchObject against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('v1', 'Namespace').create({ metadata: { name: namespace } });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  const configMaps = () => client.resource<ConfigMap>('v1', 'ConfigMap');

  it('reports absence first, then each state of the one named object, never another object', async () => {
    const stop = new AbortController();
    const seen: (string | undefined)[] = [];
    const watch = watchObject({
      resource: configMaps(),
      namespace,
      name: 'followed',
      signal: stop.signal,
      onChange: (object) => {
        seen.push(object?.data?.v);
      },
    });
    try {
      assert.equal(await watch.waitForSync(), undefined);
      assert.equal(watch.synced, true);
      assert.deepEqual(seen, [undefined]);

      await configMaps().create({ metadata: { name: 'bystander', namespace }, data: { v: 'other' } });
      await configMaps().create({ metadata: { name: 'followed', namespace }, data: { v: 'one' } });
      await waitFor('the create', () => watch.current()?.data?.v === 'one');
      await configMaps().patch('followed', { data: { v: 'two' } }, { namespace });
      await waitFor('the update', () => watch.current()?.data?.v === 'two');
      await configMaps().delete('followed', { namespace });
      await waitFor('the delete', () => seen.length === 4);
      assert.equal(watch.current(), undefined);
      assert.deepEqual(seen, [undefined, 'one', 'two', undefined]);
      assert.equal(watch.current(), undefined);
    } finally {
      stop.abort();
      await watch.done;
    }
  });

  it('waits for an async onChange before the next, and a throwing one does not stop it', async () => {
    await configMaps().create({ metadata: { name: 'slow', namespace }, data: { v: '0' } });
    const stop = new AbortController();
    let running = 0;
    let overlapped = false;
    const handled: (string | undefined)[] = [];
    const errors: string[] = [];
    const watch = watchObject({
      resource: configMaps(),
      namespace,
      name: 'slow',
      signal: stop.signal,
      log: {
        warn: () => {},
        error: (_details, message) => errors.push(message),
      },
      onChange: async (object) => {
        running++;
        overlapped ||= running > 1;
        await new Promise((resolve) => setTimeout(resolve, 150));
        running--;
        handled.push(object?.data?.v);
        if (object?.data?.v === '1') throw new Error('handler failed');
      },
    });
    try {
      const first = await watch.waitForSync();
      assert.deepEqual(handled, [first?.data?.v], 'the first state is handled before waitForSync resolves');
      // The first list is served from the API server's watch cache (resourceVersion 0, as client-go
      // lists), which can lag the create just above: then the object arrives as the next state.
      await waitFor('the created object', () => handled.at(-1) === '0');
      for (const v of ['1', '2', '3']) await configMaps().patch('slow', { data: { v } }, { namespace });
      await waitFor('every state handled', () => handled.at(-1) === '3');
      assert.equal(overlapped, false);
      assert.deepEqual(
        handled.filter((v) => v !== undefined),
        ['0', '1', '2', '3'],
      );
      assert.ok(handled.length <= 5, `no state handled twice: ${handled.join(', ')}`);
      assert.deepEqual(errors, ['handling a change failed']);
    } finally {
      stop.abort();
      await watch.done;
    }
  });

  it('catches up on a change made while its connection was cut', async () => {
    const proxy = await startFaultProxy(cp.server);
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url });
    await configMaps().create({ metadata: { name: 'cut', namespace }, data: { v: 'before' } });
    const stop = new AbortController();
    const watch = watchObject({
      resource: viaProxy.resource<ConfigMap>('v1', 'ConfigMap'),
      namespace,
      name: 'cut',
      signal: stop.signal,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    try {
      await watch.waitForSync();
      // The first list may come from the watch cache, behind the create above (see the test before).
      await waitFor('the object as created', () => watch.current()?.data?.v === 'before');
      proxy.dropAll();
      await configMaps().patch('cut', { data: { v: 'after' } }, { namespace });
      await waitFor('the change made during the cut', () => watch.current()?.data?.v === 'after');
    } finally {
      stop.abort();
      await watch.done;
      await viaProxy.close();
      await proxy.close();
    }
  });

  it('rejects waitForSync with the abort reason when stopped before the first list', async () => {
    const stop = new AbortController();
    const watch = watchObject({ resource: configMaps(), namespace, name: 'never', signal: stop.signal });
    const waiting = watch.waitForSync();
    stop.abort(new Error('stopped'));
    await assert.rejects(waiting, /stopped/);
    await watch.done;
    await assert.rejects(watch.waitForSync(), /stopped/);
  });
});
