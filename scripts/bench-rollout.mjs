#!/usr/bin/env node
// Rolling updates under write load (issue 15): Kanri's 3-instance cluster (bench:failover's set-up,
// synchronous by default), the libpq client committing throughout, and per trial either a rolling
// image update between Debian's PostgreSQL 15 and PyPI's 15.19 (alternating) or a plain switchover,
// the reference the goal is stated against. Per kind: total time, the longest write gap at the
// client and at the database, changes of primary, commits acknowledged and lost. The last line of
// stdout is one JSON object. Run with `npm run bench:rollout [-- --trials 3 --async]`; see
// bench/README.md. Then, unless --major-trials 0, the database is filled to --major-gb and the
// cluster upgraded to the next major (16, then 17) under the same writes: its longest write gap is
// the upgrade's downtime, which the issue wants under 30 s for 1 GB. Then, unless --resize-trials 0, a
// second cluster on testenv's sized volumes (ext4 on loop devices, SIZED_STORAGE_CLASS) grows every
// data volume online under the same writes, 512 MiB per trial (issue 41: no write gap over 1 s), with
// one switchover beside it as the reference of that run.
import { parseArgs } from 'node:util';
import { startKanriSystem } from '../bench/failover/kanri.mjs';
import { IMAGE } from '../bench/failover/kanri-env.mjs';
import { LibpqWriter } from '../bench/failover/libpq-writer.mjs';
import { killAllGroups } from '../bench/failover/processes.mjs';
import { createProbeTable } from '../bench/failover/writable-probe.mjs';
import { createTable } from '../bench/failover/writer.mjs';
import { loadData } from '../bench/rollout/load-data.mjs';
import { runRolloutTrial } from '../bench/rollout/rollout-trial.mjs';
import { DEBIAN_POSTGRES_BIN, postgresVersionOf, SIZED_STORAGE_CLASS } from '../packages/testenv/dist/src/index.js';
import { benchEnvironment, ensureVenv, exitOnSignals, median, round1 } from './bench-lib.mjs';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '3' },
    async: { type: 'boolean', default: false },
    'major-trials': { type: 'string', default: '1' },
    'major-gb': { type: 'string', default: '1' },
    'resize-trials': { type: 'string', default: '2' },
  },
});
const majorTrials = Number(values['major-trials']);
const majorBytes = Number(values['major-gb']) * 2 ** 30;
const resizeTrials = Number(values['resize-trials']);
const trials = Number(values.trials);
if (
  !Number.isInteger(trials) ||
  trials < 0 ||
  !(majorTrials >= 0 && majorTrials <= 2) ||
  !(majorBytes >= 0) ||
  !(Number.isInteger(resizeTrials) && resizeTrials >= 0)
) {
  console.error(
    'usage: node scripts/bench-rollout.mjs [--trials 3] [--async] [--major-trials 0..2] [--major-gb 1] [--resize-trials 2]',
  );
  process.exit(2);
}
const sync = !values.async;
const environment = benchEnvironment();
const log = (line) => console.error(`[bench:rollout] ${line}`);
const tags = [postgresVersionOf(DEBIAN_POSTGRES_BIN), '15.19'];

let system;
let writer;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    await writer?.stop().catch(() => {});
    await system?.stop().catch((error) => log(`stopping: ${error.message}`));
    killAllGroups();
  })();
  return cleaning;
};
let stopping = false;
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

const results = [];
let error = null;
let databaseBytes;
try {
  const venv = await ensureVenv('failover-client', 'bench/failover/requirements.txt', { log });
  // A cluster with the writer's and the probes' tables, and the writer.
  const start = async (options = {}) => {
    system = await startKanriSystem({ sync, log, ...options });
    const primary = await system.primary();
    await createTable(primary.address, system.credentials);
    await createProbeTable(primary.address, system.credentials);
    writer = new LibpqWriter(venv.python, system.credentials);
  };
  if (trials > 0 || majorTrials > 0) {
    log(`starting a 3-instance cluster (${sync ? 'synchronous' : 'asynchronous'})`);
    await start();
  }
  // The cluster starts on the default image (Debian's 15, the first tag); each rollout goes to the other one.
  let image = `${IMAGE}:${tags[0]}`;
  for (let trial = 1; trial <= trials && !stopping; trial++) {
    const order = trial % 2 ? ['switchover', 'rollout'] : ['rollout', 'switchover'];
    for (const kind of order) {
      if (kind === 'rollout') image = `${IMAGE}:${tags[image.endsWith(tags[0]) ? 1 : 0]}`;
      results.push(
        await runRolloutTrial(system, writer, trial * 10 + (kind === 'rollout' ? 1 : 2), kind, { image, log }),
      );
    }
  }
  if (majorTrials > 0 && !stopping) {
    log(`filling the database to ${values['major-gb']} GB for the major upgrade`);
    databaseBytes = await loadData((await system.primary()).address, system.credentials, majorBytes, log);
    // The cluster runs 15 (its last rollout may have gone to 15.19): each upgrade goes one major up.
    for (let trial = 1; trial <= majorTrials && !stopping; trial++)
      results.push(
        await runRolloutTrial(system, writer, 100 + trial, 'major', { image: `${IMAGE}:${15 + trial}`, log }),
      );
  }
  if (resizeTrials > 0 && !stopping) {
    await writer?.stop();
    writer = undefined;
    await system?.stop();
    system = undefined;
    log(`starting a 3-instance cluster on ${SIZED_STORAGE_CLASS} volumes (1 GiB each) for the resizes`);
    await start({ storageClassName: SIZED_STORAGE_CLASS });
    for (let trial = 1; trial <= resizeTrials && !stopping; trial++) {
      const order = trial % 2 ? ['resize', 'switchover'] : ['switchover', 'resize'];
      for (const kind of order)
        results.push({
          ...(await runRolloutTrial(system, writer, 200 + trial * 10 + (kind === 'resize' ? 1 : 2), kind, { log })),
          sized: true,
        });
    }
  }
} catch (caught) {
  error = caught.message;
  log(`failed: ${error}`);
} finally {
  await cleanUp();
}
if (stopping) process.exit(130);

const summary = (kind, sized = false) => {
  const of = results.filter((r) => r.kind === kind && Boolean(r.sized) === sized);
  const stat = (key) => ({
    median: round1(median(of.map((r) => r[key]))),
    max: round1(Math.max(...of.map((r) => r[key]))),
  });
  return {
    trials: of.length,
    totalMs: stat('totalMs'),
    clientGapMs: stat('clientGapMs'),
    dbGapMs: stat('dbGapMs'),
    primaryChanges: of.map((r) => r.primaryChanges),
    commitsAcked: of.reduce((n, r) => n + r.acked, 0),
    commitsLost: of.reduce((n, r) => n + r.lost, 0),
  };
};
const rollout = summary('rollout');
const switchover = summary('switchover');
const major = majorTrials > 0 ? { ...summary('major'), databaseBytes } : undefined;
const gapRatio =
  switchover.clientGapMs.median > 0
    ? Math.round((rollout.clientGapMs.median / switchover.clientGapMs.median) * 100) / 100
    : null;
console.log('');
console.log(
  `Rolling image updates against plain switchovers, ${trials} trials each, ${sync ? 'synchronous' : 'asynchronous'}`,
);
for (const [name, s] of trials > 0
  ? [
      ['rollout', rollout],
      ['switchover', switchover],
    ]
  : []) {
  console.log(
    `${name.padEnd(11)} total ${(s.totalMs.median / 1000).toFixed(1)} s; longest write gap client ${(s.clientGapMs.median / 1000).toFixed(2)} s (max ${(s.clientGapMs.max / 1000).toFixed(2)}), database ${(s.dbGapMs.median / 1000).toFixed(2)} s; changes of primary ${s.primaryChanges.join(', ')}; ${s.commitsAcked} acked, ${s.commitsLost} lost`,
  );
}
if (trials > 0) console.log(`rollout / switchover, longest client write gap (medians): ${gapRatio ?? '-'}`);
if (major)
  console.log(
    `major upgrade of ${((databaseBytes ?? 0) / 2 ** 30).toFixed(2)} GB: total ${(major.totalMs.median / 1000).toFixed(1)} s; longest write gap client ${(major.clientGapMs.median / 1000).toFixed(2)} s (goal < 30 s); changes of primary ${major.primaryChanges.join(', ')}; ${major.commitsAcked} acked, ${major.commitsLost} lost`,
  );
const resize = resizeTrials > 0 ? summary('resize', true) : undefined;
const sizedSwitchover = resizeTrials > 0 ? summary('switchover', true) : undefined;
if (resize && sizedSwitchover) {
  console.log(`Online resizes of every data volume (+512 MiB each, ext4 on loop devices), ${resizeTrials} trials`);
  for (const [name, s] of [
    ['resize', resize],
    ['switchover', sizedSwitchover],
  ])
    console.log(
      `${name.padEnd(11)} total ${(s.totalMs.median / 1000).toFixed(1)} s; longest write gap client ${(s.clientGapMs.median / 1000).toFixed(2)} s (max ${(s.clientGapMs.max / 1000).toFixed(2)}, goal < 1 s for resize), database ${(s.dbGapMs.median / 1000).toFixed(2)} s; changes of primary ${s.primaryChanges.join(', ')}; ${s.commitsAcked} acked, ${s.commitsLost} lost`,
    );
}
console.log(
  JSON.stringify({
    benchmark: 'rollout',
    status: error || results.length < trials * 2 + majorTrials + resizeTrials * 2 ? 'failed' : 'ok',
    error,
    mode: sync ? 'sync' : 'async',
    trials,
    tags,
    rollout,
    switchover,
    gapRatio,
    ...(major ? { major } : {}),
    ...(resize ? { resize, sizedSwitchover } : {}),
    results,
    environment: environment.finish(),
  }),
);
