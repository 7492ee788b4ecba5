#!/usr/bin/env node
// Start-up time of the local control plane with a warm binary cache, measured side by side in
// one run: N apiserver-only starts, then N full starts (controllers + 2 kwok nodes), then, where
// the machine can run them (root, Linux), N starts with 2 real nodes (containerd, kubelet and
// kube-proxy each, until both Nodes are Ready). Prints the
// median and range of each, and the ratio between them; the last line of stdout is one JSON object
// with every figure. Run with `npm run bench:testenv`.
import { realNodesUnsupportedReason, startControlPlane } from '../packages/testenv/dist/src/index.js';
import { benchEnvironment, median, ratio, round1 } from './bench-lib.mjs';

const runs = Number(process.argv[2] ?? 5);
const environment = benchEnvironment();

async function measure(label, options) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const cp = await startControlPlane(options);
    times.push(performance.now() - started);
    await cp.stop();
  }
  const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
  console.log(
    `${label.padEnd(36)} median ${s(median(times))}  min ${s(Math.min(...times))}  max ${s(Math.max(...times))}  (n=${runs})`,
  );
  return {
    medianMs: round1(median(times)),
    minMs: round1(Math.min(...times)),
    maxMs: round1(Math.max(...times)),
    startsMs: times.map(round1),
  };
}

await startControlPlane().then((cp) => cp.stop()); // warm the page cache so the first sample is not an outlier
const apiOnly = await measure('etcd + kube-apiserver', {});
const full = await measure('+ controllers, scheduler, 2 kwok nodes', { controllers: true, nodes: 2 });
const fullToApiOnly = ratio(full.medianMs, apiOnly.medianMs);
console.log(`full / apiserver-only start time: ${fullToApiOnly.toFixed(2)}x`);
const unsupported = await realNodesUnsupportedReason();
const realNodes = unsupported ? undefined : await measure('+ 2 real nodes (no kwok)', { realNodes: { count: 2 } });
const realNodesToFull = realNodes ? ratio(realNodes.medianMs, full.medianMs) : undefined;
if (realNodes) console.log(`2 real nodes / full start time: ${realNodesToFull.toFixed(2)}x`);
else console.log(`real nodes not measured: ${unsupported}`);
console.log(
  JSON.stringify({
    benchmark: 'testenv',
    runs,
    apiOnly,
    full,
    fullToApiOnly,
    realNodes: realNodes ?? { skipped: unsupported },
    realNodesToFull,
    environment: environment.finish(),
  }),
);
