/**
 * Issue acceptance, end to end: real kube-apiserver, etcd, controllers and scheduler; process
 * nodes running the instance agent and real PostgreSQL 15; the operator as a child process under
 * its generated RBAC.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { KubeObject } from '@kanri/client';
import { isProcessAlive, waitFor } from '@kanri/testenv';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import { LABEL, names } from '../src/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  primarySql,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';
import { instanceProcesses } from './support/instance-processes.js';

const run = promisify(execFile);

describe('PostgresCluster end to end', { timeout: 20 * 60_000 }, () => {
  let env: PostgresEnv;
  const pods = async (cluster: string) =>
    (
      await env.client
        .resource<Pod>('v1', 'Pod')
        .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster}` })
    ).items;
  const podIP = async (name: string) =>
    (await env.client.resource<Pod>('v1', 'Pod').get(name, { namespace: 'default' })).status?.podIP ?? '';
  const superuser = () => secretValue(env.client, names.superuserSecret('hippo'), 'password');
  const sql = (text: string) => primarySql(env, 'hippo', text);
  const scale = (replicas: number) =>
    clusters(env.client).patch('hippo', [{ op: 'replace', path: '/spec/instances/0/replicas', value: replicas }], {
      namespace: 'default',
      type: 'json',
    });
  const streamingReplicas = async () =>
    (await sql("select application_name from pg_stat_replication where state = 'streaming'")).map(
      (r) => r.application_name as string,
    );

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
  });
  after(async () => {
    await env?.stop();
  });

  it('brings up 3 instances: one primary streaming to 2 replicas, Ready in status and kubectl get pgc', async () => {
    const started = Date.now();
    await clusters(env.client).create(clusterManifest('hippo', 3, { users: [{ name: 'app', databases: ['appdb'] }] }));
    const ready = await waitReady(env.client, 'hippo', 3);
    console.log(`# time to Ready (3 instances): ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const primary = ready.status?.primary ?? '';
    assert.match(primary, /^hippo-i-\d$/);
    assert.equal(ready.status?.instances?.filter((i) => i.role === 'replica').length, 2);
    await waitFor('2 streaming replicas', async () => (await streamingReplicas()).length === 2, 60_000, 500);
    const replicas = (await pods('hippo')).map((p) => p.metadata?.name).filter((n) => n !== primary);
    assert.deepEqual((await streamingReplicas()).sort(), replicas.sort());
    const { stdout } = await run(env.cp.binaries.kubectl ?? 'kubectl', ['get', 'pgc', '-n', 'default'], {
      env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath },
    });
    assert.match(stdout, /READY\s+INSTANCES\s+READY-INSTANCES\s+PRIMARY/);
    assert.match(stdout, new RegExp(`hippo\\s+True\\s+3\\s+3\\s+${primary}`));
  });

  it("limits the agents' and pgBackRest's ports to the cluster's own Pods with a NetworkPolicy", async () => {
    // Process nodes enforce no NetworkPolicy (there is no network plugin): this checks what the
    // operator asks of one, as the API server stored it.
    const policy = await env.client
      .resource<NetworkPolicy & KubeObject>('networking.k8s.io/v1', 'NetworkPolicy')
      .get(names.networkPolicy('hippo'), { namespace: 'default' });
    assert.deepEqual(policy.spec, {
      podSelector: { matchLabels: { [LABEL.cluster]: 'hippo' } },
      policyTypes: ['Ingress'],
      ingress: [
        { ports: [{ protocol: 'TCP', port: 5432 }] },
        {
          from: [{ podSelector: { matchLabels: { [LABEL.cluster]: 'hippo' } } }],
          ports: [
            { protocol: 'TCP', port: 8000 },
            { protocol: 'TCP', port: 8001 },
            { protocol: 'TCP', port: 8432 },
          ],
        },
      ],
    });
    assert.equal(policy.metadata?.ownerReferences?.[0]?.name, 'hippo', 'deleted with the cluster');
  });

  it('replicates a row written through <name>-primary to both replicas', async () => {
    await sql('create table t (id int primary key, v text)');
    await sql("insert into t values (1, 'hello')");
    const cluster = await clusters(env.client).get('hippo', { namespace: 'default' });
    const replicas = (cluster.status?.instances ?? []).filter((i) => i.role === 'replica');
    assert.equal(replicas.length, 2);
    for (const replica of replicas) {
      const db = await connect(`${await podIP(replica.name)}:5432`, 'postgres', await superuser());
      try {
        const rows = await waitFor(
          `the row on ${replica.name}`,
          // An empty result is truthy: the table can reach the replica before the row does.
          async () => {
            const { rows } = await db.query('select v from t where id = 1');
            return rows.length > 0 ? rows : undefined;
          },
          30_000,
          200,
        );
        assert.deepEqual(rows, [{ v: 'hello' }]);
        assert.deepEqual((await db.query('select pg_is_in_recovery() as r')).rows, [{ r: true }]);
      } finally {
        await db.end();
      }
    }
  });

  it("creates declared users and databases; each Secret's uri connects; no password in any log", async () => {
    const uri = new URL(await secretValue(env.client, names.userSecret('hippo', 'app'), 'uri'));
    assert.equal(uri.hostname, 'hippo-primary.default.svc');
    assert.equal(uri.pathname, '/appdb');
    // No cluster DNS or kube-proxy here: reach the Service through its EndpointSlice.
    const address = await serviceAddress(env.cp, 'default', 'hippo-primary', 5432);
    const db = await waitFor(
      'user app to log in',
      () => connect(address, decodeURIComponent(uri.username), decodeURIComponent(uri.password), 'appdb'),
      60_000,
      500,
    );
    try {
      const rows = (await db.query('select current_user as u, current_database() as d')).rows;
      assert.deepEqual(rows, [{ u: 'app', d: 'appdb' }]);
    } finally {
      await db.end();
    }
    const passwords = [
      await superuser(),
      await secretValue(env.client, names.replicationSecret('hippo'), 'password'),
      decodeURIComponent(uri.password),
    ];
    const logs = await env.allLogs();
    assert.ok(logs.length > 1000, 'logs were collected');
    for (const password of passwords) assert.equal(logs.includes(password), false, 'a password appears in a log');
  });

  it('keeps the passwords out of every instance process environment (/proc/<pid>/environ): they come as files', async () => {
    const passwords = [await superuser(), await secretValue(env.client, names.replicationSecret('hippo'), 'password')];
    const instances = (await pods('hippo')).filter((p) => p.metadata?.labels?.[LABEL.instance]);
    assert.equal(instances.length, 3);
    for (const pod of instances) {
      const name = pod.metadata?.name ?? '';
      const processes = await instanceProcesses(env.cp, name, pod.status?.podIP ?? '', passwords[0] ?? '');
      for (const [what, pid] of Object.entries(processes)) {
        const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
        assert.match(environ, /(^|\0)PATH=/, `${name}'s ${what} environment was read`);
        for (const password of passwords)
          assert.equal(environ.includes(password), false, `${name}'s ${what} has a password in its environment`);
      }
      const volume = pod.spec?.volumes?.find((v) => v.name === 'credentials');
      assert.deepEqual(
        volume?.projected?.sources?.map((s) => s.secret?.name),
        [names.superuserSecret('hippo'), names.replicationSecret('hippo')],
      );
    }
  });

  it('puts back drift: a deleted Service, a changed managed label, a deleted replica Pod', async () => {
    const services = env.client.resource('v1', 'Service');
    await services.delete('hippo-primary', { namespace: 'default' });
    await waitFor(
      'hippo-primary to be recreated',
      () => services.get('hippo-primary', { namespace: 'default' }),
      30_000,
      200,
    );
    await services.patch(
      'hippo-replicas',
      { metadata: { labels: { [LABEL.cluster]: 'someone-else' } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitFor(
      'the label to be restored',
      async () =>
        (await services.get('hippo-replicas', { namespace: 'default' })).metadata?.labels?.[LABEL.cluster] === 'hippo',
      30_000,
      200,
    );
    const cluster = await clusters(env.client).get('hippo', { namespace: 'default' });
    const replica = cluster.status?.instances?.find((i) => i.role === 'replica')?.name ?? '';
    const before = await env.client.resource<Pod>('v1', 'Pod').get(replica, { namespace: 'default' });
    await env.client.resource('v1', 'Pod').delete(replica, { namespace: 'default' });
    await waitFor(
      `${replica} to come back`,
      async () =>
        (
          await env.client
            .resource<Pod>('v1', 'Pod')
            .get(replica, { namespace: 'default' })
            .catch(() => undefined)
        )?.metadata?.uid !== before.metadata?.uid,
      60_000,
      500,
    );
    await waitReady(env.client, 'hippo', 3);
    await waitFor('it to stream again', async () => (await streamingReplicas()).includes(replica), 60_000, 500);
  });

  it('scales 3 → 5 (new replicas catch up) and 5 → 2 (never the primary; their volumes deleted)', async () => {
    const primary = (await clusters(env.client).get('hippo', { namespace: 'default' })).status?.primary;
    await scale(5);
    await waitReady(env.client, 'hippo', 5, 300_000);
    await waitFor('4 streaming replicas', async () => (await streamingReplicas()).length === 4, 60_000, 500);
    await sql("insert into t values (2, 'after scale-up')");
    const five = await pods('hippo');
    for (const pod of five.filter((p) => p.metadata?.labels?.[LABEL.role] === 'replica')) {
      const db = await connect(`${pod.status?.podIP}:5432`, 'postgres', await superuser());
      try {
        await waitFor(
          `row 2 on ${pod.metadata?.name}`,
          async () => (await db.query('select 1 from t where id = 2')).rowCount === 1,
          30_000,
          200,
        );
      } finally {
        await db.end();
      }
    }
    await scale(2);
    const two = await waitReady(env.client, 'hippo', 2, 120_000);
    assert.equal(two.status?.primary, primary, 'the primary stays');
    await waitFor('3 Pods to be gone', async () => (await pods('hippo')).length === 2, 60_000, 500);
    const remaining = new Set((await pods('hippo')).map((p) => p.metadata?.name));
    assert.ok(remaining.has(primary ?? ''));
    await waitFor(
      'the removed instances’ volumes to be deleted (policy Delete)',
      async () => {
        const claims = (
          await env.client
            .resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim')
            .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=hippo` })
        ).items;
        return claims.length === 2 && claims.every((c) => remaining.has(c.metadata?.labels?.[LABEL.instance]));
      },
      60_000,
      500,
    );
  });

  it('converges when the operator is killed in the middle of creating a cluster', async () => {
    await clusters(env.client).create(clusterManifest('zoo', 2));
    await waitFor('the first zoo Pod', async () => (await pods('zoo')).length > 0, 60_000, 100);
    await env.stopOperator('SIGKILL');
    await env.startOperator();
    await waitReady(env.client, 'zoo', 2, 240_000);
  });

  it('deleting clusters removes every owned object, process and volume directory', async () => {
    const pvs = (await env.client.resource<PersistentVolume>('v1', 'PersistentVolume').list()).items;
    const dirs = pvs.map((pv) => pv.spec?.hostPath?.path ?? pv.spec?.local?.path ?? '').filter(Boolean);
    assert.ok(dirs.length >= 4, `volume directories known: ${dirs.join(', ')}`);
    const pids = env.cp.processNodes.flatMap((n) => n.containers().flatMap((c) => c.pids));
    for (const name of ['hippo', 'zoo']) await clusters(env.client).delete(name, { namespace: 'default' });
    for (const kind of ['Pod', 'PersistentVolumeClaim', 'Service', 'Secret', 'ConfigMap', 'ServiceAccount']) {
      await waitFor(
        `every ${kind} of the clusters to be deleted`,
        async () => {
          const items = (await env.client.resource<KubeObject>('v1', kind).list({ namespace: 'default' })).items;
          return items.every((o) => !['hippo', 'zoo'].includes(o.metadata?.labels?.[LABEL.cluster] ?? ''));
        },
        120_000,
        500,
      );
    }
    await waitFor(
      'every PersistentVolume to be deleted',
      async () => (await env.client.resource('v1', 'PersistentVolume').list()).items.length === 0,
      120_000,
      500,
    );
    await waitFor('every volume directory to be removed', () => dirs.every((d) => !existsSync(d)), 60_000, 500);
    await waitFor('every instance process to exit', () => pids.every((pid) => !isProcessAlive(pid)), 60_000, 500);
    // The leader Leases are the clusters' too: a stale one (with its leader history) would forbid
    // initdb to a new cluster of the same name.
    await waitFor(
      'the leader Leases to be deleted with their clusters',
      async () => {
        const leases = (
          await env.client.resource<KubeObject>('coordination.k8s.io/v1', 'Lease').list({ namespace: 'default' })
        ).items;
        return leases.every((l) => !['hippo-leader', 'zoo-leader'].includes(l.metadata?.name ?? ''));
      },
      60_000,
      500,
    );
    await clusters(env.client).create(clusterManifest('zoo', 1));
    await waitReady(env.client, 'zoo', 1, 180_000);
  });
});
