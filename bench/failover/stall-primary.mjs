#!/usr/bin/env node
// A reproduction for fencing: cut the primary's node off the API server (its fault proxy stalls
// open connections and refuses new ones) for STALL_MS (default 20,000), with a writer through
// `<name>-primary` and the split-brain watcher running, and print when the cut-off primary last
// answered, who holds the Lease as time goes by, when each instance accepted writes, and the
// primary agent's lease and fencing log lines. With renewDeadlineSeconds 10 and
// leaseDurationSeconds 15 a correct primary stops accepting writes ~10 s after its last renewal,
// before a replica can take the Lease. Run after `npx tsc -b`:
//   STALL_MS=20000 node bench/failover/stall-primary.mjs
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startKanriSystem } from './kanri.mjs';
import { killAllGroups } from './processes.mjs';
import { describeBlindSpans } from './split-brain-check.mjs';
import { startWorkload } from './workload.mjs';
import { connectTo } from './writer.mjs';

const stallMs = Number(process.env.STALL_MS ?? 20_000);
const t0 = performance.now();
const log = (line) => console.error(`${((performance.now() - t0) / 1000).toFixed(2).padStart(6)} ${line}`);
// Without the failsafe mode: its replicas would vouch for the cut-off primary, which is the point of it.
const system = await startKanriSystem({ log, name: 'stall', apiProxy: true, failsafe: false });
let writer;
let watcher;
try {
  const primary = await system.primary();
  const { credentials } = system;
  ({ writer, watcher } = await startWorkload(system, primary.address, 1));
  await sleep(3_000);
  const node = await system.nodeOfPod(primary.name);
  const db = await connectTo(primary.address, credentials);
  const leases = system.client.resource('coordination.k8s.io/v1', 'Lease');
  log(`cutting ${node.name} (primary ${primary.name}) off the API server for ${stallMs / 1000} s`);
  const cut = performance.now();
  node.apiProxy.refuseNew(true);
  node.apiProxy.stallOpenConnections();
  let lastOk = 0;
  let printed = 0;
  let failed = false;
  while (performance.now() - cut < stallMs) {
    if (performance.now() - printed > 2_000) {
      printed = performance.now();
      const spec = (await leases.get('stall-leader', { namespace: 'default' })).spec;
      log(`Lease holder ${spec.holderIdentity}, renewTime ${spec.renewTime}`);
    }
    try {
      await db.query('select 1');
      lastOk = performance.now() - cut;
    } catch (error) {
      if (!failed) log(`the cut-off primary stopped answering: ${error.message}`);
      failed = true;
    }
    await sleep(100);
  }
  log(`the cut-off primary last answered ${(lastOk / 1000).toFixed(2)} s after the cut; lifting the cut`);
  node.apiProxy.refuseNew(false);
  node.apiProxy.dropAll();
  await sleep(8_000);
  await writer.stop();
  await watcher.stop();
  const byInstance = {};
  for (const a of watcher.accepted.filter((x) => x.start > cut)) {
    byInstance[a.instance] ??= [];
    byInstance[a.instance].push(a.start - cut);
  }
  for (const [name, times] of Object.entries(byInstance)) {
    log(
      `${name} accepted writes from ${(times[0] / 1000).toFixed(2)} s to ${(times.at(-1) / 1000).toFixed(2)} s after the cut`,
    );
  }
  const violations = watcher.violations();
  const blind = watcher.blindSpans(0);
  log(
    blind.length
      ? `split-brain moments: ${violations.length} seen, but the watcher was blind (${describeBlindSpans(blind).join('; ')}): no verdict`
      : `split-brain moments: ${violations.length} ${JSON.stringify(violations.slice(0, 3))}`,
  );
  const container = node.containers().find((c) => c.pod === primary.name);
  const lines = readFileSync(container.logFile, 'utf8')
    .split('\n')
    .filter((l) => /FENCING|timed out|stopped leading|became leader|new leader/.test(l))
    .map((l) => {
      const entry = JSON.parse(l);
      return `${new Date(entry.time).toISOString()} ${entry.msg}${entry.reason ? ` (${entry.reason})` : ''}`;
    });
  console.error(lines.slice(-10).join('\n'));
  process.exitCode = violations.length || blind.length ? 1 : 0;
} finally {
  await writer?.stop().catch(() => {});
  await watcher?.stop().catch(() => {});
  await system.stop();
  killAllGroups();
}
