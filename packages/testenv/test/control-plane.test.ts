import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { isPortFree } from '../src/free-port.js';
import { ComponentStartError, type ControlPlane, KUBERNETES_VERSION, startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { processesMentioning, waitFor } from './helpers.js';

const run = promisify(execFile);

interface Status {
  kind: 'Status';
  code: number;
  reason: string;
  message: string;
}

const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.test.kanri.dev' },
  spec: {
    group: 'test.kanri.dev',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                properties: { size: { type: 'integer', minimum: 1 }, color: { type: 'string' } },
              },
            },
          },
        },
      },
    ],
  },
};

describe('startControlPlane: etcd + kube-apiserver', () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  before(async () => {
    cp = await startControlPlane();
    admin = restTargetFromKubeconfig(cp.kubeconfig);
  });
  after(async () => {
    await admin?.dispatcher.close();
    await cp?.stop();
  });

  it('serves the pinned Kubernetes version on loopback', async () => {
    assert.match(cp.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    const version = await restRequest<{ gitVersion: string }>(admin, 'GET', '/version');
    assert.equal(version.body.gitVersion, KUBERNETES_VERSION);
  });

  it('creates a namespace', async () => {
    const created = await restRequest(admin, 'POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kanri-test' },
    });
    assert.equal(created.status, 201);
    const got = await restRequest<{ status: { phase: string } }>(admin, 'GET', '/api/v1/namespaces/kanri-test');
    assert.equal(got.body.status.phase, 'Active');
  });

  it('serves a CRD, stores its custom resources, and rejects ones its schema forbids', async () => {
    const crd = await restRequest(admin, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd);
    assert.equal(crd.status, 201);
    await waitFor('the Widget CRD to be Established', async () => {
      const got = await restRequest<{ status?: { conditions?: { type: string; status: string }[] } }>(
        admin,
        'GET',
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.kanri.dev',
      );
      return got.body.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    });
    const widgets = '/apis/test.kanri.dev/v1/namespaces/default/widgets';
    const widget = (name: string, spec: unknown) => ({
      apiVersion: 'test.kanri.dev/v1',
      kind: 'Widget',
      metadata: { name },
      spec,
    });
    // Discovery of a new CRD can lag its Established condition by a moment.
    await waitFor('the widgets endpoint', async () => (await restRequest(admin, 'GET', widgets)).status === 200);

    const good = await restRequest(admin, 'POST', widgets, widget('good', { size: 3, color: 'blue' }));
    assert.equal(good.status, 201);
    const stored = await restRequest<{ spec: { size: number } }>(admin, 'GET', `${widgets}/good`);
    assert.equal(stored.body.spec.size, 3);

    const wrongType = await restRequest<Status>(admin, 'POST', widgets, widget('bad-type', { size: 'big' }));
    assert.equal(wrongType.status, 422);
    assert.match(wrongType.body.message, /spec\.size/);

    const missing = await restRequest<Status>(admin, 'POST', widgets, widget('bad-missing', { color: 'red' }));
    assert.equal(missing.status, 422);
    assert.match(missing.body.message, /spec\.size: Required value/);

    const tooSmall = await restRequest<Status>(admin, 'POST', widgets, widget('bad-min', { size: 0 }));
    assert.equal(tooSmall.status, 422);
    assert.match(tooSmall.body.message, /spec\.size.*greater than or equal to 1/);
  });

  it('authenticates users from addUser and enforces RBAC on them', async () => {
    const alice = await cp.addUser({ name: 'alice', groups: ['team-a'] });
    const asAlice = restTargetFromKubeconfig(alice.kubeconfig);
    try {
      const path = '/api/v1/namespaces/default/configmaps';
      const denied = await restRequest<Status>(asAlice, 'GET', path);
      assert.equal(denied.status, 403);
      assert.match(denied.body.message, /User "alice" cannot list resource "configmaps"/);

      const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
      const role = await restRequest(admin, 'POST', `${rbac}/roles`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      });
      assert.equal(role.status, 201);
      const binding = await restRequest(admin, 'POST', `${rbac}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'team-a-reads-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
        // Bound to the group, so this also proves the certificate's O became the user's group.
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-a' }],
      });
      assert.equal(binding.status, 201);
      await waitFor(
        'alice to be allowed after the RoleBinding',
        async () => (await restRequest(asAlice, 'GET', path)).status === 200,
      );
      const stillDenied = await restRequest(asAlice, 'GET', '/api/v1/namespaces/default/secrets');
      assert.equal(stillDenied.status, 403, 'the binding grants configmaps only');
    } finally {
      await asAlice.dispatcher.close();
    }
  });

  it('works with kubectl through the kubeconfig file', async () => {
    const kubectl = cp.binaries.kubectl;
    assert.ok(kubectl);
    const { stdout } = await run(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'get', 'namespaces', '-o', 'name']);
    assert.match(stdout, /namespace\/kanri-test/);
  });
});

describe('ControlPlane.stop()', () => {
  it('ends every process it started, frees its ports and removes its data directory', async () => {
    const cp = await startControlPlane();
    const { processes, ports, dataDir } = cp;
    assert.deepEqual(
      processes.map((p) => p.name),
      ['etcd', 'kube-apiserver'],
    );
    for (const p of processes) assert.ok(isProcessAlive(p.pid), `${p.name} runs before stop`);
    await cp.stop();
    for (const p of processes) assert.equal(isProcessAlive(p.pid), false, `${p.name} (PID ${p.pid}) is gone`);
    for (const port of ports) assert.ok(await isPortFree(port), `port ${port} is free`);
    assert.ok(dataDir);
    await assert.rejects(access(dataDir), 'the data directory is removed');
    await cp.stop(); // idempotent
  });
});

describe('a component that fails to start', () => {
  it('names the component with its log, and leaves no process or directory behind', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-fail-'));
    try {
      await assert.rejects(
        startControlPlane({ baseDir: base, apiServerArgs: ['--no-such-flag=1'] }),
        (error: unknown) => {
          assert.ok(error instanceof ComponentStartError);
          assert.equal(error.component, 'kube-apiserver');
          assert.match(error.message, /^kube-apiserver: exited with code \d+ before becoming healthy/);
          assert.match(error.message, /unknown flag: --no-such-flag/);
          return true;
        },
      );
      assert.deepEqual(await readdir(base), [], 'the data directory is removed');
      assert.deepEqual(await processesMentioning(base), [], 'etcd was stopped too');
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
