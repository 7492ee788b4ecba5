#!/usr/bin/env node
// Failover benchmark, side by side: Patroni (4.1.x from PyPI, etcd3 store, failsafe_mode on;
// `--systems patroni3` adds Debian's 3.0.2 as an extra column) and Kanri (the
// operator and its agents on process nodes), each a 3-member PostgreSQL 15 cluster with the same
// HA timings (lease/TTL 15 s, renew deadline/retry_timeout 10 s, retry period/loop_wait 2 s). Both
// clusters run for the whole benchmark and the trials alternate between them (P K, K P, P K, …),
// each pair with the same kill offset, so that the two are paired and meet the same machine. Per
// trial one client, the same for both (libpq with every member's address and
// target_session_attrs=read-write), commits one row per transaction, the primary's member loses
// power (every process SIGKILLed, nothing restarted), and the trial measures when the database
// took writes again (a probe straight at each surviving member), when the client's first commit
// was acknowledged (RTO), and the acknowledged commits lost; then the member comes back and the
// cluster heals. The last line of stdout is one JSON object with every figure, the paired
// differences and their sign tests. Run with
// `npm run bench:failover [-- --trials 10 --sync --systems patroni,kanri --seed 1]`; see bench/README.md.
// Patroni 4 takes no ttl under 20 s: its lease is 20 s where Kanri's is 15 (patroni-release.mjs).
import { parseSideBySide, renewPeriodMs } from '../bench/failover/cli.mjs';
import { openControlWeight } from '../bench/failover/control-weight.mjs';
import { startKanriSystem } from '../bench/failover/kanri.mjs';
import { LibpqWriter } from '../bench/failover/libpq-writer.mjs';
import { startPatroniSystem } from '../bench/failover/patroni.mjs';
import { PATRONI_SYSTEMS } from '../bench/failover/patroni-release.mjs';
import { killAllGroups } from '../bench/failover/processes.mjs';
import { compareSystems, summarizeTrials, systemStatus } from '../bench/failover/summary.mjs';
import { killOffsets, runTrial } from '../bench/failover/trial.mjs';
import { describeWalSegments, patroniWalSegmentMiB, walSegmentBytesAt } from '../bench/failover/wal-segments.mjs';
import { createProbeTable } from '../bench/failover/writable-probe.mjs';
import { createTable } from '../bench/failover/writer.mjs';
import { benchEnvironment, ensureVenv, exitOnSignals, rng } from './bench-lib.mjs';

const WEIGHTS = ['normal', 'low', 'alternate'];
const { values, trials, seed, systems } = parseSideBySide({
  defaultTrials: '10',
  usage:
    'node scripts/bench-failover.mjs [--trials 10] [--sync] [--systems patroni,kanri[,patroni3]] [--seed 1] [--wal-segments equal|default] [--no-patroni-failsafe] [--control-weight normal|low|alternate]',
  extra: { 'control-weight': { type: 'string', default: 'normal' } },
  valid: (v) => WEIGHTS.includes(v['control-weight']),
});
// Where each system's coordination side runs relative to its members (control-weight.mjs):
// `normal` shares the CPU evenly, `low` gives the members the CPU first, as separate machines
// would, and `alternate` runs odd trials low and even ones normal, so both are measured side by side.
const controlWeight = values['control-weight'];
const weightOf = (trial) => (controlWeight === 'alternate' ? (trial % 2 ? 'low' : 'normal') : controlWeight);
const controlGroup = controlWeight === 'normal' ? undefined : openControlWeight();
if (controlWeight !== 'normal' && !controlGroup) {
  console.error('--control-weight needs root and a cpu cgroup controller');
  process.exit(2);
}
// Both leaders renew on the same period; the kills fall evenly over it (see killOffsets).
const offsets = killOffsets(trials, renewPeriodMs(), rng(seed));
const environment = benchEnvironment();

const log = (line) => console.error(`[bench:failover] ${line}`);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));

const starters = {
  ...Object.fromEntries(
    PATRONI_SYSTEMS.map((system) => [
      system,
      () =>
        startPatroniSystem({
          system,
          sync: values.sync,
          log,
          failsafeMode: values['patroni-failsafe'],
          walSegmentMiB: patroniWalSegmentMiB(values['wal-segments']),
        }),
    ]),
  ),
  kanri: () => startKanriSystem({ sync: values.sync, log }),
};

/** name → { system, writer, out } */
const running = new Map();
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    for (const [name, { system, writer }] of running) {
      await writer?.stop().catch(() => {});
      await system?.stop().catch((error) => log(`${name}: stopping: ${error.message}`));
    }
    running.clear();
    controlGroup?.remove();
    killAllGroups();
  })();
  return cleaning;
};
let stopping = false;
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

let venv;
try {
  venv = await ensureVenv('failover-client', 'bench/failover/requirements.txt', { log });
  // 1. Every system up at once, each with its tables and its own client. One that does not start
  // fails the run, which still reports what it has.
  let broken;
  const walSegmentBytes = {};
  for (const name of systems) {
    const started = performance.now();
    log(`${name}: starting a 3-member cluster${values.sync ? ' (synchronous)' : ''}`);
    const out = { status: 'failed', error: null, settings: null, results: [] };
    running.set(name, { out });
    try {
      const system = await starters[name]();
      running.get(name).system = system;
      out.settings = system.settings;
      out.startMs = Math.round(performance.now() - started);
      const primary = await system.primary();
      walSegmentBytes[name] = await walSegmentBytesAt(primary.address, system.credentials);
      await createTable(primary.address, system.credentials);
      await createProbeTable(primary.address, system.credentials);
      running.get(name).writer = new LibpqWriter(venv.python, system.credentials);
    } catch (error) {
      out.error = `did not start: ${error.message}`;
      log(`${name} did not start: ${error.message}; no trial runs`);
      broken = name;
      break;
    }
  }

  // Same settings or not, the output says which: a run whose sizes are not what it says fails.
  const walSegments = describeWalSegments(values['wal-segments'], walSegmentBytes);
  log(walSegments.note);
  if (walSegments.problem && !broken) {
    log(walSegments.problem);
    broken = 'settings';
  }

  // 2. The trials, alternating: P K, K P, … (ABBA), each pair with the same kill offset.
  for (let trial = 1; trial <= trials && !stopping && !broken; trial++) {
    const order = trial % 2 ? systems : [...systems].reverse();
    const weight = weightOf(trial);
    for (const name of systems) controlGroup?.place(running.get(name).system.controlPids(), weight);
    for (const name of order) {
      if (stopping || broken) break;
      const { system, writer, out } = running.get(name);
      try {
        const result = await runTrial(system, writer, trial, { log, offsetMs: offsets[trial - 1] });
        result.controlWeight = weight;
        out.results.push(result);
      } catch (error) {
        // The cluster did not heal: later trials would measure a broken cluster.
        out.results.push({ system: name, trial, ok: false, error: error.message });
        log(`  ${name} trial ${trial}: ${error.message}; stopping the benchmark`);
        broken = name;
      }
    }
  }
  if (stopping) process.exit(130);

  // 3. Report: every figure from successful trials; a failed trial counts against its system.
  const report = {};
  for (const [name, { out, writer }] of running) {
    Object.assign(out, summarizeTrials(out.results));
    if (controlWeight === 'alternate') {
      out.byControlWeight = Object.fromEntries(
        ['low', 'normal'].map((w) => [w, summarizeTrials(out.results.filter((r) => r.controlWeight === w))]),
      );
    }
    out.writeFailures = writer?.failures ?? null;
    out.status = systemStatus(out, trials);
    out.error ??= out.results.find((r) => !r.ok)?.error ?? (out.okTrials < trials ? 'not every trial ran' : null);
    report[name] = out;
  }
  console.log('');
  console.log(
    `Failover: power loss of the primary's member, ${trials} trials each, alternating, ` +
      `${values.sync ? 'synchronous' : 'asynchronous'} replication; one libpq client for both; ${walSegments.note}`,
  );
  console.log(
    'system    status  trials  writable median (min–max)   client RTO median (min–max)  client search  lock taken  acked   lost',
  );
  for (const [name, r] of Object.entries(report)) {
    console.log(
      `${name.padEnd(9)} ${r.status.padEnd(7)} ${`${r.okTrials}/${trials}`.padEnd(7)} ` +
        `${`${secs(r.writableMsMedian)} s (${secs(r.writableMsMin)}–${secs(r.writableMsMax)})`.padEnd(27)} ` +
        `${`${secs(r.rtoMsMedian)} s (${secs(r.rtoMsMin)}–${secs(r.rtoMsMax)})`.padEnd(28)} ` +
        `${`${secs(r.clientSearchMsMedian)} s`.padStart(13)}  ${`${secs(r.takeoverMsMedian)} s`.padStart(10)}  ` +
        `${String(r.commitsAcked ?? '-').padStart(6)}  ${r.commitsLost ?? '-'} (${r.trialsWithLoss ?? '-'} trials)`,
    );
    if (r.error) console.log(`          error: ${r.error.split('\n')[0]}`);
  }
  // Paired by trial: the same kill offset, run back to back on the same machine.
  const { paired, ratios, why } = compareSystems(report, trials);
  if (paired) {
    console.log(
      '\nkanri − patroni, paired by trial (median of both-successful pairs; kanri lower/higher, a failed trial counting against its system; two-sided sign test):',
    );
    for (const [key, d] of Object.entries(paired)) {
      const failures =
        d.firstFailed || d.secondFailed ? `, failed: kanri ${d.firstFailed}, patroni ${d.secondFailed}` : '';
      console.log(
        `  ${key.padEnd(15)} ${`${d.medianMs ?? '-'} ms`.padStart(10)}   ${d.firstLower}/${d.firstHigher} (${d.ties} ties${failures})   p = ${d.signTestP ?? '-'}`,
      );
    }
  }
  if (ratios) {
    // Printed whatever the run's status: a failed run still says how its successful trials compare.
    console.log(
      `ratios of medians kanri / patroni (successful trials only): writable ${ratios.writableKanriOverPatroni ?? '-'}×, client RTO ${ratios.rtoKanriOverPatroni ?? '-'}× (goal ≤ 1)${why ? `; ${why}` : ''}`,
    );
  }
  const json = {
    benchmark: 'failover',
    status: systems.every((name) => report[name]?.status === 'ok') && !walSegments.problem ? 'ok' : 'failed',
    walSegments,
    mode: values.sync ? 'sync' : 'async',
    trials,
    seed,
    order: 'alternating (odd trials in --systems order, even trials reversed)',
    killOffsetsMs: offsets,
    client: 'libpq (psycopg on the machine libpq), every member, target_session_attrs=read-write',
    controlWeight,
    ratios,
    ratiosNote: why,
    pairedKanriMinusPatroni: paired,
    // What the members reported running (each Patroni system's settings say it too).
    patroniVersion: running.get('patroni')?.system?.settings.patroniVersion ?? null,
    // Every Patroni column's, Debian's 3.0.2 (`patroni3`) included.
    patroniVersions: Object.fromEntries(
      PATRONI_SYSTEMS.filter((name) => running.get(name)?.system).map((name) => [
        name,
        running.get(name).system.settings.patroniVersion,
      ]),
    ),
    environment: environment.finish({ python: venv?.python }),
  };
  for (const [name, r] of Object.entries(report)) {
    const { results, ...summary } = r;
    json[name] = { ...summary, trialResults: results };
  }
  console.log(JSON.stringify(json));
  if (json.status !== 'ok') process.exitCode = 1;
} finally {
  if (!stopping) await cleanUp();
}
