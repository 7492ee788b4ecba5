/**
 * A major upgrade of this instance's data, run at boot on the one Pod the operator creates for it
 * (ENV.majorUpgradeFrom): `pg_upgrade --link` from the old major's programs (found through
 * ENV.pgBinDirs) into `<pgdata>.upgrade`, then a switch of directories.
 *
 * Guarantees: the point of no return is the marker's `committed` stage, written only after
 * pg_upgrade succeeded and this image proved it has every program an instance runs; the new
 * server first starts after it. Any failure before it puts the old data back (pg_upgrade's rollback
 * for `--link`: `global/pg_control.old` renamed back) with its system identifier and timeline, and
 * the instance stays down, saying why, until the operator replaces it. A crash at any point
 * resumes from the marker (plan/major-upgrade-plan.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ENV, ROLE, SUPERUSER } from '../../contract/index.js';
import { runCommand } from '../commands.js';
import type { AgentContext } from '../context.js';
import { fsyncDir, readIfExists } from '../files.js';
import {
  binDirFor,
  INSTANCE_PROGRAMS,
  majorOfVersionLine,
  planUpgradeBoot,
  type UpgradeMarker,
} from '../plan/major-upgrade-plan.js';
import { initdb, walSegmentMiB } from '../postgres/bootstrap.js';
import { readControlData } from '../postgres/rewind.js';
import { readUpgradeMarker, writeUpgradeMarker } from '../postgres/upgrade-marker.js';

/** pg_upgrade runs both servers on sockets only; these ports just name the socket files. */
const OLD_PORT = '50432';
const NEW_PORT = '50433';

const newDir = (pgdata: string) => `${pgdata}.upgrade`;
const oldDir = (pgdata: string) => `${pgdata}.old`;

/** The major of the `postgres` in `pgBin`. */
export async function binaryMajor(pgBin: string): Promise<number> {
  const { stdout } = await promisify(execFile)(join(pgBin, 'postgres'), ['--version']);
  const major = majorOfVersionLine(stdout);
  if (major === undefined) throw new Error(`${pgBin}/postgres --version printed ${JSON.stringify(stdout.trim())}`);
  return major;
}

async function dataMajor(pgdata: string): Promise<number | undefined> {
  const text = await readIfExists(join(pgdata, 'PG_VERSION'));
  return text ? Number.parseInt(text, 10) : undefined;
}

const controlFile = (pgdata: string) => join(pgdata, 'global', 'pg_control');
const controlMoved = (pgdata: string) => existsSync(`${controlFile(pgdata)}.old`) && !existsSync(controlFile(pgdata));

/**
 * Settles PGDATA's major before anything reads it. Resolves `upgraded` when this start upgraded
 * it or finished an upgrade (the data has a new system identifier: the volume check does not
 * apply), `boot` to go on as usual, or `refused` when postgres must not run on it (reported; the
 * agent then waits for `signal`).
 */
export async function settleMajorVersion(
  ctx: AgentContext,
  signal: AbortSignal,
): Promise<'boot' | 'upgraded' | 'refused'> {
  const { config, log } = ctx;
  const marker = await readUpgradeMarker(config.dataDir);
  const step = planUpgradeBoot({
    dataMajor: await dataMajor(config.pgdata),
    binaryMajor: await binaryMajor(ctx.pgBin),
    allowedFrom: config.majorUpgradeFrom,
    marker,
    controlMoved: controlMoved(config.pgdata),
  });
  if (step.kind !== 'none') log.info({ step, marker }, 'major version of PGDATA');
  switch (step.kind) {
    case 'none':
      if (marker?.stage === 'succeeded') {
        ctx.backups.upgradedData(marker.stanzaUpgraded === true);
        ctx.state.reportUpgrade({ upgrade: succeeded(marker) });
      }
      return 'boot';
    case 'finish':
      await finishCommit(ctx, marker as UpgradeMarker);
      return 'upgraded';
    case 'rollBack':
      await rollBack(ctx, marker);
      return 'boot';
    case 'upgrade':
      ctx.state.boot(ROLE.primary);
      return (await upgrade(ctx, step.from, step.to, signal)) ? 'upgraded' : 'refused';
    case 'refuse':
      log.error({ reason: step.reason }, 'refusing to start postgres on this data directory');
      ctx.events.record('Warning', 'MajorVersionMismatch', `${config.podName}: ${step.reason}`);
      ctx.state.boot(ROLE.replica);
      ctx.state.setPhase(step.reason, { report: true });
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return 'refused';
  }
}

function succeeded(marker: UpgradeMarker) {
  return {
    from: marker.from,
    to: marker.to,
    result: 'succeeded' as const,
    message: `upgraded from PostgreSQL ${marker.from} to ${marker.to}`,
    ...(marker.pgUpgradeMs !== undefined ? { pgUpgradeMs: marker.pgUpgradeMs } : {}),
  };
}

/** pg_upgrade's rollback for `--link` before the new server started, and the new cluster dropped. */
async function rollBack(ctx: AgentContext, marker: UpgradeMarker | undefined): Promise<void> {
  const { pgdata } = ctx.config;
  if (controlMoved(pgdata)) {
    await rename(`${controlFile(pgdata)}.old`, controlFile(pgdata));
    await fsyncDir(dirname(controlFile(pgdata)));
  }
  await rm(newDir(pgdata), { recursive: true, force: true });
  if (marker) await writeUpgradeMarker(ctx.config.dataDir, { ...marker, stage: 'rolledBack' });
  ctx.log.info({ from: marker?.from, to: marker?.to }, 'major upgrade rolled back: the old data is whole again');
}

/** Moves the committed new cluster into place; idempotent, so a crash part-way simply runs it again. */
async function finishCommit(ctx: AgentContext, marker: UpgradeMarker): Promise<void> {
  const { pgdata, dataDir } = ctx.config;
  if (existsSync(newDir(pgdata))) {
    if (existsSync(pgdata)) {
      await rm(oldDir(pgdata), { recursive: true, force: true });
      await rename(pgdata, oldDir(pgdata));
    }
    await rename(newDir(pgdata), pgdata);
    await fsyncDir(dirname(pgdata));
  }
  // Hard links into the new cluster's files: removing the old names frees nothing it uses.
  await rm(oldDir(pgdata), { recursive: true, force: true });
  await rm(join(dataDir, 'upgrade-work'), { recursive: true, force: true });
  const done: UpgradeMarker = { ...marker, stage: 'succeeded', stanzaUpgraded: false };
  await writeUpgradeMarker(dataDir, done);
  ctx.backups.upgradedData(false);
  ctx.state.reportUpgrade({ upgrade: succeeded(done) });
}

/** Resolves true once the new cluster is in place, false when the upgrade failed (rolled back, reported). */
async function upgrade(ctx: AgentContext, from: number, to: number, signal: AbortSignal): Promise<boolean> {
  const { config, log, redactor, state } = ctx;
  const { pgdata, dataDir } = config;
  const report = (message: string, result: 'running' | 'failed' = 'running') => {
    state.reportUpgrade({ upgrade: { from, to, result, message } });
    state.setPhase(`major upgrade ${from} → ${to}: ${message}`, { report: true });
  };
  const marker: UpgradeMarker = { from, to, stage: 'linking' };
  try {
    const oldBin = binDirFor(from, config.pgBinDirs);
    if (!existsSync(join(oldBin, 'postgres')))
      throw new Error(
        `this image has no PostgreSQL ${from} programs at ${oldBin}: a major upgrade needs both majors (${ENV.pgBinDirs} names where they are)`,
      );
    if (existsSync(join(pgdata, 'standby.signal')))
      throw new Error('this data directory is a standby: the upgrade runs on the last primary');
    await writeUpgradeMarker(dataDir, marker);
    if (controlMoved(pgdata)) await rollBack(ctx, marker); // an earlier attempt, interrupted
    await rm(newDir(pgdata), { recursive: true, force: true });
    const old = await readControlData(oldBin, pgdata, redactor);
    if (old.state !== 'shut down') {
      // pg_upgrade needs a clean shutdown; single-user mode recovers and checkpoints, then exits at EOF.
      report('recovering the old cluster to a clean shutdown');
      await runCommand(join(oldBin, 'postgres'), ['--single', '-D', pgdata, 'postgres'], { log, redactor, signal });
    }
    report('creating the new cluster (initdb)');
    await initdb(
      { pgBin: ctx.pgBin, pgdata: newDir(pgdata), runDir: config.runDir, log, redactor, signal },
      config.superuserPassword,
      walSegmentMiB(old.walSegmentBytes),
    );
    const work = join(dataDir, 'upgrade-work');
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true, mode: 0o700 });
    report('running pg_upgrade --link');
    const started = performance.now();
    await runCommand(
      join(ctx.pgBin, 'pg_upgrade'),
      [
        '--link',
        '-b',
        oldBin,
        '-B',
        ctx.pgBin,
        '-d',
        pgdata,
        '-D',
        newDir(pgdata),
        '-U',
        SUPERUSER,
        '-s',
        config.socketDir,
        '-p',
        OLD_PORT,
        '-P',
        NEW_PORT,
      ],
      { cwd: work, log, redactor, signal },
    );
    const pgUpgradeMs = Math.round(performance.now() - started);
    // The last moment to turn back: once the new server starts, the old one may never run again.
    const missing = INSTANCE_PROGRAMS.filter((program) => !existsSync(join(ctx.pgBin, program)));
    if (missing.length > 0)
      throw new Error(
        `this image lacks ${missing.join(', ')} of PostgreSQL ${to} (in ${ctx.pgBin}): not starting the new cluster`,
      );
    const committed: UpgradeMarker = { ...marker, stage: 'committed', pgUpgradeMs };
    await writeUpgradeMarker(dataDir, committed);
    log.info({ from, to, pgUpgradeMs }, 'pg_upgrade done: past the point of no return');
    await finishCommit(ctx, committed);
    ctx.events.record(
      'Normal',
      'MajorUpgraded',
      `${config.podName}: pg_upgrade ${from} → ${to} took ${(pgUpgradeMs / 1000).toFixed(1)} s`,
    );
    return true;
  } catch (error) {
    const reason = signal.aborted ? 'stopped before it finished' : (error as Error).message;
    await rollBack(ctx, marker).catch((rollbackError: unknown) =>
      log.error({ err: rollbackError }, 'cannot roll the upgrade back'),
    );
    log.error({ from, to, reason }, 'major upgrade failed; the old data is back as it was');
    ctx.events.record(
      'Warning',
      'MajorUpgradeFailed',
      `${config.podName}: upgrade ${from} → ${to} failed, old data restored: ${reason}`,
    );
    report(`failed, the old data is back as it was: ${reason}`, 'failed');
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return false;
  }
}
