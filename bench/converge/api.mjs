// What `npm run bench:converge` (scripts/bench-converge.mjs) asks of the API server: the Item CRD,
// the Items of a run, the driver's view of convergence (a watch, confirmed by a list), the request
// counters it reads from /metrics, and the clean-up between runs.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { send } from '../../scripts/bench-lib.mjs';

const fieldManager = 'bench-converge-driver';

/** Installs the Item CRD (bench/converge/crd.json) and waits until it is established and served. */
export async function installCrd({ dispatcher, server }) {
  const crd = JSON.parse(readFileSync(new URL('crd.json', import.meta.url), 'utf8'));
  const url = `${server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
  const res = await send(
    dispatcher,
    `${url}/${crd.metadata.name}?fieldManager=${fieldManager}`,
    'PATCH',
    crd,
    'application/apply-patch+yaml',
  );
  if (res.status !== 200 && res.status !== 201) throw new Error(`installing the CRD: HTTP ${res.status} ${res.text}`);
  const deadline = performance.now() + 60_000;
  for (;;) {
    const got = await send(dispatcher, `${url}/${crd.metadata.name}`, 'GET');
    const established = JSON.parse(got.text).status?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    );
    const served = established && (await send(dispatcher, `${server}/apis/bench.kanri.dev/v1`, 'GET')).status === 200;
    if (served) return;
    if (performance.now() > deadline) throw new Error('the CRD was not established within 60 s');
    await sleep(100);
  }
}

export const itemsPath = (ns) => `/apis/bench.kanri.dev/v1/namespaces/${ns}/items`;

/** Creates namespace `ns` and `count` Items in it with `inFlight` requests at a time; `check()` may throw to stop it. */
export async function createItems({ dispatcher, server }, ns, count, { inFlight, check }) {
  const res = await send(dispatcher, `${server}/api/v1/namespaces`, 'POST', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: ns },
  });
  if (res.status !== 201) throw new Error(`creating namespace ${ns}: HTTP ${res.status} ${res.text}`);
  const width = String(count - 1).length;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      check();
      const i = next++;
      const created = await send(dispatcher, `${server}${itemsPath(ns)}`, 'POST', {
        apiVersion: 'bench.kanri.dev/v1',
        kind: 'Item',
        metadata: { name: `item-${String(i).padStart(width, '0')}` },
        spec: { value: `v${i}-${randomBytes(6).toString('hex')}` },
      });
      if (created.status !== 201)
        throw new Error(`creating Item ${i}: HTTP ${created.status} ${created.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}

/**
 * One look at namespace `ns`: how many Items have status.observedValue == spec.value, and, once
 * all of them do, whether every Item's ConfigMap exists with data.value == spec.value and a
 * controller ownerReference to the Item.
 */
export async function inspect({ dispatcher, server }, ns) {
  const res = await send(dispatcher, `${server}${itemsPath(ns)}`, 'GET');
  if (res.status !== 200) throw new Error(`listing Items: HTTP ${res.status}`);
  const list = JSON.parse(res.text).items;
  const statusDone = list.filter((i) => i.spec?.value != null && i.status?.observedValue === i.spec.value).length;
  const look = { total: list.length, statusDone, configMapsDone: null, converged: false, problem: null };
  if (statusDone !== list.length) return look;
  const cms = await send(dispatcher, `${server}/api/v1/namespaces/${ns}/configmaps`, 'GET');
  if (cms.status !== 200) throw new Error(`listing ConfigMaps: HTTP ${cms.status}`);
  const byName = new Map(JSON.parse(cms.text).items.map((cm) => [cm.metadata.name, cm]));
  look.configMapsDone = 0;
  for (const item of list) {
    const cm = byName.get(item.metadata.name);
    const owned = cm?.metadata.ownerReferences?.some(
      (o) => o.controller === true && o.uid === item.metadata.uid && o.kind === 'Item',
    );
    if (cm?.data?.value === item.spec.value && owned) look.configMapsDone++;
    else
      look.problem ??= `ConfigMap ${item.metadata.name}: ${cm ? (owned ? 'wrong value' : 'no controller reference to its Item') : 'missing'}`;
  }
  look.converged = look.configMapsDone === list.length;
  return look;
}

/**
 * Follows the Items of namespace `ns` with one watch (from a list taken before the contender
 * starts) and counts those whose status.observedValue == spec.value; `allAt` is when the count
 * last reached the total. Much cheaper for the API server than listing all Items every 250 ms,
 * which at 5,000 Items keeps it busy serializing ~5 MB lists back to back on a 2-core machine.
 * `broken` is set if the stream fails; the caller then falls back to polling.
 */
export async function watchItems({ dispatcher, server }, ns) {
  const res = await send(dispatcher, `${server}${itemsPath(ns)}`, 'GET');
  if (res.status !== 200) throw new Error(`listing Items: HTTP ${res.status}`);
  const list = JSON.parse(res.text);
  const done = new Map(list.items.map((i) => [i.metadata.name, i.status?.observedValue === i.spec?.value]));
  const state = { total: done.size, statusDone: 0, allAt: null, events: 0, broken: null, close: () => {} };
  const count = () => {
    state.statusDone = 0;
    for (const d of done.values()) if (d) state.statusDone++;
  };
  count();
  const abort = new AbortController();
  state.close = () => abort.abort();
  const query = `watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`;
  (async () => {
    const stream = await request(`${server}${itemsPath(ns)}?${query}`, {
      dispatcher,
      signal: abort.signal,
      headers: { accept: 'application/json' },
      bodyTimeout: 0,
    });
    if (stream.statusCode !== 200) throw new Error(`watch: HTTP ${stream.statusCode}`);
    let buffered = '';
    for await (const chunk of stream.body) {
      buffered += chunk.toString('utf8');
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const event = JSON.parse(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (event.type === 'ERROR') throw new Error(`watch: ${event.object?.message ?? 'error event'}`);
        if (event.type === 'BOOKMARK') continue;
        const item = event.object;
        const wasDone = done.get(item.metadata.name);
        if (event.type === 'DELETED') done.delete(item.metadata.name);
        else done.set(item.metadata.name, item.status?.observedValue === item.spec?.value);
        if (done.get(item.metadata.name) !== wasDone || event.type !== 'MODIFIED') count();
        state.total = done.size;
        state.events++;
        if (state.statusDone === state.total) state.allAt ??= performance.now();
        else state.allAt = null;
      }
    }
    throw new Error('watch: the stream ended');
  })().catch((error) => {
    if (!abort.signal.aborted) state.broken = error.message;
  });
  return state;
}

/** Mutating (and GET) requests the API server counted on Items and ConfigMaps, by "resource[/sub] VERB". */
export async function requestCounts({ dispatcher, server }) {
  const res = await send(dispatcher, `${server}/metrics`, 'GET');
  if (res.status !== 200) return null;
  const counts = {};
  for (const line of res.text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!['items', 'configmaps'].includes(labels.resource)) continue;
    if (!['GET', 'POST', 'PUT', 'PATCH', 'APPLY', 'DELETE'].includes(labels.verb)) continue;
    const key = `${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''} ${labels.verb}`;
    counts[key] = (counts[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return counts;
}

/** The requests made between two `requestCounts`. */
export function requestDelta(before, after) {
  if (!before || !after) return null;
  const delta = {};
  for (const [key, n] of Object.entries(after)) if (n - (before[key] ?? 0) > 0) delta[key] = n - (before[key] ?? 0);
  return delta;
}

/** Deletes what a run left in its namespace, so that every run meets the same API server and etcd. */
export async function cleanNamespace({ dispatcher, server }, ns, log) {
  for (const path of [itemsPath(ns), `/api/v1/namespaces/${ns}/configmaps`]) {
    const res = await send(dispatcher, `${server}${path}`, 'DELETE');
    if (res.status !== 200) log(`  cleaning ${path}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
  }
}
