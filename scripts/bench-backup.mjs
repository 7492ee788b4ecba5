#!/usr/bin/env node
// Backup benchmark: pgBackRest through Kanri against pgBackRest run by hand, side by side in one
// run, on one PostgreSQL 15 instance with ~1 GB of pgbench data (`pgbench -i -s 70`) archiving to
// testenv's S3 server (versitygw over TLS). Paired, alternating trials (A B, B A, …) of: a full
// backup through Kanri (annotation → PostgresBackup) and by hand (the agent's pgBackRest command
// line, as the postgres user, same configuration, same repo); a restore through Kanri (a clone
// cluster) and by hand (the same restore into an empty directory); pgbench TPS with and without a
// backup running. Then the archive lag of every WAL segment under a steady pgbench load. The last
// line of stdout is one JSON object with every figure, the goals and a pass or miss for each; it
// is also written to bench/results/. Run with
// `npm run bench:backup [-- --pairs 3 --scale 70 --tps-seconds 30 --lag-seconds 150]`; see bench/README.md.
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  archiveLagGoal,
  archiveLags,
  percentile,
  sampleArchiver,
  walSegmentBytes,
} from '../bench/backup/archive-lag.mjs';
import { killCommands, pgbackrest, pgbench } from '../bench/backup/commands.mjs';
import {
  agentContainer,
  agentPgBackRest,
  primaryClient,
  primaryTarget,
  startBackupSystem,
} from '../bench/backup/kanri.mjs';
import { handBackup, handRestore, kanriBackup, kanriRestore, tpsRun } from '../bench/backup/trials.mjs';
import { waitFor } from '../packages/testenv/dist/src/index.js';
import { benchEnvironment, exitOnSignals, median, ratio } from './bench-lib.mjs';

const { values } = parseArgs({
  options: {
    pairs: { type: 'string', default: '3' },
    scale: { type: 'string', default: '70' },
    'tps-seconds': { type: 'string', default: '30' },
    'lag-seconds': { type: 'string', default: '150' },
    help: { type: 'boolean', default: false },
  },
});
const pairs = Number(values.pairs);
const scale = Number(values.scale);
const tpsSeconds = Number(values['tps-seconds']);
const lagSeconds = Number(values['lag-seconds']);
if (values.help || ![pairs, scale, tpsSeconds, lagSeconds].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error('usage: node scripts/bench-backup.mjs [--pairs 3] [--scale 70] [--tps-seconds 30] [--lag-seconds 150]');
  process.exit(values.help ? 0 : 2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLUSTER = 'bench';
const environment = benchEnvironment();
const log = (line) => console.error(`[bench:backup] ${new Date().toISOString().slice(11, 19)} ${line}`);
const orderOf = (pair, a, b) => (pair % 2 ? [a, b] : [b, a]);

let env;
let stopping = false;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    await killCommands();
    await env?.stop().catch((error) => log(`stopping the environment: ${error.message}`));
  })();
  return cleaning;
};
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

/**
 * Closes the WAL segment being written and waits until no segment waits for the archiver. Not by
 * comparing names with pg_stat_archiver.last_archived_wal: after a backup that is the backup's
 * history file (`<start segment>.<offset>.backup`), archived last and named lower than the
 * segments archived before it.
 */
async function archiveCaughtUp(db, timeoutMs = 900_000) {
  await db.query('SELECT pg_switch_wal()');
  await waitFor(
    'every closed WAL segment archived',
    async () => {
      const { rows } = await db.query(
        "SELECT count(*)::int AS n FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready'",
      );
      return rows[0].n === 0 ? true : undefined;
    },
    timeoutMs,
    1_000,
  );
}

try {
  env = await startBackupSystem({ name: CLUSTER, log });
  const target = await primaryTarget(env, CLUSTER);
  const db = await primaryClient(env, CLUSTER);
  // The environment's stop ends postgres under this connection: not an error of the benchmark.
  db.on('error', (error) => log(`primary connection: ${error.message}`));
  const primary = agentContainer(env, CLUSTER, target.host);
  const agent = await agentPgBackRest(primary);
  const pgbackrestConf = await readFile(agent.baseArgs[0].slice('--config='.length), 'utf8');
  const pgbackrestVersion = (await pgbackrest({ ...agent, baseArgs: [] }, ['version'])).stdout.trim();
  const settings = Object.fromEntries(
    (
      await db.query(
        "SELECT name, setting FROM pg_settings WHERE name IN ('archive_timeout','archive_mode','archive_command','shared_buffers','max_wal_size','checkpoint_timeout','server_version')",
      )
    ).rows.map((r) => [r.name, r.setting]),
  );
  log(`pgBackRest as the agent runs it: ${agent.bin} ${agent.baseArgs.join(' ')}`);
  log(
    `primary ${primary.pod} at ${target.address}; ${pgbackrestVersion}; archive_timeout ${settings.archive_timeout} s`,
  );

  // 1. Data: ~1 GB, then the archive caught up, so that no trial pays for the load's WAL.
  log(`pgbench -i -s ${scale} (about ${Math.round(scale * 15)} MB)`);
  const load = await pgbench(target, ['-i', '-s', String(scale), '-q']);
  const databaseBytes = Number((await db.query("SELECT pg_database_size('postgres') AS b")).rows[0].b);
  log(
    `loaded in ${(load.ms / 1000).toFixed(1)} s, database ${(databaseBytes / 1e6).toFixed(0)} MB; waiting for the archive`,
  );
  await archiveCaughtUp(db);

  // 2. Full backups, paired and alternating.
  const backupPairs = [];
  for (let pair = 1; pair <= pairs && !stopping; pair++) {
    const result = { pair, order: orderOf(pair, 'kanri', 'hand') };
    for (const who of result.order) {
      log(`backup pair ${pair}: ${who}`);
      result[who] = who === 'kanri' ? await kanriBackup(env, CLUSTER, `bench-${pair}`) : await handBackup(agent);
      log(
        `  ${who}: ${result[who].label} ${(result[who].sizeBytes / 1e6).toFixed(0)} MB in ${(result[who].ms / 1000).toFixed(1)} s = ${result[who].MBps} MB/s`,
      );
    }
    result.ratio = ratio(result.kanri.MBps, result.hand.MBps);
    // By pgBackRest's own start and stop (whole seconds): the backup command alone, on both sides.
    result.commandRatio = ratio(result.hand.pgbackrestSeconds, result.kanri.pgbackrestSeconds);
    backupPairs.push(result);
  }
  const latestSize = backupPairs.at(-1)?.[backupPairs.at(-1).order[1]].sizeBytes;

  // 3. Restores of the latest backup, paired and alternating.
  const restorePairs = [];
  for (let pair = 1; pair <= pairs && !stopping; pair++) {
    const result = { pair, order: orderOf(pair, 'kanri', 'hand') };
    for (const who of result.order) {
      log(`restore pair ${pair}: ${who}`);
      result[who] =
        who === 'kanri'
          ? await kanriRestore(env, CLUSTER, `bench-clone-${pair}`, latestSize, log)
          : await handRestore(agent, latestSize);
      log(`  ${who}: ${JSON.stringify(result[who])}`);
    }
    result.ratio = ratio(result.kanri.MBps, result.hand.MBps);
    result.commandRatio = ratio(result.kanri.commandMBps, result.hand.MBps);
    restorePairs.push(result);
  }

  // 4. TPS with and without a backup running, paired and alternating.
  await db.query('CHECKPOINT');
  const tpsPairs = [];
  for (let pair = 1; pair <= pairs && !stopping; pair++) {
    const result = { pair, order: orderOf(pair, 'without', 'with') };
    for (const which of result.order) {
      log(`TPS pair ${pair}: ${which} a backup (${tpsSeconds} s)`);
      result[which] = await tpsRun(
        env,
        CLUSTER,
        target,
        tpsSeconds,
        which === 'with' ? `bench-tps-${pair}` : undefined,
      );
      log(
        `  ${which}: ${result[which].tps} TPS${which === 'with' ? `, backup covered ${result[which].backupCoveredFraction} of the run` : ''}`,
      );
    }
    result.fraction = ratio(result.with.tps, result.without.tps);
    tpsPairs.push(result);
  }

  // 5. Archive lag under a steady write load.
  const segmentBytes = await walSegmentBytes(db);
  log(
    `archive lag: pgbench -c 4 -j 2 -N for ${lagSeconds} s, sampling pg_stat_archiver every second (WAL segments of ${segmentBytes / 2 ** 20} MiB)`,
  );
  await archiveCaughtUp(db);
  const sampler = sampleArchiver(db, { segmentBytes });
  const failedBefore = Number((await db.query('SELECT failed_count AS f FROM pg_stat_archiver')).rows[0].f);
  const loadFrom = Date.now();
  const lagLoad = await pgbench(target, ['-c', '4', '-j', '2', '-T', String(lagSeconds), '-N', '-n']);
  const loadTo = Date.now();
  // The segment being written when the load stopped is only closed by archive_timeout: switch it.
  await archiveCaughtUp(db, 300_000).catch((error) => log(error.message));
  const { samples, errors: sampleErrors } = await sampler.stop();
  const { lags, unarchived } = archiveLags(samples, { fromMs: loadFrom, toMs: loadTo });
  const lagMs = [...lags, ...unarchived].map((l) => Math.round(l.lagMs));
  const failedDuring =
    Number((await db.query('SELECT failed_count AS f FROM pg_stat_archiver')).rows[0].f) - failedBefore;
  await db.end();
  const archiveTimeoutS = Number(settings.archive_timeout);
  const archiveLag = {
    loadSeconds: lagSeconds,
    loadTps: lagLoad.tps,
    walSegmentBytes: segmentBytes,
    segments: lagMs.length,
    unarchived: unarchived.length,
    samples: samples.length,
    sampleErrors,
    archiverFailuresDuring: failedDuring,
    p50Ms: percentile(lagMs, 50),
    p99Ms: percentile(lagMs, 99),
    maxMs: lagMs.length ? Math.max(...lagMs) : null,
    lagsMs: lagMs,
  };
  log(
    `archive lag over ${lagMs.length} segments: p50 ${archiveLag.p50Ms} ms, p99 ${archiveLag.p99Ms} ms, max ${archiveLag.maxMs} ms`,
  );

  // 6. Report.
  const med = (xs) => (xs.length ? Math.round(median(xs) * 1000) / 1000 : null);
  const summary = {
    backup: {
      kanriMBpsMedian: med(backupPairs.map((p) => p.kanri.MBps)),
      handMBpsMedian: med(backupPairs.map((p) => p.hand.MBps)),
      pairRatioMedian: med(backupPairs.map((p) => p.ratio)),
      pairCommandRatioMedian: med(backupPairs.map((p) => p.commandRatio)),
    },
    restore: {
      kanriMBpsMedian: med(restorePairs.map((p) => p.kanri.MBps)),
      kanriCommandMBpsMedian: med(restorePairs.map((p) => p.kanri.commandMBps)),
      handMBpsMedian: med(restorePairs.map((p) => p.hand.MBps)),
      pairRatioMedian: med(restorePairs.map((p) => p.ratio)),
      pairCommandRatioMedian: med(restorePairs.map((p) => p.commandRatio)),
    },
    tps: {
      withoutMedian: med(tpsPairs.map((p) => p.without.tps)),
      withMedian: med(tpsPairs.map((p) => p.with.tps)),
      pairFractionMedian: med(tpsPairs.map((p) => p.fraction)),
    },
  };
  const goal = (text, result, pass) => ({ goal: text, result, pass: result == null ? null : pass });
  const goals = {
    backupThroughput: goal(
      'Kanri/hand full-backup MB/s ≥ 0.95 (median of pair ratios)',
      summary.backup.pairRatioMedian,
      summary.backup.pairRatioMedian >= 0.95,
    ),
    backupCommandThroughput: goal(
      "the same by pgBackRest's own start and stop of each backup (whole seconds)",
      summary.backup.pairCommandRatioMedian,
      summary.backup.pairCommandRatioMedian >= 0.95,
    ),
    restoreThroughput: goal(
      'Kanri/hand restore MB/s ≥ 0.95 (median of pair ratios; Kanri timed from create, Pod start included)',
      summary.restore.pairRatioMedian,
      summary.restore.pairRatioMedian >= 0.95,
    ),
    restoreCommandThroughput: goal(
      'the same, Kanri timed by its restore command alone',
      summary.restore.pairCommandRatioMedian,
      summary.restore.pairCommandRatioMedian >= 0.95,
    ),
    tpsDuringBackup: goal(
      'TPS during a backup ≥ 0.70 of TPS without (median of pair fractions)',
      summary.tps.pairFractionMedian,
      summary.tps.pairFractionMedian >= 0.7,
    ),
    archiveLagP99: archiveLagGoal(archiveLag.p99Ms),
  };
  const json = {
    benchmark: 'backup',
    status: stopping ? 'failed' : 'ok',
    scale,
    pairs,
    order: 'alternating (odd pairs Kanri/without first, even pairs hand/with first)',
    databaseBytes,
    loadMs: load.ms,
    pgbackrestVersion,
    pgbackrestConf: pgbackrestConf.replace(/\/tmp\/kanri-testenv-[^/]+\/process-nodes\/[^/]+\/pods\/[^/]+/g, '<pod>'),
    postgres: settings,
    cluster: '1 instance on a process node; repo1 on versitygw (S3, TLS, path style) on 127.0.0.1',
    goals,
    ...summary,
    backupPairs,
    restorePairs,
    tpsPairs,
    tpsRun: `pgbench -c 4 -j 2 -T ${tpsSeconds} -N -n`,
    archiveLag: {
      ...archiveLag,
      archiveTimeoutS,
      method: 'archiveLags in bench/backup/archive-lag.mjs: 1 s samples, each lag an upper bound (≤ 1 s too long)',
    },
    environment: environment.finish(),
  };
  const stamp = json.environment.startedAt.slice(0, 16).replace(':', '');
  const file = join(root, 'bench', 'results', `backup-${stamp}.json`);
  await writeFile(file, `${JSON.stringify(json)}\n`);
  execFileSync('npx', ['biome', 'format', '--write', file], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  log(`wrote ${file}`);
  for (const [name, g] of Object.entries(goals))
    log(`goal ${name}: ${g.result} (${g.goal}) ${g.pass ? 'pass' : 'MISS'}`);
  console.log(JSON.stringify(json));
} catch (error) {
  log(`failed: ${error.stack ?? error.message}`);
  process.exitCode = 1;
} finally {
  if (!stopping) await cleanUp();
}
