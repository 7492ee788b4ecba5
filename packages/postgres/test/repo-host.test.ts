/**
 * The operator's side of volume repos, end to end against a real control plane: a cluster with a
 * volume repo gets the repo PVC, a repo host Pod (no instance), a CA and a TLS Secret whose
 * certificates carry each Pod's IP and the cluster's client name (pruned when a Pod goes); the
 * repo host is replaced when a volume repo is added, stops on shutdown, and goes when the spec
 * drops its volume repos, its PVCs staying. Whether the repo host
 * agent serves is the agent's business (not asserted here).
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isNotFound } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim, Pod, Secret } from 'kubernetes-types/core/v1.js';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_SERVER,
  KIND,
  LABEL,
  names,
  REPO_HOST_LABEL,
} from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, volume } from './harness.js';
import { attempt, clientAsPod } from './support/pod-identity.js';

const CLUSTER = 'vault';
const REPO_HOST = names.repoHost(CLUSTER);
const INSTANCE = names.pod(CLUSTER, 'i', 0);

describe('the repo host of a cluster with a volume repo', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  const get = async <T>(kind: string, name: string) => {
    try {
      return (await env.client.resource('v1', kind).get(name, { namespace: 'default' })) as T;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  const secretData = async (name: string) => {
    const secret = await get<Secret>('Secret', name);
    return Object.fromEntries(
      Object.entries(secret?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
  };
  /** The Pod's certificate once it carries the Pod's current IP. */
  const certificateOf = (pod: string) =>
    waitFor(
      `a certificate for ${pod}'s IP`,
      async () => {
        const ip = (await get<Pod>('Pod', pod))?.status?.podIP;
        if (!ip) throw new Error(`${pod} has no IP yet`);
        const data = await secretData(names.pgbackrestTls(CLUSTER));
        const pem = data[`${pod}.crt`];
        if (!pem || !data[`${pod}.key`]) throw new Error(`no certificate for ${pod} yet`);
        const cert = new X509Certificate(pem);
        if (!cert.checkIP(ip)) throw new Error(`${pod}'s certificate is for ${cert.subjectAltName}, not ${ip}`);
        return { cert, ip, data };
      },
      120_000,
      250,
    );

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1 });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 1, {
        backups: { pgbackrest: { repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }] } },
      }),
    );
  });
  after(async () => {
    await env?.stop();
  });

  it('creates the repo PVC and the repo host Pod, owned by the cluster and labelled as no instance', async () => {
    const pod = await waitFor('the repo host Pod', async () => {
      const p = await get<Pod>('Pod', REPO_HOST);
      if (!p) throw new Error('no repo host yet');
      return p;
    });
    const owned = (o: Pod | PersistentVolumeClaim | undefined) =>
      o?.metadata?.ownerReferences?.some((r) => r.kind === KIND && r.name === CLUSTER && r.controller);
    assert.ok(owned(pod));
    assert.equal(pod.metadata?.labels?.[REPO_HOST_LABEL], 'true');
    assert.equal(pod.metadata?.labels?.[LABEL.cluster], CLUSTER);
    assert.equal(pod.metadata?.labels?.[LABEL.instance], undefined);
    assert.deepEqual(pod.spec?.containers[0]?.args, ['repo-host']);
    const claim = await waitFor('the repo PVC', async () => {
      const c = await get<PersistentVolumeClaim>('PersistentVolumeClaim', names.repoVolume(CLUSTER, 'repo1'));
      if (!c) throw new Error('no repo PVC yet');
      return c;
    });
    assert.ok(owned(claim));
    assert.equal(
      pod.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName,
      claim.metadata?.name,
    );
    // The repo host is not counted as an instance: one instance Pod and one data PVC, no more.
    await waitFor('the instance Pod', () =>
      get<Pod>('Pod', INSTANCE).then((p) => p ?? Promise.reject(new Error('no instance'))),
    );
    const pods = await env.client.resource<Pod>('v1', 'Pod').list({
      namespace: 'default',
      labelSelector: `${LABEL.cluster}=${CLUSTER}`,
    });
    assert.deepEqual(pods.items.map((p) => p.metadata?.name).sort(), [INSTANCE, REPO_HOST].sort());
  });

  it('runs the repo host as its own identity: no Secret of PostgreSQL’s, no role label, no other Pod (issue 37, finding 3)', async () => {
    await waitFor('the repo host to run', async () => {
      if (!(await get<Pod>('Pod', REPO_HOST))?.status?.podIP) throw new Error('not running yet');
      return true;
    });
    const { account, client } = await clientAsPod(env.cp, env.client, REPO_HOST);
    try {
      assert.equal(account, names.repoHostServiceAccount(CLUSTER));
      assert.notEqual(account, names.instanceServiceAccount(CLUSTER));
      const secrets = client.resource<Secret>('v1', 'Secret');
      // As the agent's cache would follow it: a list by name.
      const listed = await attempt(() =>
        secrets.list({ namespace: 'default', fieldSelector: `metadata.name=${names.postgresTls(CLUSTER)}` }),
      );
      assert.match(listed, /^403: /, 'PostgreSQL’s server key and the superuser’s client key stay unread');
      for (const name of [names.postgresTls(CLUSTER), names.pgbackrestTls(CLUSTER), names.superuserSecret(CLUSTER)])
        assert.match(await attempt(() => secrets.get(name, { namespace: 'default' })), /^403: /, name);
      const patch = (pod: string, body: unknown) =>
        attempt(() => client.resource('v1', 'Pod').patch(pod, body, { namespace: 'default', type: 'merge' }));
      assert.match(
        await patch(REPO_HOST, { metadata: { labels: { [LABEL.role]: 'primary' } } }),
        /^403: .*may change no label of its Pod/,
      );
      assert.match(
        await patch(INSTANCE, { metadata: { labels: { [LABEL.role]: 'replica' } } }),
        /^403: /,
        'another Pod',
      );
      assert.match(
        await patch(REPO_HOST, { metadata: { annotations: { [ANNOTATION_PGBACKREST_CERTIFICATE]: 'forged' } } }),
        /^403: .*may change no annotation of its Pod but/,
      );
      const server = (await get<Pod>('Pod', REPO_HOST))?.metadata?.annotations?.[ANNOTATION_PGBACKREST_SERVER];
      assert.equal(
        await patch(REPO_HOST, { metadata: { annotations: { [ANNOTATION_PGBACKREST_SERVER]: server ?? '{}' } } }),
        'allowed',
        'what its agent writes',
      );
      assert.equal((await get<Pod>('Pod', REPO_HOST))?.metadata?.labels?.[LABEL.role], undefined);
    } finally {
      await client.close();
    }
  });

  it('issues each Pod a certificate for its IP, named pgbackrest@<cluster>, from the cluster’s own CA', async () => {
    const repoHost = await certificateOf(REPO_HOST);
    const instance = await certificateOf(INSTANCE);
    const ca = await secretData(names.pgbackrestCa(CLUSTER));
    assert.ok(ca['ca.key'], 'the CA Secret holds the CA key');
    const caCert = new X509Certificate(ca['ca.crt'] ?? '');
    for (const { cert, ip, data } of [repoHost, instance]) {
      assert.equal(cert.subject, `CN=pgbackrest@${CLUSTER}`);
      assert.ok(cert.subjectAltName?.includes(`IP Address:${ip}`), cert.subjectAltName);
      assert.ok(cert.checkIssued(caCert) && cert.verify(caCert.publicKey), 'issued by the cluster’s CA');
      assert.equal(data['ca.crt'], ca['ca.crt']);
      assert.equal(data['ca.key'], undefined, 'the CA key stays in the CA Secret');
    }
    for (const name of [names.pgbackrestCa(CLUSTER), names.pgbackrestTls(CLUSTER)]) {
      const secret = await get<Secret>('Secret', name);
      assert.ok(
        secret?.metadata?.ownerReferences?.some((r) => r.kind === KIND && r.name === CLUSTER),
        name,
      );
    }
    // No Pod mounts the CA.
    const pods = await env.client.resource<Pod>('v1', 'Pod').list({ namespace: 'default' });
    assert.ok(!JSON.stringify(pods.items).includes(names.pgbackrestCa(CLUSTER)));
  });

  it('issues a new instance its certificate and prunes it once the instance is gone', async () => {
    const second = names.pod(CLUSTER, 'i', 1);
    const scale = (replicas: number) =>
      clusters(env.client).patch(
        CLUSTER,
        { spec: { instances: [{ name: 'i', replicas, dataVolumeClaimSpec: volume }] } },
        { namespace: 'default', type: 'merge' },
      );
    await scale(2);
    await certificateOf(second);
    await scale(1);
    await waitFor(
      `${second}'s certificate to be pruned`,
      async () => {
        const data = await secretData(names.pgbackrestTls(CLUSTER));
        if (data[`${second}.crt`] || data[`${second}.key`]) throw new Error('still there');
        if (!data[`${REPO_HOST}.crt`] || !data[`${INSTANCE}.crt`]) throw new Error('pruned too much');
        return true;
      },
      120_000,
      250,
    );
  });

  it('replaces the repo host when a volume repo is added, so that it mounts the new PVC too', async () => {
    const before = await get<Pod>('Pod', REPO_HOST);
    await clusters(env.client).patch(
      CLUSTER,
      {
        spec: {
          backups: {
            pgbackrest: {
              repos: [
                { name: 'repo1', volume: { volumeClaimSpec: volume } },
                { name: 'repo2', volume: { volumeClaimSpec: volume } },
              ],
            },
          },
        },
      },
      { namespace: 'default', type: 'merge' },
    );
    const replaced = await waitFor(
      'a repo host that mounts repo2',
      async () => {
        const pod = await get<Pod>('Pod', REPO_HOST);
        if (!pod || pod.metadata?.uid === before?.metadata?.uid) throw new Error('not replaced yet');
        return pod;
      },
      120_000,
      250,
    );
    assert.deepEqual(
      replaced.spec?.volumes?.flatMap((v) => v.persistentVolumeClaim?.claimName ?? []),
      [names.repoVolume(CLUSTER, 'repo1'), names.repoVolume(CLUSTER, 'repo2')],
    );
    assert.ok(await get('PersistentVolumeClaim', names.repoVolume(CLUSTER, 'repo2')));
    await certificateOf(REPO_HOST);
  });

  it('stops the repo host with the instances on shutdown, and starts it again after', async () => {
    const shutdown = (value: boolean) =>
      clusters(env.client).patch(CLUSTER, { spec: { shutdown: value } }, { namespace: 'default', type: 'merge' });
    await shutdown(true);
    await waitFor(
      'every Pod to be gone',
      async () => {
        const left = await env.client.resource<Pod>('v1', 'Pod').list({
          namespace: 'default',
          labelSelector: `${LABEL.cluster}=${CLUSTER}`,
        });
        if (left.items.length > 0) throw new Error(`left: ${left.items.map((p) => p.metadata?.name)}`);
        return true;
      },
      120_000,
      250,
    );
    assert.ok(await get('PersistentVolumeClaim', names.repoVolume(CLUSTER, 'repo1')), 'the repo PVC stays');
    await shutdown(false);
    await certificateOf(REPO_HOST);
    await certificateOf(INSTANCE);
  });

  it('removes the repo host when the spec drops the volume repo, and keeps its PVC (it holds the backups)', async () => {
    const s3 = { bucket: 'b', endpoint: 's3.example.com', region: 'r' };
    await clusters(env.client).patch(
      CLUSTER,
      { spec: { backups: { pgbackrest: { repos: [{ name: 'repo1', s3 }] } } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitFor(
      'the repo host to be gone',
      async () => {
        if (await get<Pod>('Pod', REPO_HOST)) throw new Error('the repo host is still there');
        return true;
      },
      120_000,
      250,
    );
    for (const repo of ['repo1', 'repo2']) {
      assert.ok(await get('PersistentVolumeClaim', names.repoVolume(CLUSTER, repo)), `the ${repo} PVC stays`);
    }
    assert.ok(await get('Pod', INSTANCE), 'the instance stays');
  });

  it('never logs key material', async () => {
    const logs = await Promise.all((await readdir(env.logDir)).map((f) => readFile(join(env.logDir, f), 'utf8')));
    const text = logs.join('\n');
    assert.match(text, /issuing a pgBackRest certificate/);
    assert.doesNotMatch(text, /PRIVATE KEY|BEGIN CERTIFICATE/);
  });
});
