/**
 * The operator and PostgreSQL as users run them, on real nodes: both images built from
 * packages/postgres/Dockerfile by buildah; the operator installed by the generated Helm chart under
 * the `restricted` Pod Security Standard, reaching the API server through the `kubernetes` Service
 * and kube-proxy; a 3-instance PostgresCluster from the instance image, with real probes, the real
 * securityContext, Services through kube-proxy, and a failover when the primary's node loses power.
 * An application Pod connects as users do: with the user Secret's `uri` as written, whose host is
 * the `-primary` Service's DNS name (the cluster DNS testenv runs), verifying the server's
 * certificate against that name, and writes on through the failover.
 *
 * The host reaches Services through real-node-0's kube-proxy, so that node is cordoned: powering
 * off a node that runs an instance never cuts the test off from the Services.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { helmChart } from '@kanri/api';
import { KubeClient } from '@kanri/client';
import {
  type BuiltImage,
  buildImages,
  type ControlPlane,
  ensureHelm,
  realNodesUnsupportedReason,
  startControlPlane,
  waitFor,
} from '@kanri/testenv';
import type { Event, Namespace, Node, Pod, Service } from 'kubernetes-types/core/v1.js';
import type { EndpointSlice } from 'kubernetes-types/discovery/v1.js';
import pg from 'pg';
import { LABEL, names, postgresOperator, ROLE } from '../src/index.js';
import { clusterManifest, clusters, connect, IMAGE, realNodeImageBuilds, secretValue, waitReady } from './harness.js';
import { instancePods } from './support/cluster-observers.js';

const run = promisify(execFile);
const NAMESPACE = postgresOperator.namespace ?? 'postgres-operator';
const unsupported = await realNodesUnsupportedReason();
const CLUSTER = 'real';
/** The README's failover goal (lease + 2 s), asserted at the database as failover-rto.test.ts does on process nodes. */
const RTO_GOAL_SECONDS = 17;
const APP_USER = 'app';
const APP_DATABASE = 'appdb';
const APP_POD = 'writer';
/**
 * The application: one INSERT per connection (so each write is its own transaction and every
 * failure is followed by a new connection), numbered, logging `ack N` once committed. The URI is
 * the Secret's as written; only what libpq needs to verify the server is added (`sslmode`, unless
 * the URI sets it, and the CA). PGCONNECT_TIMEOUT and `timeout` bound a connection to a dead Pod.
 */
const WRITER_SCRIPT = `
tls='sslmode=verify-full&sslrootcert=/ca/ca.crt'
case "$DATABASE_URI" in *sslmode=*) tls='sslrootcert=/ca/ca.crt' ;; esac
case "$DATABASE_URI" in *\\?*) conn="$DATABASE_URI&$tls" ;; *) conn="$DATABASE_URI?$tls" ;; esac
seq=0
while :; do
  seq=$((seq + 1))
  if timeout 10 /usr/lib/postgresql/15/bin/psql "$conn" -qAtX -v ON_ERROR_STOP=1 \\
    -c "INSERT INTO app_writes (seq, ssl) SELECT $seq, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"; then
    echo "ack $seq"
  else
    echo "failed $seq"
  fi
  sleep 0.2
done
`;
/** Runs `sql` once as the superuser at `address` within about a second; its rows, or undefined on any failure. */
async function tryQuery<R extends pg.QueryResultRow>(address: string, password: string, sql: string) {
  const [host, port] = address.split(':');
  const db = new pg.Client({
    host,
    port: Number(port),
    user: 'postgres',
    password,
    database: 'postgres',
    connectionTimeoutMillis: 1_000,
    query_timeout: 1_000,
  });
  db.on('error', () => {});
  try {
    await db.connect();
    return (await db.query<R>(sql)).rows;
  } catch {
    return undefined;
  } finally {
    await db.end().catch(() => {});
  }
}

describe('the operator and PostgreSQL on real nodes, from their Dockerfile and the Helm chart', {
  skip: unsupported,
}, () => {
  let operatorImage: BuiltImage;
  let instanceImage: BuiltImage;
  let cp: ControlPlane;
  let client: KubeClient;
  let dir: string;
  let helm: string;
  let operatorPod: Pod;
  const kubectl = async (...args: string[]) => {
    const { kubectl: program } = cp.binaries;
    assert.ok(program, 'the control plane has kubectl');
    return (await run(program, args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } })).stdout;
  };
  /** The addresses the `-primary` EndpointSlices list. */
  const primaryEndpoints = async () => {
    const slices = await client
      .resource<EndpointSlice>('discovery.k8s.io/v1', 'EndpointSlice')
      .list({ namespace: 'default', labelSelector: `kubernetes.io/service-name=${names.primaryService(CLUSTER)}` });
    return slices.items.flatMap((s) => s.endpoints.flatMap((e) => e.addresses));
  };
  const primaryServiceAddress = async () => {
    const service = await client
      .resource<Service>('v1', 'Service')
      .get(names.primaryService(CLUSTER), { namespace: 'default' });
    assert.ok(service.spec?.clusterIP, 'the -primary Service has a ClusterIP');
    return `${service.spec.clusterIP}:5432`;
  };

  before(async () => {
    [operatorImage, instanceImage] = (await buildImages(realNodeImageBuilds())) as [BuiltImage, BuiltImage];
    console.log(
      `images: ${[operatorImage, instanceImage].map((i) => `${i.tag} ${(i.bytes / 1e6).toFixed(0)} MB in ${(i.ms / 1000).toFixed(1)} s`).join(', ')}`,
    );
    cp = await startControlPlane({
      realNodes: { count: 4, imageArchives: [operatorImage.archive, instanceImage.archive] },
    });
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client
      .resource<Node>('v1', 'Node')
      .patch('real-node-0', { spec: { unschedulable: true } }, { type: 'merge' });
    helm = await ensureHelm();
    dir = await mkdtemp(join(tmpdir(), 'kanri-pg-chart-'));
    for (const file of helmChart(postgresOperator)) {
      await mkdir(dirname(join(dir, file.path)), { recursive: true });
      await writeFile(join(dir, file.path), file.content);
    }
    // The namespace enforces `restricted` before the chart puts anything in it.
    await client.resource<Namespace>('v1', 'Namespace').create({
      metadata: {
        name: NAMESPACE,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    });
    await run(
      helm,
      [
        'install',
        'pg',
        dir,
        '--namespace',
        NAMESPACE,
        '--set',
        'image.pullPolicy=IfNotPresent',
        '--wait',
        '--timeout',
        '3m',
      ],
      { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } },
    );
  });

  after(async () => {
    await client?.close();
    await cp?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('becomes Ready through the kubelet probing /readyz, in a container of the built image', async () => {
    operatorPod = await waitFor(
      'a Ready operator Pod',
      async () =>
        (await client.resource<Pod>('v1', 'Pod').list({ namespace: NAMESPACE })).items.find((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ),
      120_000,
      500,
    );
    const container = operatorPod.spec?.containers[0];
    assert.equal(container?.image, postgresOperator.image);
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');
    assert.match(operatorPod.spec?.nodeName ?? '', /^real-node-[1-3]$/);
    const status = operatorPod.status?.containerStatuses?.[0];
    assert.match(status?.containerID ?? '', /^containerd:\/\//);
    assert.match(status?.imageID ?? '', /sha256:[0-9a-f]{64}$/);
    assert.match(
      operatorPod.status?.podIP ?? '',
      /^10\.\d+\.[1-3]\.\d+$/,
      'a Pod address of a real node, not loopback',
    );
  });

  it('runs as the image’s unprivileged user with the restricted profile the namespace enforces', async () => {
    const stdout = await kubectl(
      'exec',
      '-n',
      NAMESPACE,
      operatorPod.metadata?.name ?? '',
      '--',
      'sh',
      '-c',
      'id -u; id -g; cat /proc/1/status',
    );
    const [uid, gid] = stdout.split('\n');
    assert.equal(uid, '1000');
    assert.equal(gid, '1000');
    assert.match(stdout, /^NoNewPrivs:\s+1$/m, 'allowPrivilegeEscalation: false reached the process');
    assert.match(stdout, /^CapEff:\s+0+$/m, 'every capability dropped');
    assert.match(stdout, /^Seccomp:\s+2$/m, 'the RuntimeDefault seccomp profile (filter mode)');
    // The same namespace refuses a Pod that asks for more: the standard is enforced, not just labelled.
    await assert.rejects(
      client.resource<Pod>('v1', 'Pod').create(
        {
          metadata: { name: 'privileged', namespace: NAMESPACE },
          spec: { containers: [{ name: 'c', image: postgresOperator.image, securityContext: { privileged: true } }] },
        },
        { namespace: NAMESPACE },
      ),
      /violates PodSecurity "restricted:latest"/,
    );
  });

  it('runs a 3-instance PostgresCluster from the instance image, the agent as entrypoint, uid 26, read-only root', async () => {
    await clusters(client).create(
      clusterManifest(CLUSTER, 3, { users: [{ name: APP_USER, databases: [APP_DATABASE] }] }),
      { namespace: 'default' },
    );
    await waitReady(client, CLUSTER, 3, 420_000);
    const pods = await instancePods(client, CLUSTER);
    assert.equal(pods.length, 3);
    for (const pod of pods) {
      const container = pod.spec?.containers.find((c) => c.name === 'postgres');
      assert.equal(container?.image, `${IMAGE}:15`);
      assert.equal(
        container?.readinessProbe?.httpGet?.path,
        '/readyz',
        'Ready only through the kubelet probing the agent',
      );
      assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
      assert.match(pod.status?.containerStatuses?.[0]?.containerID ?? '', /^containerd:\/\//);
      assert.match(pod.spec?.nodeName ?? '', /^real-node-[1-3]$/, 'never on the cordoned gateway node');
    }
    const out = await kubectl(
      'exec',
      pods[0]?.metadata?.name ?? '',
      '-c',
      'postgres',
      '--',
      'sh',
      '-c',
      // The Pod shares one PID namespace (pid 1 is the sandbox's pause): every process's command line.
      'id -u; touch /written 2>&1; for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done',
    );
    const [uid] = out.split('\n');
    assert.equal(uid, '26');
    assert.match(out, /Read-only file system/);
    assert.match(out, /^node --max-semi-space-size=1 \/opt\/kanri\/packages\/postgres\/dist\/src\/agent\/main\.js $/m);
    assert.match(
      out,
      /^\/usr\/lib\/postgresql\/15\/bin\/postgres /m,
      'Debian’s PostgreSQL 15 from the image, started by the agent',
    );
  });

  it('writes a row through <cluster>-primary, routed by kube-proxy, and reads it on both replicas', async () => {
    const password = await secretValue(client, names.superuserSecret(CLUSTER), 'password');
    const address = await primaryServiceAddress();
    const db = await connect(address, 'postgres', password);
    try {
      await db.query('CREATE TABLE real_nodes (v text)');
      await db.query("INSERT INTO real_nodes VALUES ('through kube-proxy')");
    } finally {
      await db.end();
    }
    const pods = await instancePods(client, CLUSTER);
    const primary = pods.find((p) => p.metadata?.labels?.[LABEL.role] === ROLE.primary);
    assert.deepEqual(
      await primaryEndpoints(),
      [primary?.status?.podIP],
      'the EndpointSlice lists the primary’s real Pod IP',
    );
    const replicas = pods.filter((p) => p !== primary);
    assert.equal(replicas.length, 2);
    for (const replica of replicas) {
      await waitFor(
        `the row on replica ${replica.metadata?.name}`,
        async () => {
          const r = await connect(`${replica.status?.podIP}:5432`, 'postgres', password);
          try {
            const { rows } = await r.query<{ v: string }>('SELECT v FROM real_nodes');
            return rows[0]?.v === 'through kube-proxy';
          } finally {
            await r.end();
          }
        },
        30_000,
        250,
      );
    }
  });

  /** The sequence numbers the writer logged as committed. */
  const acked = async () => [...(await kubectl('logs', APP_POD)).matchAll(/^ack (\d+)$/gm)].map((m) => Number(m[1]));

  it('lets an application Pod write with the user Secret’s uri as written: a DNS name, verify-full TLS', async () => {
    const password = await secretValue(client, names.superuserSecret(CLUSTER), 'password');
    const address = await primaryServiceAddress();
    const uri = await secretValue(client, names.userSecret(CLUSTER, APP_USER), 'uri');
    assert.match(uri, new RegExp(`@${names.primaryService(CLUSTER)}\\.default\\.svc:5432/${APP_DATABASE}$`));
    await waitFor(
      `the table the writer fills, in ${APP_DATABASE}`,
      async () => {
        const db = await connect(address, 'postgres', password, APP_DATABASE);
        try {
          await db.query(
            'CREATE TABLE app_writes (seq int PRIMARY KEY, ssl boolean NOT NULL, server inet NOT NULL DEFAULT inet_server_addr())',
          );
          await db.query(`GRANT SELECT, INSERT ON app_writes TO ${APP_USER}`);
          return true;
        } finally {
          await db.end();
        }
      },
      60_000,
      500,
    );
    await client.resource<Pod>('v1', 'Pod').create(
      {
        metadata: { name: APP_POD, namespace: 'default' },
        spec: {
          // The cordoned gateway node, which no instance runs on and which is never powered off.
          nodeName: 'real-node-0',
          automountServiceAccountToken: false,
          securityContext: { runAsUser: 26, runAsGroup: 26, runAsNonRoot: true },
          containers: [
            {
              name: 'writer',
              image: `${IMAGE}:15`,
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', WRITER_SCRIPT],
              env: [
                {
                  name: 'DATABASE_URI',
                  valueFrom: { secretKeyRef: { name: names.userSecret(CLUSTER, APP_USER), key: 'uri' } },
                },
                { name: 'PGCONNECT_TIMEOUT', value: '2' },
              ],
              volumeMounts: [{ name: 'ca', mountPath: '/ca', readOnly: true }],
            },
          ],
          volumes: [{ name: 'ca', configMap: { name: names.clientCa(CLUSTER) } }],
        },
      },
      { namespace: 'default' },
    );
    await waitFor(
      'three writes acknowledged',
      async () => ((await acked().catch(() => [])).length >= 3 ? true : undefined),
      120_000,
      500,
    );
    // The Pod's resolver is the cluster DNS (the kube-dns Service), not the machine's.
    const resolvConf = await kubectl('exec', APP_POD, '--', 'cat', '/etc/resolv.conf');
    assert.match(
      resolvConf,
      new RegExp(`^nameserver ${cp.realNodeNetwork?.clusterDnsIp.replaceAll('.', '\\.')}$`, 'm'),
    );
    assert.match(resolvConf, /^search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local$/m);
    const db = await connect(address, 'postgres', password, APP_DATABASE);
    try {
      const { rows } = await db.query<{ seq: number; ssl: boolean }>('SELECT seq, ssl FROM app_writes');
      assert.ok(rows.length >= 3);
      assert.ok(
        rows.every((r) => r.ssl),
        'every write came over TLS',
      );
    } finally {
      await db.end();
    }
  });

  it('fails over within the RTO goal when the primary’s node loses power', async () => {
    const password = await secretValue(client, names.superuserSecret(CLUSTER), 'password');
    const address = await primaryServiceAddress();
    const before = await instancePods(client, CLUSTER);
    const primary = before.find((p) => p.metadata?.labels?.[LABEL.role] === ROLE.primary);
    const node = cp.realNodes.find((n) => n.name === primary?.spec?.nodeName);
    assert.ok(node && primary, `the primary ${primary?.metadata?.name} and its node`);
    const write = async (to: string) =>
      (await tryQuery(to, password, "INSERT INTO real_nodes VALUES ('after the failover')")) !== undefined;
    assert.ok(await write(address), 'writes go through before the power-off');
    const survivors = before.filter((p) => p !== primary).map((p) => `${p.status?.podIP}:5432`);
    const off = performance.now();
    await node.powerOff();
    const secondsSinceOff = () => (performance.now() - off) / 1000;
    // At the database (as failover-rto.test.ts measures on process nodes), and as a client sees
    // it: through the Service, once the new primary's label reached the EndpointSlice and kube-proxy.
    const [atDatabase, throughService] = await Promise.all([
      waitFor(
        'a write accepted by a surviving instance',
        async () => ((await Promise.all(survivors.map(write))).some(Boolean) ? secondsSinceOff() : undefined),
        120_000,
        100,
      ),
      waitFor(
        'a write through the -primary Service',
        async () => ((await write(address)) ? secondsSinceOff() : undefined),
        120_000,
        100,
      ),
    ]);
    console.log(
      `real-node failover after ${node.name} lost power: first write at the new primary ${atDatabase.toFixed(2)} s, through ${names.primaryService(CLUSTER)} ${throughService.toFixed(2)} s`,
    );
    // The new primary labels itself, then moves the label off the dead one (its node is off: no
    // agent of its own will): for a moment both carry it (local CI, 2026-12-07).
    const promoted = await waitFor(
      'the primary role label on one instance alone',
      async () => {
        const leaders = (await instancePods(client, CLUSTER)).filter(
          (p) => p.metadata?.labels?.[LABEL.role] === ROLE.primary,
        );
        return leaders.length === 1 ? leaders[0] : undefined;
      },
      30_000,
      200,
    );
    assert.notEqual(promoted?.metadata?.name, primary.metadata?.name, 'another instance leads');
    assert.ok(
      atDatabase <= RTO_GOAL_SECONDS,
      `RTO at the database ${atDatabase.toFixed(2)} s, goal ${RTO_GOAL_SECONDS} s`,
    );
    // The Service's figure is reported, not bounded: beyond Kanri's failover it holds the
    // EndpointSlice controller and kube-proxy (whose iptables rules sync at most once a second),
    // which took 1.0 s on an idle machine and 2.3 s under the full suite. What must hold is where
    // it leads: to the new primary alone. Until the new primary has moved the label off the dead
    // Pod, and kube-proxy has caught up, a connection may still be sent to the dead Pod (and time
    // out, as after a real power loss), however soon a first write got through.
    const settled = await waitFor(
      `${names.primaryService(CLUSTER)} listing only the new primary`,
      async () => {
        const endpoints = await primaryEndpoints();
        return endpoints.length === 1 && endpoints[0] === promoted?.status?.podIP ? secondsSinceOff() : undefined;
      },
      60_000,
      100,
    );
    console.log(
      `real-node failover: the EndpointSlice listed only the new primary ${settled.toFixed(2)} s after the power-off`,
    );
    const serverOf = async () =>
      (await tryQuery<{ ip: string }>(address, password, 'SELECT host(inet_server_addr()) AS ip'))?.[0]?.ip;
    // kube-proxy balances at random: ten connections in a row, all to the new primary.
    await waitFor(
      'ten connections in a row through the Service, all to the new primary',
      async () => {
        for (let i = 0; i < 10; i++) if ((await serverOf()) !== promoted?.status?.podIP) return false;
        return true;
      },
      30_000,
      200,
    );
    const db = await connect(address, 'postgres', password);
    try {
      const { rows } = await db.query<{ v: string }>("SELECT v FROM real_nodes WHERE v = 'through kube-proxy'");
      assert.equal(rows.length, 1, 'the row replicated before the failover survives it');
    } finally {
      await db.end();
    }
    // The application found the new primary by the same DNS name and wrote on: its writes reach
    // the new primary, and none it was told were committed there is missing.
    type Write = { seq: number; server: string; ssl: boolean };
    const writesAt = async (server: string) => {
      const db = await connect(address, 'postgres', password, APP_DATABASE);
      try {
        const { rows } = await db.query<Write>('SELECT seq, host(server) AS server, ssl FROM app_writes ORDER BY seq');
        return rows.filter((r) => r.server === server);
      } finally {
        await db.end();
      }
    };
    const newPrimary = promoted?.status?.podIP ?? '';
    await waitFor(
      'three writes of the writer at the new primary',
      async () => ((await writesAt(newPrimary)).length >= 3 ? true : undefined),
      120_000,
      500,
    );
    const ackedNow = await acked();
    const atNew = await writesAt(newPrimary);
    const atOld = await writesAt(primary.status?.podIP ?? '');
    const firstAtNew = atNew[0]?.seq ?? 0;
    assert.ok(
      atOld.every((r) => r.seq < firstAtNew),
      'the writer moved to the new primary once and for all',
    );
    const committed = new Set(atNew.map((r) => r.seq));
    assert.deepEqual(
      ackedNow.filter((seq) => seq >= firstAtNew && !committed.has(seq)),
      [],
      'every write acknowledged since it reached the new primary is there',
    );
    assert.ok(
      atNew.every((r) => r.ssl),
      'over TLS',
    );
    const events = await client.resource<Event>('v1', 'Event').list({});
    assert.deepEqual(
      events.items.filter((e) => e.reason === 'MissingClusterDNS').map((e) => `${e.involvedObject.name}: ${e.message}`),
      [],
      'no kubelet warns MissingClusterDNS',
    );
  });
});
