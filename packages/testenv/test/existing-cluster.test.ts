import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane, UnsupportedError } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { restRequest, restTargetFromKubeconfig } from '../src/rest.js';

describe('an existing cluster (KANRI_USE_EXISTING_CLUSTER)', () => {
  let real: ControlPlane;
  const saved = { ...process.env };
  before(async () => {
    real = await startControlPlane();
    process.env.KUBECONFIG = real.kubeconfigPath;
  });
  after(async () => {
    process.env = saved;
    await real?.stop();
  });

  it('connects to the cluster in KUBECONFIG instead of starting one, and never stops it', async () => {
    process.env.KANRI_USE_EXISTING_CLUSTER = 'true';
    const existing = await startControlPlane({ controllers: true, nodes: 3 });
    delete process.env.KANRI_USE_EXISTING_CLUSTER;
    assert.equal(existing.server, real.server);
    assert.equal(existing.kubeconfigPath, real.kubeconfigPath);
    assert.deepEqual(existing.processes, [], 'nothing was started');
    const target = restTargetFromKubeconfig(existing.kubeconfig);
    try {
      assert.equal((await restRequest(target, 'GET', '/readyz')).status, 200);
    } finally {
      await target.dispatcher.close();
    }
    await assert.rejects(existing.addUser({ name: 'bob' }), UnsupportedError);
    await existing.stop();
    for (const p of real.processes) assert.ok(isProcessAlive(p.pid), `${p.name} still runs`);
  });

  it('explains which kubeconfig it could not read', async () => {
    process.env.KUBECONFIG = '/nonexistent/kubeconfig';
    try {
      await assert.rejects(
        startControlPlane({ useExistingCluster: true }),
        /\/nonexistent\/kubeconfig cannot be read; set KUBECONFIG/,
      );
    } finally {
      process.env.KUBECONFIG = real.kubeconfigPath;
    }
  });
});
