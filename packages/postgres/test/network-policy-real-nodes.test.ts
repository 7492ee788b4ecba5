/**
 * The cluster's NetworkPolicies where a network plugin enforces them: on real nodes, whose
 * enforcer (kube-router's NetworkPolicy controller) turns them into iptables rules in each node.
 * A Pod that is no member of the cluster (unlabelled beside it, or labelled as a member in another
 * namespace) reaches PostgreSQL but not the agents' ports or pgBackRest's; the members reach each
 * other there; the repo host's clone port is closed to all; and a clone from the cluster's volume
 * repo restores through that port, by the clone's own policy, which goes once it has restored. Also: the claims' directories are
 * their Pod's user's (fsGroup), never world-writable.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { postgresImageBuildArgs, realNodesUnsupportedReason, waitFor } from '@kanri/testenv';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import {
  BACKUP_ANNOTATION,
  LABEL,
  names,
  PGBACKREST_CLONE_PORT,
  PGBACKREST_SERVER_PORT,
  PORT,
} from '../src/contract/index.js';
import { clusterManifest, clusters, IMAGE, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupsOf, markers, sqlOn, switchWal } from './support/backup-fixtures.js';
import { instancePods } from './support/cluster-observers.js';

const run = promisify(execFile);
/** The cluster's instance Pods (not its repo host). */
const instancesOf = async (env: PostgresEnv, cluster: string) =>
  (await instancePods(env.client, cluster)).filter((p) => p.metadata?.labels?.[LABEL.instance]);
const unsupported = await realNodesUnsupportedReason();
const SOURCE = 'vault';
const COPY = 'vault-copy';
const OTHER_NAMESPACE = 'elsewhere';
const volumeRepo = {
  name: 'repo1',
  volume: { volumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};
/** Prints `open`, or why the connection failed (ECONNREFUSED for a policy's REJECT, `timeout`). */
const CONNECT = `const s = require('net').connect({ host: process.argv[1], port: Number(process.argv[2]), timeout: 3000 });
s.on('connect', () => { console.log('open'); s.destroy(); });
s.on('timeout', () => { console.log('timeout'); s.destroy(); });
s.on('error', (e) => console.log(e.code));`;

describe('NetworkPolicies enforced on real nodes', { skip: unsupported, timeout: 40 * 60_000 }, () => {
  let env: PostgresEnv;
  const pods = () => env.client.resource<Pod & { metadata: { name: string } }>('v1', 'Pod');
  const policies = () =>
    env.client.resource<NetworkPolicy & { metadata: { name: string } }>('networking.k8s.io/v1', 'NetworkPolicy');
  /** What `pod` (container `container`) gets when it connects to `host:port`. */
  const connect = async (pod: string, namespace: string, host: string, port: number, container?: string) => {
    const kubectl = env.cp.binaries.kubectl;
    assert.ok(kubectl, 'the control plane has kubectl');
    const { stdout } = await run(
      kubectl,
      [
        'exec',
        '-n',
        namespace,
        pod,
        ...(container ? ['-c', container] : []),
        '--',
        'node',
        '-e',
        CONNECT,
        host,
        String(port),
      ],
      { env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath } },
    );
    return stdout.trim();
  };
  /** A Pod of the instance image that only waits, for `kubectl exec`. */
  const probe = async (name: string, namespace: string, labels: Record<string, string>) => {
    await pods().create(
      {
        metadata: { name, namespace, labels },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            { name: 'probe', image: `${IMAGE}:15`, imagePullPolicy: 'Never', command: ['sleep', 'infinity'] },
          ],
        },
      },
      { namespace },
    );
    return waitFor(
      `probe Pod ${namespace}/${name} running`,
      async () => {
        const pod = await pods().get(name, { namespace });
        return pod.status?.containerStatuses?.[0]?.ready ? pod : undefined;
      },
      120_000,
      500,
    );
  };
  const repoHostIp = async (cluster: string) =>
    (await pods().get(names.repoHost(cluster), { namespace: 'default' })).status?.podIP ?? '';

  before(async () => {
    // Debian 13's pgBackRest (the PyPI build's image): Debian 12's does not accept the repo host's
    // certificate, which names its Pod IP.
    env = await startPostgresEnv({ realNodes: 2, imageBuildArgs: postgresImageBuildArgs('15') });
    await env.startOperator();
    await env.client.resource('v1', 'Namespace').create({ metadata: { name: OTHER_NAMESPACE } });
    await clusters(env.client).create(
      clusterManifest(SOURCE, 2, {
        backups: { pgbackrest: { repos: [volumeRepo], manual: { repoName: 'repo1', options: ['--type=full'] } } },
      } as never),
    );
    await waitReady(env.client, SOURCE, 2, 600_000);
    await waitFor(
      'the repo host Ready',
      async () =>
        (await pods().get(names.repoHost(SOURCE), { namespace: 'default' })).status?.conditions?.some(
          (c) => c.type === 'Ready' && c.status === 'True',
        ),
      300_000,
      1_000,
    );
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it("keeps the agents' and pgBackRest's ports to the cluster's own Pods, and PostgreSQL open to all", async () => {
    const [first, second] = await instancesOf(env, SOURCE);
    assert.ok(first?.status?.podIP && second?.status?.podIP, 'two instances with addresses');
    const repoHost = await repoHostIp(SOURCE);
    // Beside the cluster without its label, and with its label in another namespace: a podSelector
    // admits Pods of the policy's own namespace only.
    await probe('outsider', 'default', { app: 'outsider' });
    await probe('impostor', OTHER_NAMESPACE, { [LABEL.cluster]: SOURCE });
    const closed = [
      [second.status.podIP, PORT.peer],
      [second.status.podIP, PORT.agent],
      [repoHost, PGBACKREST_SERVER_PORT],
    ] as const;
    for (const [pod, namespace] of [
      ['outsider', 'default'],
      ['impostor', OTHER_NAMESPACE],
    ] as const) {
      assert.equal(
        await connect(pod, namespace, second.status.podIP, PORT.postgres),
        'open',
        `${pod}: PostgreSQL is for clients`,
      );
      // The clone port too, which only a restoring clone's own policy opens (it listens: the
      // clone test below restores through it).
      for (const [host, port] of [...closed, [repoHost, PGBACKREST_CLONE_PORT] as const]) {
        const got = await connect(pod, namespace, host, port);
        assert.notEqual(got, 'open', `${namespace}/${pod} reached ${host}:${port}`);
      }
    }
    // A member reaches the same ports on the same Pods: the refusals above are the policy's.
    const member = first.metadata?.name ?? '';
    for (const [host, port] of closed) {
      assert.equal(await connect(member, 'default', host, port, 'postgres'), 'open', `${member} → ${host}:${port}`);
    }
  });

  it("gives each claim's directory to its Pod's fsGroup, never world-writable", async () => {
    const claims = await env.client
      .resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim')
      .list({ namespace: 'default', labelSelector: { [LABEL.cluster]: SOURCE } });
    assert.ok(claims.items.length >= 3, 'two instances and the repo volume');
    for (const claim of claims.items) {
      const pv = await env.client
        .resource<PersistentVolume>('v1', 'PersistentVolume')
        .get(claim.spec?.volumeName ?? '');
      const dir = await stat(pv.spec?.hostPath?.path ?? '');
      assert.equal(dir.mode & 0o7777, 0o2770, `${claim.metadata?.name}: mode ${(dir.mode & 0o7777).toString(8)}`);
      assert.deepEqual([dir.uid, dir.gid], [26, 26], `${claim.metadata?.name} is the postgres user's`);
    }
  });

  it("clones from the volume repo through the source's clone port, by a policy that goes once restored", async () => {
    await sqlOn(env, SOURCE, 'CREATE TABLE markers (n int PRIMARY KEY)');
    await sqlOn(env, SOURCE, 'INSERT INTO markers VALUES (1), (2), (3)');
    await clusters(env.client).patch(
      SOURCE,
      { metadata: { annotations: { [BACKUP_ANNOTATION.backup]: 'first' } } },
      { namespace: 'default', type: 'merge' },
    );
    const backup = await waitFor(
      'the full backup to finish',
      async () => {
        const b = (await backupsOf(env, SOURCE))[0];
        return b?.status?.phase === 'Succeeded' || b?.status?.phase === 'Failed' ? b : undefined;
      },
      600_000,
      1_000,
    );
    assert.equal(backup.status?.phase, 'Succeeded', backup.status?.message);
    // After the backup: the clone gets this row only by replaying WAL from the source's archive.
    await sqlOn(env, SOURCE, 'INSERT INTO markers VALUES (4)');
    const wal = await switchWal(env, SOURCE);
    await waitFor(
      `WAL ${wal} archived`,
      async () => {
        const [row] = await sqlOn<{ last: string | null }>(
          env,
          SOURCE,
          'SELECT last_archived_wal AS last FROM pg_stat_archiver',
        );
        return (row?.last ?? '') >= wal ? true : undefined;
      },
      120_000,
      500,
    );

    await clusters(env.client).create(
      clusterManifest(COPY, 1, {
        dataSource: { postgresCluster: { clusterName: SOURCE, repoName: 'repo1' } },
      } as never),
    );
    const grant = await waitFor(
      "the clone's way to its source's repo host",
      async () =>
        (await policies().list({ namespace: 'default' })).items.find(
          (p) => p.metadata.name === names.cloneSourcePolicy(COPY),
        ),
      120_000,
      500,
    );
    assert.deepEqual(grant.spec?.ingress?.[0]?.ports, [{ protocol: 'TCP', port: PGBACKREST_CLONE_PORT }]);
    await waitReady(env.client, COPY, 1, 900_000);
    assert.deepEqual(await markers(env, COPY), [1, 2, 3, 4], 'restored from the backup and the archive behind it');

    await waitFor(
      'the way through removed once the clone restored',
      async () =>
        (await policies().list({ namespace: 'default' })).items.some(
          (p) => p.metadata.name === names.cloneSourcePolicy(COPY),
        )
          ? undefined
          : true,
      120_000,
      500,
    );
    const [copyPod] = await instancesOf(env, COPY);
    const repoHost = await repoHostIp(SOURCE);
    await waitFor(
      "the clone's Pod no longer reaches the source's repo host",
      async () =>
        (await connect(copyPod?.metadata?.name ?? '', 'default', repoHost, PGBACKREST_CLONE_PORT, 'postgres')) !==
        'open'
          ? true
          : undefined,
      60_000,
      1_000,
    );
  });
});
