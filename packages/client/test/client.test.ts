import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane, startFaultProxy, within } from '@kanri/testenv';
import { stringify } from 'yaml';
import {
  AlreadyExistsError,
  ConflictError,
  ForbiddenError,
  InvalidError,
  KubeClient,
  type KubeObject,
  NotFoundError,
  UnknownKindError,
} from '../src/index.js';

interface Gadget extends KubeObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

const gadgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.test.kanri.dev' },
  spec: {
    group: 'test.kanri.dev',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                properties: { size: { type: 'integer', minimum: 1 } },
                // Fields no model knows must survive every round trip.
                'x-kubernetes-preserve-unknown-fields': true,
              },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

describe('KubeClient against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(gadgetCrd as never);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        await client.resource('test.kanri.dev/v1', 'Gadget').list({ namespace: 'default' });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('creates, reads, updates, patches and deletes, with typed errors', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    const created = await configMaps.create({ metadata: { name: 'crud', namespace: 'default' }, data: { a: '1' } });
    assert.equal(created.data?.a, '1');
    await assert.rejects(configMaps.create({ metadata: { name: 'crud', namespace: 'default' } }), AlreadyExistsError);

    const updated = await configMaps.update({ ...created, data: { a: '2' } });
    assert.equal(updated.data?.a, '2');
    await assert.rejects(
      configMaps.update({ ...created, data: { a: 'stale' } }),
      ConflictError,
      'stale resourceVersion',
    );

    const merged = await configMaps.patch('crud', { data: { b: '3' } }, { namespace: 'default' });
    assert.deepEqual(merged.data, { a: '2', b: '3' });
    const jsonPatched = await configMaps.patch('crud', [{ op: 'remove', path: '/data/a' }], {
      namespace: 'default',
      type: 'json',
    });
    assert.deepEqual(jsonPatched.data, { b: '3' });

    await assert.rejects(
      configMaps.delete('crud', { namespace: 'default', preconditions: { uid: 'not-the-uid' } }),
      ConflictError,
      'a uid precondition that does not match refuses the delete',
    );
    assert.equal(await configMaps.delete('crud', { namespace: 'default', propagationPolicy: 'Background' }), undefined);
    const missing = await configMaps.get('crud', { namespace: 'default' }).catch((e) => e);
    assert.ok(missing instanceof NotFoundError);
    assert.match(missing.message, /^get configmaps "crud": configmaps "crud" not found/);
  });

  it('requires a namespace for namespaced kinds instead of guessing', async () => {
    await assert.rejects(client.resource('v1', 'ConfigMap').get('x'), /ConfigMap "x": metadata.namespace is required/);
    const ns = await client.resource('v1', 'Namespace').get('default');
    assert.equal(ns.metadata?.name, 'default', 'cluster-scoped kinds need none');
  });

  it('resolves kinds through discovery and explains unknown ones', async () => {
    const info = await client.resolve('apps/v1', 'StatefulSet');
    assert.deepEqual([info.plural, info.namespaced, info.subresources.includes('scale')], ['statefulsets', true, true]);
    await assert.rejects(client.resolve('test.kanri.dev/v1', 'Nothing'), UnknownKindError);
  });

  it('reports Forbidden with the verb and resource, and Invalid with the field', async () => {
    const nobody = await cp.addUser({ name: 'nobody' });
    const restricted = await KubeClient.load({ kubeconfig: nobody.kubeconfigPath });
    try {
      const error = await restricted
        .resource('v1', 'Secret')
        .list({ namespace: 'default' })
        .catch((e) => e);
      assert.ok(error instanceof ForbiddenError);
      assert.equal(error.verb, 'list');
      assert.equal(error.resource, 'secrets');
    } finally {
      await restricted.close();
    }
    const invalid = await client
      .resource<Gadget>('test.kanri.dev/v1', 'Gadget')
      .create({ metadata: { name: 'bad', namespace: 'default' }, spec: { size: 0 } })
      .catch((e) => e);
    assert.ok(invalid instanceof InvalidError);
    assert.equal(invalid.causes[0]?.field, 'spec.size');
  });

  it('keeps fields no model knows through get and server-side apply', async () => {
    const gadgets = client.resource<Gadget>('test.kanri.dev/v1', 'Gadget');
    const spec = { size: 2, extra: { nested: [1, { deep: true }], text: 'ü' }, 'odd-key': null };
    await gadgets.create({ metadata: { name: 'lossless', namespace: 'default' }, spec });
    const got = await gadgets.get('lossless', { namespace: 'default' });
    assert.deepEqual(got.spec, spec);
    const applied = await gadgets.apply(
      { metadata: { name: 'lossless', namespace: 'default' }, spec },
      { fieldManager: 'test', force: true },
    );
    assert.deepEqual(applied.spec, spec);
    assert.deepEqual((await gadgets.get('lossless', { namespace: 'default' })).spec, spec);
  });

  it('applies idempotently: the same apply twice writes nothing', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    const desired = { metadata: { name: 'applied', namespace: 'default', labels: { app: 'x' } }, data: { k: 'v' } };
    const first = await configMaps.apply(desired, { fieldManager: 'kanri-test' });
    const second = await configMaps.apply(desired, { fieldManager: 'kanri-test' });
    assert.equal(second.metadata?.resourceVersion, first.metadata?.resourceVersion);
    await assert.rejects(
      configMaps.apply({ ...desired, data: { k: 'other' } }, { fieldManager: 'someone-else' }),
      ConflictError,
      'another manager may not take an owned field without force',
    );
    const forced = await configMaps.apply(
      { ...desired, data: { k: 'other' } },
      { fieldManager: 'someone-else', force: true },
    );
    assert.equal(forced.data?.k, 'other');
  });

  it('reads and writes the status subresource separately from the spec', async () => {
    const gadgets = client.resource<Gadget>('test.kanri.dev/v1', 'Gadget');
    const created = await gadgets.create({ metadata: { name: 'stat', namespace: 'default' }, spec: { size: 1 } });
    const withStatus = await gadgets.updateStatus({ ...created, status: { phase: 'Ready' } });
    assert.deepEqual(withStatus.status, { phase: 'Ready' });
    const patched = await gadgets.patchStatus('stat', { status: { replicas: 3 } }, { namespace: 'default' });
    assert.deepEqual(patched.status, { phase: 'Ready', replicas: 3 });
    const viaMain = await gadgets.update({ ...patched, status: { phase: 'Ignored' }, spec: { size: 5 } });
    assert.deepEqual(viaMain.status, { phase: 'Ready', replicas: 3 }, 'the main resource ignores status');
    assert.equal(viaMain.spec?.size, 5);
    const applied = await gadgets.applyStatus(
      { metadata: { name: 'stat', namespace: 'default' }, status: { phase: 'Done' } },
      { fieldManager: 'status-writer', force: true },
    );
    assert.equal(applied.status?.phase, 'Done');
    assert.deepEqual((await gadgets.getStatus('stat', { namespace: 'default' })).status, applied.status);
  });

  it('pages a list pinned to a resourceVersion, sending the version only with the first page', async () => {
    await client.resource('v1', 'Namespace').create({ metadata: { name: 'paged' } });
    const configMaps = client.resource('v1', 'ConfigMap');
    for (let i = 0; i < 5; i++) await configMaps.create({ metadata: { name: `p${i}`, namespace: 'paged' } });
    const { resourceVersion } = (await configMaps.list({ namespace: 'paged' })).metadata;
    await configMaps.create({ metadata: { name: 'later', namespace: 'paged' } });
    let pages = 0;
    const names: string[] = [];
    for await (const page of configMaps.listPages({
      namespace: 'paged',
      limit: 2,
      resourceVersion,
      resourceVersionMatch: 'Exact',
    })) {
      pages++;
      names.push(...page.items.map((i) => i.metadata?.name ?? ''));
    }
    assert.ok(pages >= 3, `${pages} pages`);
    assert.deepEqual(names.filter((n) => n.startsWith('p')).sort(), ['p0', 'p1', 'p2', 'p3', 'p4']);
    assert.ok(!names.includes('later'), 'the snapshot predates the later object');
  });

  it('watches changes from a resourceVersion', async () => {
    const configMaps = client.resource('v1', 'ConfigMap');
    const list = await configMaps.list({ namespace: 'default' });
    const abort = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const event of configMaps.watch({
        namespace: 'default',
        resourceVersion: list.metadata.resourceVersion,
        signal: abort.signal,
      })) {
        if (event.type === 'BOOKMARK') continue;
        seen.push(`${event.type} ${event.object.metadata?.name}`);
        if (seen.length === 3) break;
      }
    })();
    await configMaps.create({ metadata: { name: 'watched', namespace: 'default' } });
    await configMaps.patch('watched', { data: { x: '1' } }, { namespace: 'default' });
    await configMaps.delete('watched', { namespace: 'default' });
    try {
      await within('the watch to deliver ADDED, MODIFIED and DELETED', watching);
    } finally {
      abort.abort();
    }
    assert.deepEqual(seen, ['ADDED watched', 'MODIFIED watched', 'DELETED watched']);
  });

  it('authenticates through an exec credential plugin', async () => {
    const user = await cp.addUser({ name: 'exec-user', groups: ['system:masters'] });
    const dir = await mkdtemp(join(tmpdir(), 'kanri-exec-it-'));
    try {
      const credentials = user.kubeconfig.users[0]?.user;
      const plugin = join(dir, 'plugin.sh');
      const status = {
        clientCertificateData: atob(credentials?.['client-certificate-data'] ?? ''),
        clientKeyData: atob(credentials?.['client-key-data'] ?? ''),
      };
      await writeFile(
        plugin,
        `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status })}\nEOF\n`,
      );
      await chmod(plugin, 0o755);
      const path = join(dir, 'kubeconfig');
      const cluster = cp.kubeconfig.clusters[0];
      await writeFile(
        path,
        stringify({
          clusters: [cluster],
          users: [{ name: 'exec', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin } } }],
          contexts: [{ name: 'exec', context: { cluster: cluster?.name, user: 'exec' } }],
          'current-context': 'exec',
        }),
      );
      const execClient = await KubeClient.load({ kubeconfig: path });
      try {
        const ns = await execClient.resource('v1', 'Namespace').get('kube-system');
        assert.equal(ns.metadata?.name, 'kube-system');
      } finally {
        await execClient.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reuses its connections: 1,000 sequential GETs open no new socket', async () => {
    const proxy = await startFaultProxy(cp.server);
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url });
    try {
      const configMaps = viaProxy.resource('v1', 'ConfigMap');
      await configMaps.apply({ metadata: { name: 'pooled', namespace: 'default' } }, { fieldManager: 'test' });
      const before = proxy.connections;
      for (let i = 0; i < 1000; i++) await configMaps.get('pooled', { namespace: 'default' });
      assert.equal(proxy.connections - before, 0, `new connections during 1,000 GETs: ${proxy.connections - before}`);
      // undici may open a second socket while the first is still reading a chunked response's last bytes.
      assert.ok(proxy.connections <= 2, `sockets in all: ${proxy.connections}`);
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });
});
