import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { execCredentials, tokenFileCredentials } from './credentials.js';
import { KubeconfigError } from './kubeconfig-error.js';
import { loadKubeconfig } from './load-kubeconfig.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('loadKubeconfig', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-kubeconfig-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('merges KUBECONFIG files as kubectl does: the first definition and current-context win', async () => {
    const first = join(dir, 'first.yaml');
    const second = join(dir, 'second.yaml');
    await writeFile(
      first,
      stringify({
        contexts: [{ name: 'dev', context: { cluster: 'dev', user: 'me', namespace: 'team' } }],
        users: [{ name: 'me', user: { token: 'first-token' } }],
        'current-context': 'dev',
      }),
    );
    await writeFile(
      second,
      stringify({
        clusters: [
          { name: 'dev', cluster: { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': b64('CA') } },
        ],
        users: [{ name: 'me', user: { token: 'second-token' } }],
        'current-context': 'other',
      }),
    );
    const connection = await loadKubeconfig({ env: { KUBECONFIG: `${first}:${join(dir, 'missing')}:${second}` } });
    assert.equal(connection.server, 'https://127.0.0.1:6443');
    assert.equal(connection.namespace, 'team');
    assert.equal(connection.tls.ca, 'CA');
    assert.deepEqual(await connection.credentials?.current(), { token: 'first-token' });
    assert.match(connection.source, /context "dev" in .*first\.yaml/);
  });

  it('reads certificate files relative to the kubeconfig that names them', async () => {
    const sub = join(dir, 'nested');
    await mkdir(sub);
    await writeFile(join(sub, 'client.crt'), 'CERT');
    await writeFile(join(sub, 'client.key'), 'KEY');
    const path = join(sub, 'config');
    await writeFile(
      path,
      stringify({
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { 'client-certificate': 'client.crt', 'client-key': 'client.key' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const connection = await loadKubeconfig({ kubeconfig: path });
    assert.equal(connection.tls.cert, 'CERT');
    assert.equal(connection.tls.key, 'KEY');
    assert.equal(connection.tls.rejectUnauthorized, false);
    assert.equal(connection.namespace, 'default');
  });

  it('names the missing piece of a broken context', async () => {
    const path = join(dir, 'broken.yaml');
    await writeFile(
      path,
      stringify({ contexts: [{ name: 'x', context: { cluster: 'nope', user: 'u' } }], 'current-context': 'x' }),
    );
    await assert.rejects(
      loadKubeconfig({ kubeconfig: path }),
      /context "x" names cluster "nope", which is not defined/,
    );
    await assert.rejects(loadKubeconfig({ kubeconfig: path, context: 'y' }), /context "y" is not defined/);
  });

  it('uses the in-cluster service account when there is no kubeconfig', async () => {
    const sa = join(dir, 'serviceaccount');
    await mkdir(sa);
    await writeFile(join(sa, 'token'), 'sa-token\n');
    await writeFile(join(sa, 'ca.crt'), 'CLUSTER-CA');
    await writeFile(join(sa, 'namespace'), 'operators');
    const connection = await loadKubeconfig({
      env: { HOME: dir, KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: sa,
    });
    assert.equal(connection.server, 'https://10.96.0.1:443');
    assert.equal(connection.namespace, 'operators');
    assert.equal(connection.tls.ca, 'CLUSTER-CA');
    assert.deepEqual(await connection.credentials?.current(), { token: 'sa-token' });
  });

  it('never falls back to localhost: the error lists every place it looked', async () => {
    const error = await loadKubeconfig({
      env: { HOME: join(dir, 'empty-home') },
      serviceAccountDir: join(dir, 'none'),
    }).catch((e) => e);
    assert.ok(error instanceof KubeconfigError);
    assert.match(error.message, /KUBECONFIG \(unset\)/);
    assert.match(error.message, /empty-home\/\.kube\/config \(missing\)/);
    assert.match(error.message, /in-cluster service account \(KUBERNETES_SERVICE_HOST unset\)/);
  });

  it('rejects the removed auth-provider mechanism with a pointer to exec plugins', async () => {
    const path = join(dir, 'gcp.yaml');
    await writeFile(
      path,
      stringify({
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { 'auth-provider': { name: 'gcp' } } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    await assert.rejects(loadKubeconfig({ kubeconfig: path }), /auth-provider "gcp".*use an exec plugin/);
  });
});

describe('credentials', () => {
  it('re-reads a rotated token file once the cached token is old', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-token-'));
    try {
      const path = join(dir, 'token');
      let clock = 0;
      const source = tokenFileCredentials(path, 60_000, () => clock);
      await writeFile(path, 'one');
      assert.deepEqual(await source.current(), { token: 'one' });
      await writeFile(path, 'two');
      clock = 30_000;
      assert.deepEqual(await source.current(), { token: 'one' }, 'still cached');
      clock = 61_000;
      assert.deepEqual(await source.current(), { token: 'two' }, 'rotated');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs an exec plugin once until its credential expires or is invalidated', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-exec-'));
    try {
      const plugin = join(dir, 'plugin.mjs');
      const calls = join(dir, 'calls');
      await writeFile(
        plugin,
        `#!/usr/bin/env node
import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(calls)}, process.env.KUBERNETES_EXEC_INFO + '\\n');
console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: 'exec-' + process.env.EXTRA, expirationTimestamp: new Date(Number(process.env.EXPIRES)).toISOString() } }));
`,
      );
      await chmod(plugin, 0o755);
      let clock = Date.parse('2026-01-01T00:00:00Z');
      const source = execCredentials(
        {
          command: plugin,
          env: [
            { name: 'EXTRA', value: 'x' },
            { name: 'EXPIRES', value: String(clock + 60_000) },
          ],
        },
        dir,
        () => clock,
      );
      const [a, b] = await Promise.all([source.current(), source.current()]);
      assert.deepEqual(a, { token: 'exec-x' });
      assert.deepEqual(b, a);
      const lines = (await readFile(calls, 'utf8')).trim().split('\n');
      assert.equal(lines.length, 1, 'concurrent callers share one run');
      assert.equal(JSON.parse(lines[0] ?? '{}').kind, 'ExecCredential');
      clock += 55_000; // within the 10 s safety margin of expiry
      await source.current();
      source.invalidate();
      await source.current();
      assert.equal((await readFile(calls, 'utf8')).trim().split('\n').length, 3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
