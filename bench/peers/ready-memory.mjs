// Rows 7 and 8: how long a system takes from the create request to a Ready cluster that takes
// writes, alone and with 20 created at once, and what its processes weigh: the operator idle and
// with those 20 clusters, and each instance's overhead (everything in its Pod but postgres).
import { round1 } from '../../scripts/bench-stats.mjs';
import { median } from '../memory/lib.mjs';
import { podMemory } from './pod-processes.mjs';

/** How many clusters the second half of row 7 creates at once, and their instances each. */
export const MANY = { clusters: 20, instances: 1 };

async function createNamespace(env, name) {
  await env.client.resource('v1', 'Namespace').create({ metadata: { name } });
}

async function deleteNamespace(env, name) {
  await env.client
    .resource('v1', 'Namespace')
    .delete(name)
    .catch(() => {});
}

/** Summed PSS of the operator's Pods, in bytes; null when the system has no operator. */
export async function operatorMemory(env, system) {
  const names = await system.operatorPods(env);
  if (names.length === 0) return null;
  let total = 0;
  for (const full of names) {
    const [namespace, name] = full.split('/');
    const pod = await env.client.resource('v1', 'Pod').get(name, { namespace });
    total += (await podMemory(env.cp, pod)).total;
  }
  return total;
}

/** Per-instance overhead of `cluster` (bytes of PSS outside postgres), one figure per instance. */
export async function instanceOverheads(env, cluster, namespace) {
  const out = [];
  for (const name of await cluster.instancePods()) {
    const pod = await env.client.resource('v1', 'Pod').get(name, { namespace });
    out.push((await podMemory(env.cp, pod)).overhead);
  }
  return out;
}

const CONDITIONS = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'];

/**
 * Where a Pod's time to Ready went, in seconds after `startedWallMs` (pure): created, then each
 * condition's last transition to True. The API keeps whole seconds, so each figure is ±1 s: enough
 * to say which stage one system spends its seconds in, not to rank two systems by it.
 */
export function podTimeline(pod, startedWallMs) {
  const at = (/** @type {string | undefined} */ t) =>
    t ? Math.round((Date.parse(t) - startedWallMs) / 100) / 10 : null;
  const out = { pod: pod.metadata?.name, created: at(pod.metadata?.creationTimestamp) };
  for (const type of CONDITIONS) {
    const c = (pod.status?.conditions ?? []).find((x) => x.type === type && x.status === 'True');
    out[type] = at(c?.lastTransitionTime);
  }
  return out;
}

/**
 * Row 7's first half: one cluster of `instances`, from the create request to Ready. Returns
 * `{ readyMs, pods }`, `pods` being each instance Pod's `podTimeline` (the stages it spent the
 * time in).
 */
export async function timeOneCluster(env, system, trial, instances, { timeoutMs = 15 * 60_000 } = {}) {
  const namespace = `peers-ready-${system.name}-${trial}`;
  await createNamespace(env, namespace);
  try {
    const startedWall = Date.now();
    const started = performance.now();
    const cluster = await system.createCluster(env, {
      name: 'ready',
      namespace,
      instances,
      synchronous: false,
      storage: '1Gi',
    });
    await cluster.waitReady(timeoutMs);
    const readyMs = round1(performance.now() - started);
    const pods = [];
    for (const name of await cluster.instancePods())
      pods.push(podTimeline(await env.client.resource('v1', 'Pod').get(name, { namespace }), startedWall));
    await cluster.delete();
    return { readyMs, pods };
  } finally {
    await deleteNamespace(env, namespace);
  }
}

/**
 * Row 7's second half and row 8's "with 20 clusters": MANY.clusters clusters created at once, the
 * time until every one is Ready (the median and the last), then the operator's memory with all
 * of them running.
 */
export async function timeManyClusters(env, system, { timeoutMs = 30 * 60_000 } = {}) {
  const namespace = `peers-many-${system.name}`;
  await createNamespace(env, namespace);
  try {
    const started = performance.now();
    const clusters = await Promise.all(
      Array.from({ length: MANY.clusters }, (_, i) =>
        system.createCluster(env, {
          name: `many-${i}`,
          namespace,
          instances: MANY.instances,
          synchronous: false,
          storage: '1Gi',
        }),
      ),
    );
    const readyMs = await Promise.all(
      clusters.map(async (c) => {
        await c.waitReady(timeoutMs);
        return performance.now() - started;
      }),
    );
    const operatorBytes = await operatorMemory(env, system);
    for (const c of clusters) await c.delete().catch(() => {});
    return {
      clusters: MANY.clusters,
      instancesEach: MANY.instances,
      medianReadyMs: round1(median(readyMs)),
      allReadyMs: round1(Math.max(...readyMs)),
      operatorBytes,
    };
  } finally {
    await deleteNamespace(env, namespace);
  }
}
