// A smoke run of the CloudNativePG PeerSystem on its own, as bench:peers will drive it: 4 real
// nodes (real-node-0 cordoned: it is the host's gateway to Service IPs), the operator, a
// 3-instance Cluster (asynchronous unless --sync), writes through its -rw Service while the
// primary Pod is deleted and while a switchover runs, then everything torn down. Prints its
// figures as JSON on stdout.
//
//   sudo node bench/peers/cloudnative-pg/smoke.mjs [--sync] [--power-off] [--roll]
//
// --sync makes the Cluster synchronous (one synchronous standby of any replica).
// --power-off also powers off the primary's node (testenv's RealNode.powerOff) and powers it on
// again; --roll rolls the Cluster to the alternate operand image.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KubeClient } from '@kanri/client';
import { realNodesUnsupportedReason, startControlPlane } from '@kanri/testenv';
import pg from 'pg';
import { system } from './system.mjs';

const run = promisify(execFile);
const started = performance.now();
const log = (/** @type {string} */ message) =>
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${message}\n`);
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (/** @type {number} */ ms) => Math.round(ms) / 1000;

const unsupported = await realNodesUnsupportedReason();
if (unsupported) {
  log(`cannot run real nodes here: ${unsupported}`);
  process.exit(2);
}

/**
 * One writer, as bench:peers' client: a row at a time over one connection, a new connection after
 * any error. Keeps when each commit was acknowledged.
 *
 * @param {() => Promise<import('../system.mjs').WriteTarget>} target
 */
function startWriter(target) {
  /** @type {number[]} */
  const acks = [];
  let errors = 0;
  let stopped = false;
  const done = (async () => {
    let seq = 0;
    while (!stopped) {
      /** @type {pg.Client | undefined} */
      let db;
      try {
        const t = await target();
        const [host, port] = t.address.split(':');
        db = new pg.Client({
          host,
          port: Number(port),
          user: t.user,
          password: t.password,
          database: t.database,
          connectionTimeoutMillis: 1_000,
          query_timeout: 2_000,
        });
        db.on('error', () => {});
        await db.connect();
        await db.query('CREATE TABLE IF NOT EXISTS smoke (seq bigint, at timestamptz DEFAULT now())');
        while (!stopped) {
          await db.query('INSERT INTO smoke (seq) VALUES ($1)', [++seq]);
          acks.push(performance.now());
        }
      } catch {
        errors += 1;
        await sleep(100);
      } finally {
        await db?.end().catch(() => {});
      }
    }
  })();
  return {
    acks,
    errors: () => errors,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/**
 * The longest time between two acknowledged commits from just before `fault` until writes have
 * run uninterrupted for `steadyMs` again: what a client saw of the fault.
 *
 * @param {{ acks: number[] }} writer
 * @param {number} fault  performance.now() when the fault was caused
 */
async function writeGap(writer, fault, timeoutMs = 300_000, steadyMs = 5_000) {
  const deadline = fault + timeoutMs;
  for (;;) {
    const after = writer.acks.filter((t) => t > fault);
    const last = after.at(-1);
    if (last !== undefined && performance.now() - fault > steadyMs) {
      let gap = 0;
      let previous = writer.acks.filter((t) => t <= fault).at(-1) ?? fault;
      let gapEnd = previous;
      for (const t of after) {
        if (t - previous > gap) {
          gap = t - previous;
          gapEnd = t;
        }
        previous = t;
      }
      if (performance.now() - gapEnd > steadyMs && performance.now() - last < 1_000)
        return { gapMs: Math.round(gap), resumedAfterMs: Math.round(gapEnd - fault) };
    }
    if (performance.now() > deadline) throw new Error(`writes did not resume within ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** @type {Record<string, unknown>} */
const figures = { system: system.name, synchronous: process.argv.includes('--sync') };
/** @type {import('@kanri/testenv').ControlPlane | undefined} */
let cp;
/** @type {KubeClient | undefined} */
let client;
/** @type {ReturnType<typeof startWriter> | undefined} */
let writer;
let stopping = false;
const teardown = async () => {
  if (stopping) return;
  stopping = true;
  await writer?.stop();
  await client?.close();
  // Every process of the control plane and the nodes, by PID (ControlPlane.stop).
  await cp?.stop();
};
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM']))
  process.once(signal, () => {
    log(`${signal}: tearing down`);
    teardown().finally(() => {
      log('torn down');
      process.exit(130);
    });
  });

try {
  const prepared = performance.now();
  const { imageArchives } = await system.prepare({ log });
  figures.prepareMs = Math.round(performance.now() - prepared);

  cp = await startControlPlane({ realNodes: { count: 4, imageArchives }, nodeLifecycle: true });
  client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  await client.resource('v1', 'Node').patch('real-node-0', { spec: { unschedulable: true } }, { type: 'merge' });
  const kubeconfig = cp.kubeconfigPath;
  const kubectlPath = cp.binaries.kubectl;
  if (!kubectlPath) throw new Error('the control plane has no kubectl');
  const kubectl = async (/** @type {string[]} */ ...args) =>
    (await run(kubectlPath, args, { env: { ...process.env, KUBECONFIG: kubeconfig }, maxBuffer: 64 << 20 })).stdout;
  /** @type {import('../system.mjs').PeerEnv} */
  const env = {
    cp,
    client,
    kubectl,
    instanceNodes: ['real-node-1', 'real-node-2', 'real-node-3'],
    s3: undefined,
    log,
  };

  let t = performance.now();
  await system.install(env);
  figures.installMs = Math.round(performance.now() - t);
  log(`operator installed in ${seconds(figures.installMs)} s: ${(await system.operatorPods(env)).join(', ')}`);

  const namespace = 'smoke';
  await client.resource('v1', 'Namespace').create({ metadata: { name: namespace } });
  t = performance.now();
  const cluster = await system.createCluster(env, {
    name: 'pg',
    namespace,
    instances: 3,
    synchronous: process.argv.includes('--sync'),
    storage: '1Gi',
  });
  await cluster.waitReady(900_000);
  figures.readyMs = Math.round(performance.now() - t);
  const first = await cluster.primary();
  figures.firstPrimary = first;
  log(`Cluster ready in ${seconds(figures.readyMs)} s; primary ${first.pod} on ${first.node}`);

  writer = startWriter(cluster.writeTarget);
  await sleep(5_000);
  if (writer.acks.length === 0) throw new Error('no write was acknowledged through the -rw Service');

  // The primary Pod deleted, as `kubectl delete pod` does (its grace period, CNPG's stopDelay).
  t = performance.now();
  await client.resource('v1', 'Pod').delete(first.pod, { namespace });
  const deletion = await writeGap(writer, t);
  const afterDeletion = await cluster.primary();
  figures.primaryPodDeletion = { ...deletion, from: first, to: afterDeletion };
  log(
    `primary Pod deleted: writes resumed after ${seconds(deletion.resumedAfterMs)} s (gap ${seconds(deletion.gapMs)} s), primary now ${afterDeletion.pod}`,
  );
  t = performance.now();
  await cluster.waitReady(600_000);
  figures.readyAgainMs = Math.round(performance.now() - t);

  await sleep(3_000);
  t = performance.now();
  await cluster.switchover();
  const switched = await writeGap(writer, t);
  const afterSwitchover = await cluster.primary();
  figures.switchover = { ...switched, from: afterDeletion, to: afterSwitchover };
  log(
    `switchover: writes resumed after ${seconds(switched.resumedAfterMs)} s (gap ${seconds(switched.gapMs)} s), primary now ${afterSwitchover.pod}`,
  );
  await cluster.waitReady(600_000);

  if (process.argv.includes('--power-off')) {
    // Power loss of the primary's node: nothing reaches the API until the node-lifecycle
    // controller marks the Node NotReady (50 s) and its Pods not Ready; CNPG fails over then.
    const before = await cluster.primary();
    const node = cp.realNodes.find((n) => n.name === before.node);
    if (!node) throw new Error(`no real node ${before.node}`);
    t = performance.now();
    await node.powerOff();
    const lost = await writeGap(writer, t, 600_000);
    const afterLoss = await cluster.primary();
    figures.primaryNodePowerOff = { ...lost, from: before, to: afterLoss };
    log(
      `primary's node powered off: writes resumed after ${seconds(lost.resumedAfterMs)} s (gap ${seconds(lost.gapMs)} s), primary now ${afterLoss.pod}`,
    );
    await node.powerOn();
    t = performance.now();
    await cluster.waitReady(900_000);
    figures.readyAfterPowerOnMs = Math.round(performance.now() - t);
    log(`ready again ${seconds(figures.readyAfterPowerOnMs)} s after the node's power-on`);
  }

  if (process.argv.includes('--roll')) {
    t = performance.now();
    await cluster.rollImage();
    await cluster.waitRolled(900_000);
    figures.rollMs = Math.round(performance.now() - t);
    log(`rolled to the alternate image in ${seconds(figures.rollMs)} s`);
  }

  await writer.stop();
  figures.acknowledgedWrites = writer.acks.length;
  figures.writerErrors = writer.errors();
  writer = undefined;
  t = performance.now();
  await cluster.delete();
  figures.deleteMs = Math.round(performance.now() - t);
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
} catch (error) {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  if (figures.prepareMs) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exitCode = 1;
} finally {
  await teardown();
  log('torn down');
}
process.exit(process.exitCode ?? 0);
