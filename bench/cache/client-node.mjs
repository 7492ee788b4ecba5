#!/usr/bin/env node
// Contender: @kubernetes/client-node's informer (makeInformer) syncing every ConfigMap in
// BENCH_NAMESPACE, under the list semantics the driver asks for (BENCH_LIST, BENCH_MANAGED_FIELDS,
// BENCH_PAGE_SIZE). Prints one JSON line: {"syncMs":…,"count":…,"maxRssBytes":…}. See bench/README.md.
import { readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node';

/**
 * This process's peak resident set size: VmHWM from /proc/self/status. Not
 * process.resourceUsage().maxRSS: on Linux exec carries the parent's peak into ru_maxrss, so a
 * child of a 500 MiB process reports at least 500 MiB there, whatever it uses itself.
 */
function peakRssBytes() {
  try {
    const kb = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // Not Linux: fall back to getrusage.
  }
  return process.resourceUsage().maxRSS * 1024;
}

const namespace = process.env.BENCH_NAMESPACE;
const expected = Number(process.env.BENCH_EXPECTED);
const list = process.env.BENCH_LIST ?? 'quorum';
const managedFields = process.env.BENCH_MANAGED_FIELDS ?? 'keep';
const pageSize = Number(process.env.BENCH_PAGE_SIZE ?? 500);
if (!namespace || !Number.isInteger(expected) || expected < 0) {
  console.error('client-node: BENCH_NAMESPACE and BENCH_EXPECTED (a count) must be set');
  process.exit(1);
}

const kc = new KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG ?? '');
const core = kc.makeApiClient(CoreV1Api);

/**
 * The informer's list function. client-node's own default is one request without a
 * resourceVersion or a limit; here it pages as client-go's reflector and Kanri do (`limit`, then
 * `continue`), asks the watch cache with resourceVersion "0" when BENCH_LIST=cache, and can drop
 * managedFields as Kanri does by default (makeInformer has no transform of its own).
 */
async function listConfigMaps() {
  const items = [];
  let token;
  let last;
  do {
    last = await core.listNamespacedConfigMap({
      namespace,
      limit: pageSize || undefined,
      _continue: token,
      resourceVersion: list === 'cache' && !token ? '0' : undefined,
    });
    for (const item of last.items) {
      if (managedFields === 'drop' && item.metadata) item.metadata.managedFields = undefined;
      items.push(item);
    }
    token = last.metadata?._continue || undefined;
  } while (token);
  // The informer watches from the list's resourceVersion: every page carries the same one.
  return { ...last, items };
}

const started = performance.now();
const informer = makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, listConfigMaps);
// Counting 'add' events keeps the check O(1); list() copies the whole store, so it runs once at the end.
let added = 0;
const synced = new Promise((resolve, reject) => {
  const check = () => {
    if (added >= expected && informer.list(namespace).length >= expected) resolve(performance.now() - started);
  };
  informer.on('add', () => {
    added++;
    if (added >= expected) check();
  });
  informer.on('delete', () => added--);
  informer.on('connect', check); // covers expected = 0
  informer.on('error', reject);
});
const timeout = setTimeout(() => {
  console.error(`client-node: store holds ${informer.list(namespace).length} of ${expected} objects after 5 min`);
  process.exit(1);
}, 300_000);
// The store is synced when it holds every object, which may be before start() has also opened the watch.
const [syncMs] = await Promise.all([synced, informer.start()]);
const count = informer.list(namespace).length;
const maxRssBytes = peakRssBytes();
clearTimeout(timeout);
await informer.stop();
console.log(JSON.stringify({ syncMs, count, maxRssBytes }));
process.exit(0);
