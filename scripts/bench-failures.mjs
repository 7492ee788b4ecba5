#!/usr/bin/env node
// The failure matrix, Kanri against Patroni: bench:failover's two 3-member clusters (Patroni 4.1.x
// with failsafe_mode on, and `--systems patroni3` Debian's 3.0.2 as an extra column; the same HA
// timings as far as Patroni takes them, same PostgreSQL settings, the same libpq client with target_session_attrs=read-write,
// kill offsets spread over the renew cycle), with one row per failure kind of the primary's member
// (bench/failures/kinds.mjs): postgres killed, agent/Patroni killed, power loss, cut off from the
// store, the store unreachable for 60 s, agent/Patroni stalled. Per row and system: the time to a
// new primary (at the database and at the client) or, where no failover is expected, the longest
// write gap; acknowledged commits lost; split-brain moments. The last line of stdout is one JSON
// object. Run with `npm run bench:failures [-- --rows 0,1,3,6 --trials 3 --systems kanri,patroni --sync]`;
// see bench/README.md.
import { parseSideBySide, renewPeriodMs } from '../bench/failover/cli.mjs';
import { startKanriSystem } from '../bench/failover/kanri.mjs';
import { LibpqWriter } from '../bench/failover/libpq-writer.mjs';
import { startPatroniSystem } from '../bench/failover/patroni.mjs';
import { PATRONI_SYSTEMS } from '../bench/failover/patroni-release.mjs';
import { killAllGroups } from '../bench/failover/processes.mjs';
import { createBrainTable, SplitBrainWatcher } from '../bench/failover/split-brain.mjs';
import { killOffsets } from '../bench/failover/trial.mjs';
import { describeWalSegments, patroniWalSegmentMiB, walSegmentBytesAt } from '../bench/failover/wal-segments.mjs';
import { createProbeTable } from '../bench/failover/writable-probe.mjs';
import { createTable } from '../bench/failover/writer.mjs';
import { runFailureTrial } from '../bench/failures/failure-trial.mjs';
import { kanriFaults } from '../bench/failures/kanri-faults.mjs';
import { FAILURE_KINDS } from '../bench/failures/kinds.mjs';
import { patroniFaults } from '../bench/failures/patroni-faults.mjs';
import { mountSmallDisk } from '../bench/failures/small-disk.mjs';
import { expectsFailover, formatTable, runStatus, summarizeRow } from '../bench/failures/summary.mjs';
import { benchEnvironment, ensureVenv, exitOnSignals, rng } from './bench-lib.mjs';

const allRows = FAILURE_KINDS.map((k) => k.row);
/** Rows that cannot be measured here, and why. */
const NOT_MEASURED = Object.fromEntries(
  FAILURE_KINDS.filter((k) => k.needsDisks && process.getuid?.() !== 0).map((k) => [
    k.row,
    { key: k.key, title: k.title, notMeasured: "needs root: each member's data on a loop-mounted filesystem" },
  ]),
);

const { values, trials, seed, systems } = parseSideBySide({
  defaultTrials: '3',
  extra: {
    rows: { type: 'string', default: process.env.BENCH_ROWS ?? allRows.join(',') },
  },
  usage: `node scripts/bench-failures.mjs [--rows ${allRows.join(',')}] [--trials 3] [--sync] [--systems patroni,kanri[,patroni3]] [--seed 1] [--wal-segments equal|default] [--no-patroni-failsafe]`,
  valid: (v) => v.rows.split(',').every((r) => allRows.includes(Number(r))),
});
const rows = values.rows.split(',').map(Number);
const random = rng(seed);
// With row 7 every member's data lives on a 2 GiB filesystem of its own, in every row of the run.
const memberDisk = rows.some((r) => FAILURE_KINDS.find((k) => k.row === r)?.needsDisks && !NOT_MEASURED[r])
  ? (dir, owner) => mountSmallDisk(dir, { sizeMiB: 2048, owner })
  : undefined;
const environment = benchEnvironment();
const log = (line) => console.error(`[bench:failures] ${line}`);

// Every system runs with fault proxies in front of its store, in every row, so that the rows
// differ only by the fault.
const startPatroni = async (name) => {
  const system = await startPatroniSystem({
    system: name,
    sync: values.sync,
    log,
    dcsProxy: true,
    memberDisk,
    failsafeMode: values['patroni-failsafe'],
    walSegmentMiB: patroniWalSegmentMiB(values['wal-segments']),
  });
  return Object.assign(system, { faults: patroniFaults(system) });
};
const starters = {
  ...Object.fromEntries(PATRONI_SYSTEMS.map((name) => [name, () => startPatroni(name)])),
  kanri: async () => {
    const system = await startKanriSystem({
      sync: values.sync,
      log,
      apiProxy: true,
      operatorProxy: true,
      memberDisk,
    });
    return Object.assign(system, { faults: kanriFaults(system) });
  },
};

/** name → { system, writer, watcher, rebuilt } */
const running = new Map();
/** name → the WAL segment size its primary reports (wal-segments.mjs). */
const walSegmentBytes = {};
let venv;

async function stopOne(name) {
  const entry = running.get(name);
  if (!entry) return;
  await entry.watcher?.stop().catch(() => {});
  await entry.writer?.stop().catch(() => {});
  await entry.system?.stop().catch((error) => log(`${name}: stopping: ${error.message}`));
}

/** Starts `name`'s cluster with its tables, client and split-brain watcher. */
async function startOne(name) {
  log(`${name}: starting a 3-member cluster${values.sync ? ' (synchronous)' : ''}`);
  const entry = running.get(name) ?? { rebuilt: 0 };
  running.set(name, entry);
  entry.system = await starters[name]();
  const { system } = entry;
  const primary = await system.primary();
  walSegmentBytes[name] = await walSegmentBytesAt(primary.address, system.credentials);
  await createTable(primary.address, system.credentials);
  await createProbeTable(primary.address, system.credentials);
  await createBrainTable(primary.address, system.credentials);
  entry.writer = new LibpqWriter(venv.python, system.credentials);
  entry.watcher = new SplitBrainWatcher(() => system.instances(), system.credentials);
  entry.watcher.start();
}

const stopAll = async () => {
  for (const name of running.keys()) await stopOne(name);
  running.clear();
  killAllGroups();
};
let cleaning;
const cleanUp = () => (cleaning ??= stopAll());
let stopping = false;
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

try {
  venv = await ensureVenv('failover-client', 'bench/failover/requirements.txt', { log });
  for (const name of systems) await startOne(name);
  // Same settings or not, the output says which; a run whose sizes are not what it says stops here.
  const walSegments = describeWalSegments(values['wal-segments'], walSegmentBytes);
  log(walSegments.note);
  if (walSegments.problem) throw new Error(walSegments.problem);
  const report = [];
  for (const rowNumber of rows) {
    if (NOT_MEASURED[rowNumber]) {
      report.push({ row: rowNumber, ...NOT_MEASURED[rowNumber] });
      continue;
    }
    const kind = FAILURE_KINDS.find((k) => k.row === rowNumber);
    const offsets = killOffsets(trials, renewPeriodMs(), random);
    const results = Object.fromEntries(systems.map((s) => [s, []]));
    log(`row ${kind.row}: ${kind.title}`);
    for (let trial = 1; trial <= trials && !stopping; trial++) {
      // Alternating, each pair with the same offset: both systems meet the same machine and phase.
      for (const name of trial % 2 ? systems : [...systems].reverse()) {
        if (stopping) break;
        const { system, writer, watcher } = running.get(name);
        const tag = kind.row * 100 + trial;
        let result;
        try {
          result = await runFailureTrial(system, writer, watcher, kind, tag, { log, offsetMs: offsets[trial - 1] });
        } catch (error) {
          // Before the injection: the cluster was not healthy or took no writes.
          result = {
            system: name,
            row: kind.row,
            trial: tag,
            ok: false,
            error: error.message,
            healError: error.message,
          };
        }
        results[name].push(result);
        const broken = result.healError;
        if (broken) {
          // The cluster did not heal: start it anew, so that the next trials measure a whole one.
          log(`  ${name} row ${kind.row} trial ${trial}: ${broken}; starting ${name} anew`);
          // What the members last said, before their directories go (Patroni keeps its logs there).
          for (const m of system.members ?? []) log(`  --- ${m.name}\n${await system.logTail(m.name, 15)}`);
          await stopOne(name);
          running.get(name).rebuilt++;
          await startOne(name);
        }
      }
    }
    const entry = { row: kind.row, key: kind.key, title: kind.title, failover: kind.failover };
    for (const name of systems) {
      const failoverExpected = expectsFailover(kind, running.get(name).system.settings);
      entry[name] = summarizeRow(results[name], { failoverExpected });
    }
    report.push(entry);
  }
  if (stopping) process.exit(130);

  console.log('');
  console.log(
    `Failure matrix: ${trials} trials per row and system, alternating, ` +
      `${values.sync ? 'synchronous' : 'asynchronous'} replication; one libpq client for both; ${walSegments.note}. ` +
      'Seconds from the injection; "new primary": the first write another member acknowledged; ' +
      '"longest gap": the longest time without an acknowledged write (rows where no failover is expected).',
  );
  console.log(formatTable(report, systems));
  // A failover row's trial without a failover, a trial that failed, or a blind watcher fails the run.
  const { status, reasons } = runStatus(report, systems, trials);
  console.log(`status: ${status}${reasons.length ? ` (${reasons.join('; ')})` : ''}`);
  const json = {
    benchmark: 'failures',
    status,
    statusReasons: reasons,
    walSegments,
    mode: values.sync ? 'sync' : 'async',
    trials,
    seed,
    memberDisks: memberDisk ? 'each member on its own 2 GiB ext4 loop filesystem' : null,
    rows: report,
    systems,
    rebuilt: Object.fromEntries([...running].map(([name, e]) => [name, e.rebuilt])),
    client: 'libpq (psycopg on the machine libpq), every member, target_session_attrs=read-write',
    // What the members reported running, and how each system ran (failsafe, timings, watchdog).
    patroniVersion: running.get('patroni')?.system?.settings.patroniVersion ?? null,
    // Every Patroni column's, Debian's 3.0.2 (`patroni3`) included.
    patroniVersions: Object.fromEntries(
      PATRONI_SYSTEMS.filter((name) => running.get(name)?.system).map((name) => [
        name,
        running.get(name).system.settings.patroniVersion,
      ]),
    ),
    patroniFailsafeMode: systems.some((s) => PATRONI_SYSTEMS.includes(s)) ? values['patroni-failsafe'] : null,
    settings: Object.fromEntries([...running].map(([name, e]) => [name, e.system?.settings ?? null])),
    environment: environment.finish({ python: venv.python }),
  };
  console.log(JSON.stringify(json));
  if (status !== 'ok') process.exitCode = 1;
} finally {
  if (!stopping) await cleanUp();
}
