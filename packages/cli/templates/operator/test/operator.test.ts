/**
 * The operator against a real API server (etcd + kube-apiserver from @kanri/testenv): the CRDs
 * are installed, the manager runs in this process, and the tests watch what it does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidError, KubeClient, type KubeObject } from '@kanri/client';
import type { Manager } from '@kanri/runtime';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import { __Kind__ } from '../src/__kind__.js';
import operator from '../src/operator.js';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

describe('__name__', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let manager: Manager;
  let running: Promise<void>;

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    for (const crd of operator.crds()) await client.apply(crd, { fieldManager: 'test', force: true });
    await waitFor('the __Kind__ CRD to be served', () =>
      client.resource(__Kind__.apiVersion, __Kind__.kind).list({ namespace: 'default' }),
    );
    // One replica in a test: no leader election, no health server, no signal handlers.
    manager = await operator.manager({ client, leaderElection: undefined, bindAddress: false, handleSignals: false });
    running = manager.start();
  });

  after(async () => {
    manager?.stop();
    await running;
    await client?.close();
    await cp?.stop();
  });

  const objects = () => client.resource<__Kind__>(__Kind__.apiVersion, __Kind__.kind);

  it('applies a ConfigMap for a __Kind__ and reports it Ready', async () => {
    const created = await objects().create({
      metadata: { name: 'hello', namespace: 'default' },
      spec: { message: 'Hello, Kanri', repeat: 2 },
    });

    const configMap = await waitFor('the ConfigMap hello-message', () =>
      client.resource<ConfigMap>('v1', 'ConfigMap').get('hello-message', { namespace: 'default' }),
    );
    assert.equal(configMap.data?.message, 'Hello, Kanri\nHello, Kanri');
    const owner = configMap.metadata?.ownerReferences?.[0];
    assert.equal(owner?.uid, created.metadata?.uid, 'the ConfigMap is owned by its __Kind__');

    const status = await waitFor('the __Kind__ to be Ready', async () => {
      const current = await objects().get('hello', { namespace: 'default' });
      const ready = current.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      return ready ? current.status : undefined;
    });
    assert.equal(status.configMap, 'hello-message');
    assert.equal(status.observedGeneration, created.metadata?.generation);
  });

  it('rejects an invalid __Kind__, naming the field at fault', async () => {
    const invalid = (name: string, spec: unknown) =>
      objects()
        .create({ metadata: { name, namespace: 'default' }, spec } as __Kind__)
        .then(
          () => assert.fail(`${name} was accepted`),
          (error: unknown) => {
            assert.ok(error instanceof InvalidError, String(error));
            return error.message;
          },
        );
    assert.match(await invalid('empty', { message: '' }), /spec\.message/);
    assert.match(
      await invalid('too-long', { message: 'x'.repeat(200), repeat: 10 }),
      /spec\.repeat: .*the message repeated `repeat` times must fit in 1024 characters/,
    );
  });
});
