// The Kanri side of the failover benchmark: a local control plane with one process node per
// instance, the PostgresCluster CRD, the operator's RBAC and the operator as a child process
// (kanri-env.mjs), and a 3-instance cluster whose Pods must each run on their own node (required
// podAntiAffinity on the hostname). A power loss of a member is `crash()` of the process node
// running its Pod; bringing it back is `recover()`.
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABEL, names, PostgresClusterResource } from '../../packages/postgres/dist/src/index.js';
import { ServiceEndpointReader, waitFor } from '../../packages/testenv/dist/src/index.js';
import { startKanriEnv } from './kanri-env.mjs';
import { queryOnce } from './writer.mjs';

/** Kanri's defaults, spelled out so the benchmark does not drift if they change. */
export const KANRI_HA = {
  leaseDurationSeconds: 15,
  renewDeadlineSeconds: 10,
  retryPeriodSeconds: 2,
  maximumLagOnFailover: 16 * 1024 * 1024,
};

const NS = 'default';

/** The PostgresCluster: `instances` Pods, never two on one node. */
export function benchCluster(name, instances, sync, storageClassName, failsafe = true) {
  return {
    apiVersion: PostgresClusterResource.apiVersion,
    kind: 'PostgresCluster',
    metadata: { name, namespace: NS },
    spec: {
      postgresVersion: 15,
      // The benchmark's writers and probes connect as the superuser.
      enableSuperuserAccess: true,
      instances: [
        {
          name: 'i',
          replicas: instances,
          dataVolumeClaimSpec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Gi' } },
            ...(storageClassName ? { storageClassName } : {}),
          },
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { [LABEL.cluster]: name } } },
              ],
            },
          },
        },
      ],
      ha: { ...KANRI_HA, failsafeMode: failsafe, ...(sync ? { synchronous: { number: 1 } } : {}) },
    },
  };
}

const clusters = (client) => client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster');

async function secretValue(client, name, key) {
  const secret = await client.resource('v1', 'Secret').get(name, { namespace: NS });
  return Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
}

/** The cluster's status says Ready with `instances` ready instances (the operator's view). */
async function waitReady(client, name, instances, timeoutMs) {
  return waitFor(
    `PostgresCluster ${name} Ready with ${instances} instances`,
    async () => {
      const c = await clusters(client).get(name, { namespace: NS });
      const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
      if (ready?.status !== 'True' || c.status?.readyInstances !== instances) {
        throw new Error(`not ready: ${ready?.message ?? 'no status'}`);
      }
      return c;
    },
    timeoutMs,
    500,
  );
}

/** A class no provisioner serves: its claims bind only to the volumes made for them below. */
const DISK_CLASS = 'bench-member-disk';

/**
 * One volume per instance on a filesystem of its own (`memberDisk(dir)` mounts it), for claims
 * of DISK_CLASS; the PV controller binds each claim to one of them. Returns the disks.
 */
async function memberVolumes(client, dir, instances, memberDisk) {
  const disks = [];
  for (let i = 0; i < instances; i++) {
    const disk = await memberDisk(join(dir, `disk-${i}`));
    disks.push(disk);
    await client.resource('v1', 'PersistentVolume').create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `bench-member-disk-${i}` },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: DISK_CLASS,
        hostPath: { path: join(disk.dir, 'volume'), type: 'DirectoryOrCreate' },
      },
    });
  }
  return disks;
}

/**
 * Starts the environment and the cluster; resolves once the primary streams to every replica.
 * `apiProxy`/`operatorProxy` put fault proxies between the agents/the operator and the API server
 * (the chaos script stalls them); `memberDisk(dir)` gives each instance's volume a filesystem of
 * its own (`system.disks`).
 */
export async function startKanriSystem({
  sync = false,
  log = () => {},
  name = 'bench',
  instances = 3,
  apiProxy = false,
  operatorProxy = false,
  memberDisk = undefined,
  // The failsafe mode (on by default): off for reproductions of fencing, where it would keep a
  // primary cut off from the API server alone serving, its replicas vouching for it.
  failsafe = true,
  // The data volumes' StorageClass without `memberDisk` (testenv's sized class for a resize).
  storageClassName = undefined,
} = {}) {
  log(`starting a control plane with ${instances} process nodes and the operator`);
  const env = await startKanriEnv({ nodes: instances, apiProxy, operatorProxy });
  const { cp, client } = env;
  const pods = client.resource('v1', 'Pod');
  const leases = client.resource('coordination.k8s.io/v1', 'Lease');
  const crashed = new Set();
  /** The killed holder's last renewTime, read once it is dead (timeline below). */
  let lastRenewal;
  let disks = [];
  let disksDir;
  // The client reaches `<name>-primary` as kube-proxy would route it: from the API server's watch
  // cache, over one kept-alive connection (as Patroni's client keeps its HTTP ones), not with a
  // new TLS handshake and a quorum read from etcd per lookup.
  const endpoints = new ServiceEndpointReader(cp, { watchCache: true });
  let credentials;

  const nodeOf = async (pod) => {
    const nodeName = (await pods.get(pod, { namespace: NS })).spec?.nodeName;
    const node = cp.processNodes.find((n) => n.name === nodeName);
    if (!node) throw new Error(`Pod ${pod} is not on a process node (${nodeName ?? 'unscheduled'})`);
    return node;
  };
  const holder = async () => (await leases.get(names.leaderLease(name), { namespace: NS })).spec?.holderIdentity;
  const podIP = async (pod) => (await pods.get(pod, { namespace: NS })).status?.podIP;

  const health = async () => {
    const h = await holder();
    if (!h) return undefined;
    const ip = await podIP(h);
    if (!ip) return undefined;
    const rows = await queryOnce(
      `${ip}:5432`,
      credentials,
      "select pg_is_in_recovery() as r, (select count(*) from pg_stat_replication where state = 'streaming')::int as n",
    );
    return { leader: h, address: `${ip}:5432`, streaming: rows[0].n, inRecovery: rows[0].r };
  };

  const system = {
    name: 'kanri',
    env,
    cp,
    client,
    clusterName: name,
    get credentials() {
      return credentials;
    },
    settings: { ...KANRI_HA, synchronous: sync ? 1 : 0, failsafeMode: failsafe },
    /** The control plane's processes and the operator's (control-weight.mjs). */
    controlPids() {
      return [...cp.processes.map((p) => p.pid), env.operatorPid];
    },
    get disks() {
      return disks;
    },
    /** Ready endpoints of `<name>-primary`, as a client without kube-proxy would reach the Service. */
    async candidates() {
      const found = await endpoints.endpoints(NS, names.primaryService(name), 5432);
      return found.filter((e) => e.ready).map((e) => e.address);
    },
    async instances() {
      const list = await pods.list({ namespace: NS, labelSelector: `${LABEL.cluster}=${name}` });
      return list.items
        .filter((p) => p.status?.podIP)
        .map((p) => ({ name: p.metadata.name, address: `${p.status.podIP}:5432`, node: p.spec?.nodeName }));
    },
    async primary() {
      const h = await health();
      if (!h || h.inRecovery) throw new Error('no writable primary');
      return { name: h.leader, address: h.address };
    },
    /** The leader Lease just before a kill: when it was last renewed. */
    async beforeKill() {
      return { lease: (await leases.get(names.leaderLease(name), { namespace: NS })).spec };
    },
    /**
     * The Lease's age at the kill, and when the new holder took it (wall clock, one machine). The
     * holder's last renewal is read once it is dead: one can land between the mark and the kill.
     */
    async timeline(mark, killedWall) {
      const after = (await leases.get(names.leaderLease(name), { namespace: NS })).spec;
      const renewTime = lastRenewal ?? mark.lease?.renewTime;
      lastRenewal = undefined;
      return {
        lockAgeAtKillMs: renewTime ? killedWall - Date.parse(renewTime) : null,
        takeoverMs: after?.acquireTime ? Date.parse(after.acquireTime) - killedWall : null,
      };
    },
    /** Power loss of the node running `pod`. */
    async kill(pod) {
      const node = await nodeOf(pod);
      crashed.add(node);
      const crash = await node.crash();
      lastRenewal = (await leases.get(names.leaderLease(name), { namespace: NS })).spec?.renewTime;
      return { frozenBy: crash?.frozenBy };
    },
    async restore(pod) {
      const node = await nodeOf(pod);
      await node.recover();
      crashed.delete(node);
    },
    /** The process node running `pod`. */
    nodeOfPod: nodeOf,
    async waitHealthy(timeoutMs = 180_000) {
      await waitFor(
        `PostgresCluster ${name}: the Lease holder writable and streaming to ${instances - 1} replicas`,
        async () => {
          const h = await health();
          if (!h || h.inRecovery || h.streaming !== instances - 1) {
            throw new Error(h ? `${h.leader}: ${h.streaming} streaming, in recovery ${h.inRecovery}` : 'no leader');
          }
          return h;
        },
        timeoutMs,
        250,
      );
      await waitReady(client, name, instances, timeoutMs);
    },
    async stop() {
      // A crashed node's loops are stopped; bring it back so that stopping removes its Pods' processes too.
      for (const node of crashed) await node.recover().catch(() => {});
      await endpoints.close();
      await env.stop();
      for (const disk of disks) await disk.unmount();
      if (disksDir) await rm(disksDir, { recursive: true, force: true });
    },
  };

  try {
    if (memberDisk) {
      disksDir = await mkdtemp(join(tmpdir(), 'kanri-bench-disks-'));
      await chmod(disksDir, 0o711); // the agents run as postgres and must reach their volumes inside
      disks = await memberVolumes(client, disksDir, instances, memberDisk);
    }
    env.startOperator();
    await clusters(client).create(
      benchCluster(name, instances, sync, memberDisk ? DISK_CLASS : storageClassName, failsafe),
    );
    credentials = {
      user: 'postgres',
      password: await waitFor('the superuser Secret', () =>
        secretValue(client, names.superuserSecret(name), 'password').then(
          (p) => p || Promise.reject(new Error('empty')),
        ),
      ),
      database: 'postgres',
    };
    const started = performance.now();
    await system.waitHealthy(300_000);
    log(`cluster ${name} ready with ${instances} instances in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    // The operator's log goes with the environment: say what it said before it does.
    const logs = await readdir(env.logDir).catch(() => []);
    for (const file of logs.filter((f) => f.startsWith('operator-'))) {
      const text = await readFile(join(env.logDir, file), 'utf8').catch(() => '');
      log(`--- ${file} (last lines)\n${text.split('\n').slice(-30).join('\n')}`);
    }
    await system.stop().catch(() => {});
    throw error;
  }
  return system;
}
