// A smoke run of the Patroni PeerSystem on its own, as bench:peers will drive it: a control plane
// with 4 real nodes (real-node-0 cordoned: it is the host's gateway to Service IPs), one 3-member
// cluster (asynchronous unless --sync), then the write gap when the primary's Pod is deleted,
// across a planned switchover and through a rolling update to the alternate image, measured by a
// writer through the read-write Service. Needs root.
//   sudo node bench/peers/patroni/smoke.mjs [--sync]   (prints one JSON line of figures on stdout)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KubeClient } from '@kanri/client';
import { realNodesUnsupportedReason, startControlPlane } from '@kanri/testenv';
import pg from 'pg';
import { system } from './system.mjs';

const run = promisify(execFile);
const log = (message) => process.stderr.write(`${new Date().toISOString()} ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const NAMESPACE = 'patroni-smoke';
const SYNC = process.argv.includes('--sync');
const INSTANCE_NODES = ['real-node-1', 'real-node-2', 'real-node-3'];

/**
 * Inserts a row every ~50 ms through `target`, reconnecting after any failure; each success's time
 * is kept, so a gap is the time between the last write before a fault and the first after it.
 */
function startWriter(target) {
  const acks = [];
  let stopped = false;
  const [host, port] = target.address.split(':');
  const loop = (async () => {
    let db;
    while (!stopped) {
      try {
        if (!db) {
          db = new pg.Client({
            host,
            port: Number(port),
            user: target.user,
            password: target.password,
            database: target.database,
            connectionTimeoutMillis: 1_000,
            query_timeout: 1_000,
          });
          db.on('error', () => {});
          await db.connect();
        }
        await db.query('INSERT INTO smoke_writes (at) VALUES (now())');
        acks.push(performance.now());
      } catch {
        const dead = db;
        db = undefined;
        dead?.end().catch(() => {});
      }
      await sleep(50);
    }
    await db?.end().catch(() => {});
  })();
  return {
    acks,
    /**
     * The longest time between two successive writes from the last one before `at` to the first
     * one after `settled` resolves (the fault is over), waiting up to `timeoutMs` for that write.
     */
    async gapAcross(at, settled, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      const over = await settled();
      while (!acks.some((t) => t > over)) {
        if (performance.now() > deadline) throw new Error(`no write succeeded within ${timeoutMs} ms`);
        await sleep(50);
      }
      const from = acks.findLastIndex((t) => t <= at);
      const to = acks.findIndex((t) => t > over);
      let gapMs = 0;
      for (let i = Math.max(from, 0) + 1; i <= to; i++) gapMs = Math.max(gapMs, acks[i] - acks[i - 1]);
      return { gapMs: Math.round(gapMs), resumedAfterMs: Math.round(acks[to] - at) };
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

const why = await realNodesUnsupportedReason();
if (why) {
  log(`real nodes cannot run here: ${why}`);
  process.exit(2);
}

const figures = { system: system.name, synchronous: SYNC };
const prepareStarted = performance.now();
const { imageArchives } = await system.prepare({ log });
figures.prepareMs = Math.round(performance.now() - prepareStarted);

const cp = await startControlPlane({ realNodes: { count: 4, imageArchives } });
let client;
let cluster;
let writer;
const stopAll = async () => {
  await writer?.stop().catch((e) => log(`writer: ${e.message}`));
  if (cluster) {
    const started = performance.now();
    await cluster.delete().then(
      () => (figures.deleteMs = Math.round(performance.now() - started)),
      (e) => log(`delete: ${e.message}`),
    );
  }
  await client?.close();
  await cp.stop();
};
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => {
    log(`${signal}: stopping`);
    stopAll().finally(() => process.exit(130));
  });

try {
  client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  await client.resource('v1', 'Node').patch('real-node-0', { spec: { unschedulable: true } }, { type: 'merge' });
  const kubectl = async (...args) => {
    const program = cp.binaries.kubectl;
    if (!program) throw new Error('the control plane has no kubectl');
    return (await run(program, args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } })).stdout;
  };
  const env = { cp, client, kubectl, instanceNodes: INSTANCE_NODES, s3: undefined, log };
  await system.install(env);
  await client.resource('v1', 'Namespace').create({ metadata: { name: NAMESPACE } });

  const created = performance.now();
  cluster = await system.createCluster(env, {
    name: 'pg',
    namespace: NAMESPACE,
    instances: 3,
    synchronous: SYNC,
    storage: '1Gi',
  });
  await cluster.waitReady(300_000);
  figures.timeToReadyMs = Math.round(performance.now() - created);
  log(`ready in ${figures.timeToReadyMs} ms; Pods ${(await cluster.instancePods()).join(', ')}`);

  const target = await cluster.writeTarget();
  figures.writeTarget = target.address;
  const setup = new pg.Client({ ...hostPort(target.address), user: target.user, password: target.password });
  await setup.connect();
  await setup.query('CREATE TABLE IF NOT EXISTS smoke_writes (id bigserial PRIMARY KEY, at timestamptz)');
  await setup.end();
  writer = startWriter(target);
  await sleep(3_000);

  const before = await cluster.primary();
  log(`primary ${before.pod} on ${before.node}; deleting its Pod`);
  const { uid } = (await client.resource('v1', 'Pod').get(before.pod, { namespace: NAMESPACE })).metadata;
  const deleted = performance.now();
  await client.resource('v1', 'Pod').delete(before.pod, { namespace: NAMESPACE });
  figures.podDeletion = {
    primaryBefore: before,
    ...(await writer.gapAcross(deleted, () => newPrimary(cluster, before.pod, 180_000, { client, uid }), 180_000)),
    primaryAfter: await cluster.primary(),
  };
  log(`Pod deletion: ${JSON.stringify(figures.podDeletion)}`);
  const rejoin = performance.now();
  await cluster.waitReady(300_000);
  figures.podDeletion.backToReadyMs = Math.round(performance.now() - rejoin);
  await sleep(3_000);

  const from = await cluster.primary();
  const asked = performance.now();
  await cluster.switchover();
  figures.switchover = {
    primaryBefore: from,
    askMs: Math.round(performance.now() - asked),
    ...(await writer.gapAcross(asked, () => newPrimary(cluster, from.pod, 120_000), 120_000)),
    primaryAfter: await cluster.primary(),
  };
  log(`switchover: ${JSON.stringify(figures.switchover)}`);
  await cluster.waitReady(120_000);
  await sleep(3_000);

  // The StatefulSet controller replaces Pods highest ordinal first, the primary's among them.
  const rollFrom = writer.acks.length;
  const primaries = [];
  let rolling = true;
  const sampler = (async () => {
    while (rolling) {
      // By Pod (name and uid): a replaced primary's Pod that takes its own lock back is a new
      // primary as writers see it, under the same name.
      const current = await cluster.primary().catch(() => undefined);
      const pod =
        current &&
        (await client
          .resource('v1', 'Pod')
          .get(current.pod, { namespace: NAMESPACE })
          .catch(() => undefined));
      const labelled = pod?.metadata.labels?.role === 'primary';
      const id = labelled && `${pod.metadata.name} ${pod.metadata.uid.slice(0, 8)}`;
      if (id && id !== primaries.at(-1)) primaries.push(id);
      await sleep(200);
    }
  })();
  const promotionsBefore = await promotions(client);
  const rolled = performance.now();
  await cluster.rollImage();
  await cluster.waitRolled(600_000);
  rolling = false;
  await sampler;
  const during = writer.acks.slice(Math.max(rollFrom - 1, 0));
  figures.rollingUpdate = {
    ms: Math.round(performance.now() - rolled),
    longestGapMs: Math.round(Math.max(0, ...during.slice(1).map((t, i) => t - during[i]))),
    primaryChanges: primaries.length - 1,
    primaries,
    promotions: (await promotions(client)) - promotionsBefore,
  };
  log(`rolling update: ${JSON.stringify(figures.rollingUpdate)}`);
  await writer.stop();
  figures.writes = writer.acks.length;
  writer = undefined;
} catch (error) {
  figures.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
  log(`failed: ${figures.error}`);
  process.exitCode = 1;
} finally {
  await stopAll();
}
process.stdout.write(`${JSON.stringify(figures)}\n`);

/**
 * When the cluster first names a primary other than `old`, or, given the deleted Pod's `uid`, the
 * Pod that replaced it: the StatefulSet recreates a deleted Pod under its name, and when its
 * Patroni is back before the leader lock expires (ttl 20 s) it takes its own lock up again.
 */
async function newPrimary(cluster, old, timeoutMs, deleted) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const now = performance.now();
    const current = await cluster.primary().catch(() => undefined);
    if (current && current.pod !== old) return now;
    if (current && deleted) {
      // One list, so that the label and the uid are of one object: the old Pod keeps its label
      // until it is gone, and its replacement has none until its Patroni leads.
      const { items } = await deleted.client
        .resource('v1', 'Pod')
        .list({ namespace: NAMESPACE, labelSelector: 'role=primary' })
        .catch(() => ({ items: [] }));
      if (items.some((p) => p.metadata.name === old && p.metadata.uid !== deleted.uid)) return now;
    }
    if (now > deadline) throw new Error(`no primary other than ${old} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * How many times a member was promoted: the timelines in Patroni's history (the `pg-config`
 * Endpoints), which sampling the role labels every 200 ms can overcount or miss.
 */
async function promotions(client) {
  const config = await client.resource('v1', 'Endpoints').get('pg-config', { namespace: NAMESPACE });
  return JSON.parse(config.metadata?.annotations?.history ?? '[]').length;
}

function hostPort(address) {
  const [host, port] = address.split(':');
  return { host, port: Number(port), database: 'postgres' };
}
