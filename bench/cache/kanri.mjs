#!/usr/bin/env node
// Contender: Kanri's Informer (@kanri/cache) syncing every ConfigMap in BENCH_NAMESPACE, under the
// list semantics the driver asks for (BENCH_LIST, BENCH_MANAGED_FIELDS, BENCH_PAGE_SIZE).
// Prints one JSON line: {"syncMs":…,"count":…,"maxRssBytes":…}. See bench/README.md.
import { readFileSync } from 'node:fs';
import { Informer } from '@kanri/cache';
import { KubeClient } from '@kanri/client';

/** Peak RSS from VmHWM (getrusage's maxRSS would include the parent's peak carried over exec). */
function peakRssBytes() {
  const kb = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
  return kb ? Number(kb) * 1024 : process.resourceUsage().maxRSS * 1024;
}

const namespace = process.env.BENCH_NAMESPACE;
const expected = Number(process.env.BENCH_EXPECTED);
const list = process.env.BENCH_LIST ?? 'cache';
const managedFields = process.env.BENCH_MANAGED_FIELDS ?? 'drop';
const pageSize = Number(process.env.BENCH_PAGE_SIZE ?? 500);
if (!namespace || !Number.isInteger(expected) || expected < 0) {
  console.error('kanri: BENCH_NAMESPACE and BENCH_EXPECTED (a count) must be set');
  process.exit(1);
}

const client = await KubeClient.load();
const configMaps = client.resource('v1', 'ConfigMap');
// The Informer's first list asks for resourceVersion "0" (the watch cache). For a quorum read the
// benchmark leaves the resourceVersion out of that list, and only of the list: the watch still
// starts from the list's resourceVersion. (The Informer has no option for it; this wraps its client.)
const resource =
  list === 'quorum'
    ? new Proxy(configMaps, {
        get(target, property) {
          if (property === 'listPages')
            return (options) => target.listPages({ ...options, resourceVersion: undefined });
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      })
    : configMaps;
const started = performance.now();
const informer = new Informer(resource, {
  namespace,
  pageSize,
  // Kanri's default drops managedFields; 'keep' stores the objects as the other libraries do by default.
  ...(managedFields === 'keep' ? { transform: (o) => o } : {}),
}).start();
await informer.waitForSync();
const syncMs = performance.now() - started;
const count = informer.size;
const maxRssBytes = peakRssBytes();
await informer.stop();
await client.close();
console.log(JSON.stringify({ syncMs, count, maxRssBytes }));
