#!/usr/bin/env node
// Contender: Kanri's Informer (@kanri/cache) syncing every ConfigMap in BENCH_NAMESPACE.
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
if (!namespace || !Number.isInteger(expected) || expected < 0) {
  console.error('kanri: BENCH_NAMESPACE and BENCH_EXPECTED (a count) must be set');
  process.exit(1);
}

const client = await KubeClient.load();
const started = performance.now();
const informer = new Informer(client.resource('v1', 'ConfigMap'), { namespace }).start();
await informer.waitForSync();
const syncMs = performance.now() - started;
const count = informer.size;
const maxRssBytes = peakRssBytes();
await informer.stop();
await client.close();
console.log(JSON.stringify({ syncMs, count, maxRssBytes }));
