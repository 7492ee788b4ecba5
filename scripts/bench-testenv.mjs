#!/usr/bin/env node
// Start-up time of the local control plane with a warm binary cache, measured side by side in
// one run: N apiserver-only starts, then N full starts (controllers + 2 kwok nodes). Prints the
// median and range of each, and the ratio between them. Run with `npm run bench:testenv`.
import { startControlPlane } from '../packages/testenv/dist/src/index.js';

const runs = Number(process.argv[2] ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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
  return median(times);
}

await startControlPlane().then((cp) => cp.stop()); // warm the page cache so the first sample is not an outlier
const apiOnly = await measure('etcd + kube-apiserver', {});
const full = await measure('+ controllers, scheduler, 2 kwok nodes', { controllers: true, nodes: 2 });
console.log(`full / apiserver-only start time: ${(full / apiOnly).toFixed(2)}x`);
