import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { buildKubeconfig, writeKubeconfig } from './kubeconfig.js';

const input = {
  clusterName: 'c',
  server: 'https://127.0.0.1:6443',
  caPem: 'CA',
  userName: 'bob',
  certPem: 'CERT',
  keyPem: 'KEY',
};

describe('kubeconfig', () => {
  it('links the current context to the cluster and user, credentials inline as base64', () => {
    const config = buildKubeconfig({ ...input, namespace: 'team' });
    const context = config.contexts.find((c) => c.name === config['current-context'])?.context;
    assert.deepEqual(context, { cluster: 'c', user: 'bob', namespace: 'team' });
    assert.equal(config.clusters[0]?.cluster.server, 'https://127.0.0.1:6443');
    assert.equal(Buffer.from(config.users[0]?.user['client-key-data'] ?? '', 'base64').toString(), 'KEY');
    assert.equal(
      Buffer.from(config.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString(),
      'CA',
    );
  });

  it('writes YAML readable by other tools, with owner-only permissions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-kubeconfig-'));
    try {
      const path = join(dir, 'config');
      const config = buildKubeconfig(input);
      await writeKubeconfig(path, config);
      assert.deepEqual(parse(await readFile(path, 'utf8')), config);
      assert.equal((await stat(path)).mode & 0o777, 0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
