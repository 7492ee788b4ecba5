#!/usr/bin/env node
// Failover benchmark, side by side: Patroni (Debian's package, etcd3 store) and Kanri (the
// operator and its agents on process nodes), each a 3-member PostgreSQL 15 cluster with the same
// HA timings (lease/TTL 15 s, renew deadline/retry_timeout 10 s, retry period/loop_wait 2 s). Per
// trial a writer commits one row per transaction through the current primary, the primary's
// member loses power (every process SIGKILLed, nothing restarted), and the trial measures RTO
// (kill → first commit acknowledged by the new primary) and acknowledged commits lost; then the
// member comes back and the cluster heals. The last line of stdout is one JSON object with every
// figure. Run with `npm run bench:failover [-- --trials 10 --sync --systems patroni,kanri --seed 1]`; see
// bench/README.md.
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { KANRI_HA, startKanriSystem } from '../bench/failover/kanri.mjs';
import { PATRONI_DCS, patroniVersion, startPatroniSystem } from '../bench/failover/patroni.mjs';
import { killAllGroups } from '../bench/failover/processes.mjs';
import { killOffsets, runTrial, summarizeTrials } from '../bench/failover/trial.mjs';
import { createTable, Writer } from '../bench/failover/writer.mjs';
import { exitOnSignals, ratio, rng } from './bench-lib.mjs';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: process.env.BENCH_TRIALS ?? '10' },
    sync: { type: 'boolean', default: false },
    systems: { type: 'string', default: process.env.BENCH_SYSTEMS ?? 'patroni,kanri' },
    seed: { type: 'string', default: '1' },
    help: { type: 'boolean', default: false },
  },
});
const trials = Number(values.trials);
const seed = Number(values.seed);
const systems = values.systems.split(',').map((s) => s.trim());
if (
  values.help ||
  !Number.isInteger(trials) ||
  trials < 1 ||
  !Number.isInteger(seed) ||
  !systems.every((s) => ['patroni', 'kanri'].includes(s))
) {
  console.error('usage: node scripts/bench-failover.mjs [--trials 10] [--sync] [--systems patroni,kanri] [--seed 1]');
  process.exit(values.help ? 0 : 2);
}
// Both leaders renew on the same period; the kills fall evenly over it (see killOffsets).
const renewPeriodMs = KANRI_HA.retryPeriodSeconds * 1000;
if (renewPeriodMs !== PATRONI_DCS.loop_wait * 1000) throw new Error('Kanri and Patroni must renew on the same period');
const offsets = killOffsets(trials, renewPeriodMs, rng(seed));

const log = (line) => console.error(`[bench:failover] ${line}`);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));

const starters = {
  patroni: () => startPatroniSystem({ sync: values.sync, log }),
  kanri: () => startKanriSystem({ sync: values.sync, log }),
};

let current;
let writer;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    await writer?.stop().catch(() => {});
    await current?.stop().catch((error) => log(`cleanup: ${error.message}`));
    killAllGroups();
  })();
  return cleaning;
};
let stopping = false;
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

/** Runs every trial against one system; a system that fails to start is reported as failed. */
async function benchSystem(name) {
  const started = performance.now();
  log(`${name}: starting a 3-member cluster${values.sync ? ' (synchronous)' : ''}`);
  const out = { status: 'failed', error: null, settings: null, results: [] };
  try {
    current = await starters[name]();
    out.settings = current.settings;
    out.startMs = Math.round(performance.now() - started);
    const primary = await current.primary();
    await createTable(primary.address, current.credentials);
    writer = new Writer(() => current.candidates(), current.credentials);
    for (let trial = 1; trial <= trials && !stopping; trial++) {
      try {
        out.results.push(await runTrial(current, writer, trial, { log, offsetMs: offsets[trial - 1] }));
      } catch (error) {
        // The cluster did not heal: later trials would measure a broken cluster.
        out.results.push({ trial, ok: false, error: error.message });
        log(`  trial ${trial}: ${error.message}; stopping ${name}`);
        break;
      }
    }
    out.writeFailures = writer.failures;
    Object.assign(out, summarizeTrials(out.results));
    out.status = out.okTrials === trials ? 'ok' : out.okTrials > 0 ? 'partial' : 'failed';
    out.error = out.results.find((r) => !r.ok)?.error ?? null;
  } catch (error) {
    out.error = error.message;
    log(`${name}: ${error.message}`);
  } finally {
    await writer?.stop().catch(() => {});
    writer = undefined;
    await current?.stop().catch((error) => log(`${name}: stopping: ${error.message}`));
    current = undefined;
  }
  return out;
}

try {
  const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
  const report = {};
  for (const name of systems) {
    if (stopping) break;
    report[name] = await benchSystem(name);
  }
  if (stopping) process.exit(130);

  const rows = systems.map((name) => [name, report[name]]);
  console.log('');
  console.log(
    `Failover: power loss of the primary's member, ${trials} trials each, ${values.sync ? 'synchronous' : 'asynchronous'} replication`,
  );
  console.log(
    'system    status   trials  RTO median   min      max     lock taken  then writes   acked   lost (trials with loss)',
  );
  for (const [name, r] of rows) {
    console.log(
      `${name.padEnd(9)} ${r.status.padEnd(8)} ${`${r.okTrials ?? 0}/${trials}`.padEnd(7)} ` +
        `${`${secs(r.rtoMsMedian)} s`.padStart(8)}   ${`${secs(r.rtoMsMin)} s`.padStart(7)}  ${`${secs(r.rtoMsMax)} s`.padStart(7)}  ` +
        `${`${secs(r.takeoverMsMedian)} s`.padStart(9)}  ${`${secs(r.takeoverToWriteMsMedian)} s`.padStart(10)}  ` +
        `${String(r.commitsAcked ?? '-').padStart(6)}   ${r.commitsLost ?? '-'} (${r.trialsWithLoss ?? '-'})`,
    );
    if (r.error) console.log(`          error: ${r.error.split('\n')[0]}`);
  }
  const rtoRatio = ratio(report.kanri?.rtoMsMedian, report.patroni?.rtoMsMedian);
  if (rtoRatio != null) {
    console.log(`\nRTO ratio kanri / patroni (medians): ${rtoRatio}× (goal ≤ 1)`);
  }
  const json = {
    benchmark: 'failover',
    mode: values.sync ? 'sync' : 'async',
    trials,
    seed,
    killOffsetsMs: offsets,
    rtoRatioKanriOverPatroni: rtoRatio,
    patroniVersion: patroniVersion(),
    node: process.version,
    cpus: cpus().length,
    loadAtStart,
    loadAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
  };
  for (const [name, r] of rows) {
    json[name] = {
      status: r.status,
      error: r.error,
      settings: r.settings,
      startMs: r.startMs ?? null,
      okTrials: r.okTrials ?? 0,
      rtoMsMedian: r.rtoMsMedian ?? null,
      rtoMsMin: r.rtoMsMin ?? null,
      rtoMsMax: r.rtoMsMax ?? null,
      rtoMs: r.rtoMs ?? [],
      commitsAcked: r.commitsAcked ?? null,
      commitsLost: r.commitsLost ?? null,
      trialsWithLoss: r.trialsWithLoss ?? null,
      takeoverMsMedian: r.takeoverMsMedian ?? null,
      takeoverToWriteMsMedian: r.takeoverToWriteMsMedian ?? null,
      writeFailures: r.writeFailures ?? null,
      trialResults: r.results,
    };
  }
  console.log(JSON.stringify(json));
  if (rows.some(([, r]) => r.status !== 'ok')) process.exitCode = 1;
} finally {
  if (!stopping) await cleanUp();
}
