/**
 * The operator's side of volume repos, end to end against a real control plane: a cluster with a
 * volume repo gets the repo PVC, a repo host Pod (no instance) running as its own identity, a CA,
 * and for each Pod a certificate of the key the Pod's agent made and published, for the Pod's IP
 * and the cluster's client name, written on the Pod (no Secret holds a Pod's key; the older
 * scheme's shared Secret is retired); each Pod's pgBackRest server presents its own. The repo host
 * is replaced when a volume repo is added, stops on shutdown, and goes when the spec drops its
 * volume repos, its PVCs staying.
 */
import assert from 'node:assert/strict';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { isNotFound } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim, Pod, Secret } from 'kubernetes-types/core/v1.js';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_KEY,
  ANNOTATION_PGBACKREST_SERVER,
  CLONE_GRANT_PREFIX,
  KIND,
  LABEL,
  names,
  PGBACKREST_SERVER_PORT,
  REPO_HOST_LABEL,
  splitPeerCertificate,
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
  /** The Pod's certificate once it certifies the key its agent published, for the Pod's current IP. */
  const certificateOf = (pod: string) =>
    waitFor(
      `a certificate for ${pod}'s own key and IP`,
      async () => {
        const p = await get<Pod>('Pod', pod);
        const ip = p?.status?.podIP;
        if (!ip) throw new Error(`${pod} has no IP yet`);
        const publicKeyPem = p?.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY];
        if (!publicKeyPem) throw new Error(`${pod}'s agent has not published its key yet`);
        const { cert: pem, ca } = splitPeerCertificate(p?.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE]);
        if (!pem || !ca) throw new Error(`no certificate on ${pod} yet`);
        const cert = new X509Certificate(pem);
        if (!cert.checkIP(ip)) throw new Error(`${pod}'s certificate is for ${cert.subjectAltName}, not ${ip}`);
        if (!cert.publicKey.equals(createPublicKey(publicKeyPem))) throw new Error(`not for ${pod}'s current key`);
        return { cert, ip, ca, publicKeyPem };
      },
      120_000,
      250,
    );
  /** The certificate `pod`'s pgBackRest server presents on its IP (TLS 1.3 sends it before asking ours). */
  const presented = (ip: string) =>
    waitFor(
      `the pgBackRest server on ${ip}`,
      () =>
        new Promise<X509Certificate>((resolve, reject) => {
          const socket = connect({ host: ip, port: PGBACKREST_SERVER_PORT, rejectUnauthorized: false }, () => {
            const cert = socket.getPeerX509Certificate();
            socket.destroy();
            if (cert) resolve(cert);
            else reject(new Error('no certificate presented'));
          });
          socket.once('error', reject);
        }),
      120_000,
      500,
    );

  before(async () => {
    // With pgBackRest: each Pod's server runs, and its certificate is asserted as presented.
    env = await startPostgresEnv({ processNodes: 1, pgbackrest: true });
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
      const secrets = client.resource<Secret>('v1', 'Secret');
      // As the agent's cache would follow it: a list by name.
      const listed = await attempt(() =>
        secrets.list({ namespace: 'default', fieldSelector: `metadata.name=${names.postgresTls(CLUSTER)}` }),
      );
      assert.match(listed, /^403: /, 'PostgreSQL’s server key and the superuser’s client key stay unread');
      assert.notEqual(account, names.instanceServiceAccount(CLUSTER), 'not the instances’ account');
      for (const name of [names.postgresTls(CLUSTER), names.pgbackrestTls(CLUSTER), names.superuserSecret(CLUSTER)])
        assert.match(await attempt(() => secrets.get(name, { namespace: 'default' })), /^403: /, name);
      const patch = (pod: string, body: unknown) =>
        attempt(() => client.resource('v1', 'Pod').patch(pod, body, { namespace: 'default', type: 'merge' }));
      // Two policies refuse it (the repo host's own, and the member labels' that only the operator
      // passes); the API server names whichever it evaluated first, and that order is not fixed.
      assert.match(
        await patch(REPO_HOST, { metadata: { labels: { [LABEL.role]: 'primary' } } }),
        /^403: .*(may change no label of its Pod|only the PostgreSQL operator changes the labels .*postgres\.kanri\.dev\/role)/,
      );
      assert.match(
        await patch(INSTANCE, { metadata: { labels: { [LABEL.role]: 'replica' } } }),
        /^403: /,
        'another Pod',
      );
      // The certificate the operator issues, and a clone's read grant (which its cluster writes).
      for (const annotation of [ANNOTATION_PGBACKREST_CERTIFICATE, `${CLONE_GRANT_PREFIX}${INSTANCE}`])
        assert.match(
          await patch(REPO_HOST, { metadata: { annotations: { [annotation]: 'forged' } } }),
          /^403: .*may change no annotation of its Pod but/,
          annotation,
        );
      const published = (await get<Pod>('Pod', REPO_HOST))?.metadata?.annotations ?? {};
      assert.equal(
        await patch(REPO_HOST, {
          metadata: {
            annotations: {
              [ANNOTATION_PGBACKREST_SERVER]: published[ANNOTATION_PGBACKREST_SERVER] ?? '{}',
              [ANNOTATION_PGBACKREST_KEY]: published[ANNOTATION_PGBACKREST_KEY] ?? null,
            },
          },
        }),
        'allowed',
        'what its agent writes',
      );
      assert.equal((await get<Pod>('Pod', REPO_HOST))?.metadata?.labels?.[LABEL.role], undefined);
      assert.equal(account, names.repoHostServiceAccount(CLUSTER));
    } finally {
      await client.close();
    }
  });

  it('certifies each Pod’s own key for its IP as pgbackrest@<cluster>, on the Pod; each server presents its own (issue 37, finding 4)', async () => {
    const repoHost = await certificateOf(REPO_HOST);
    const instance = await certificateOf(INSTANCE);
    const ca = await secretData(names.pgbackrestCa(CLUSTER));
    assert.ok(ca['ca.key'], 'the CA Secret holds the CA key');
    const caCert = new X509Certificate(ca['ca.crt'] ?? '');
    for (const { cert, ip, ca: chain } of [repoHost, instance]) {
      assert.equal(cert.subject, `CN=pgbackrest@${CLUSTER}`);
      assert.ok(cert.subjectAltName?.includes(`IP Address:${ip}`), cert.subjectAltName);
      assert.ok(cert.checkIssued(caCert) && cert.verify(caCert.publicKey), 'issued by the cluster’s CA');
      assert.equal(chain, ca['ca.crt']);
    }
    assert.notEqual(repoHost.publicKeyPem, instance.publicKeyPem, 'one key per Pod');
    for (const { cert, ip } of [repoHost, instance])
      assert.equal((await presented(ip)).fingerprint256, cert.fingerprint256, `the server on ${ip} presents its own`);
    assert.equal(await get<Secret>('Secret', names.pgbackrestTls(CLUSTER)), undefined, 'no shared Secret');
    // No Secret of the namespace holds a Pod's key: the only private keys are the CAs'.
    const secrets = await env.client.resource<Secret>('v1', 'Secret').list({ namespace: 'default' });
    const withKeys = secrets.items.filter((x) =>
      Object.values(x.data ?? {}).some((v) => Buffer.from(v, 'base64').toString('utf8').includes('PRIVATE KEY')),
    );
    assert.deepEqual(
      withKeys.map((x) => x.metadata?.name).sort(),
      [names.pgbackrestCa(CLUSTER), names.postgresCa(CLUSTER), names.postgresTls(CLUSTER)].sort(),
    );
    const keys = new Set(
      withKeys.flatMap((x) =>
        Object.values(x.data ?? {})
          .map((v) => Buffer.from(v, 'base64').toString('utf8'))
          .filter((v) => v.includes('PRIVATE KEY'))
          .map((v) => createPublicKey(v).export({ type: 'spki', format: 'pem' }).toString()),
      ),
    );
    for (const { publicKeyPem } of [repoHost, instance]) assert.ok(!keys.has(publicKeyPem), 'a Pod’s key in a Secret');
    // No Pod mounts the CA.
    const pods = await env.client.resource<Pod>('v1', 'Pod').list({ namespace: 'default' });
    assert.ok(!JSON.stringify(pods.items).includes(names.pgbackrestCa(CLUSTER)));
  });

  it('retires the shared Secret of an older cluster once every Pod has its own key, and the instances’ Role names it no more', async () => {
    const cluster = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
    const owner = {
      apiVersion: cluster.apiVersion ?? '',
      kind: KIND,
      name: CLUSTER,
      uid: cluster.metadata?.uid ?? '',
      controller: true,
    };
    await env.client.resource<Secret>('v1', 'Secret').create({
      metadata: {
        name: names.pgbackrestTls(CLUSTER),
        namespace: 'default',
        labels: { [LABEL.cluster]: CLUSTER },
        ownerReferences: [owner],
      },
      data: { 'ca.crt': Buffer.from('old').toString('base64') },
    });
    await waitFor(
      'the shared Secret to be deleted',
      async () => {
        if (await get<Secret>('Secret', names.pgbackrestTls(CLUSTER))) throw new Error('still there');
        return true;
      },
      60_000,
      250,
    );
    await waitFor('the Role to drop it', async () => {
      const current = (await env.client
        .resource('rbac.authorization.k8s.io/v1', 'Role')
        .get(names.instanceServiceAccount(CLUSTER), { namespace: 'default' })) as { rules: unknown[] };
      if (JSON.stringify(current.rules).includes(names.pgbackrestTls(CLUSTER))) throw new Error('still named');
      return true;
    });
  });

  it('certifies a new instance’s own key', async () => {
    const second = names.pod(CLUSTER, 'i', 1);
    const scale = (replicas: number) =>
      clusters(env.client).patch(
        CLUSTER,
        { spec: { instances: [{ name: 'i', replicas, dataVolumeClaimSpec: volume }] } },
        { namespace: 'default', type: 'merge' },
      );
    await scale(2);
    const first = await certificateOf(second);
    assert.equal((await presented(first.ip)).fingerprint256, first.cert.fingerprint256);
    await scale(1);
    await waitFor(`${second} to be gone`, async () => {
      if (await get<Pod>('Pod', second)) throw new Error('still there');
      return true;
    });
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
