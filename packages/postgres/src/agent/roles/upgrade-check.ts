/**
 * The pre-flight of a major upgrade, run by the primary while it serves: once the cluster asks for
 * a higher `postgresVersion` and the allow-major-upgrade annotation names it, `pg_upgrade --check`
 * of the new major's programs runs against the running server (into a scratch cluster that is
 * removed afterwards). The operator stops nothing until this check passed, so what pg_upgrade
 * would refuse (a missing library, an unsupported type) is found before any downtime.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ANNOTATION, ENV, PORT, SUPERUSER } from '../../contract/index.js';
import { runCommand } from '../commands.js';
import type { AgentContext } from '../context.js';
import { binDirFor } from '../plan/major-upgrade-plan.js';
import { initdb, walSegmentMiB } from '../postgres/bootstrap.js';
import { binaryMajor } from './major-upgrade.js';

/** A failed check runs again this often, so that fixing what it found is noticed. */
const RECHECK_AFTER_FAILURE_MS = 60_000;

const majors = new Map<string, number>();

/** Runs the check when one is due; never throws for what the check finds (that is reported). */
export async function maybeCheckUpgrade(ctx: AgentContext, signal: AbortSignal): Promise<void> {
  const to = ctx.view.spec?.postgresVersion;
  if (to === undefined || ctx.view.cluster?.metadata?.annotations?.[ANNOTATION.allowMajorUpgrade] !== String(to))
    return;
  const running = majors.get(ctx.pgBin) ?? (await binaryMajor(ctx.pgBin));
  majors.set(ctx.pgBin, running);
  if (to <= running) return;
  const last = ctx.state.snapshot().decisions.upgradeCheck;
  if (last?.to === to && (last.ok || Date.now() - Date.parse(last.at) < RECHECK_AFTER_FAILURE_MS)) return;
  const started = performance.now();
  const { ok, message } = await check(ctx, running, to, signal);
  if (signal.aborted) return;
  ctx.log.info(
    { from: running, to, ok, message, ms: Math.round(performance.now() - started) },
    'major upgrade pre-flight check',
  );
  ctx.state.reportUpgrade({ upgradeCheck: { to, ok, message, at: new Date().toISOString() } });
}

async function check(
  ctx: AgentContext,
  from: number,
  to: number,
  signal: AbortSignal,
): Promise<{ ok: boolean; message: string }> {
  const { config, log, redactor } = ctx;
  const newBin = binDirFor(to, config.pgBinDirs);
  if (!existsSync(join(newBin, 'pg_upgrade')))
    return {
      ok: false,
      message: `this image has no PostgreSQL ${to} programs at ${newBin} (${ENV.pgBinDirs} names where they are): the upgrade's image must hold both majors`,
    };
  const scratch = join(config.dataDir, 'upgrade-check');
  const work = join(config.dataDir, 'upgrade-check-work');
  try {
    await rm(scratch, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
    const [segment] = await ctx.db.query<{ bytes: string }>(
      "SELECT setting AS bytes FROM pg_settings WHERE name = 'wal_segment_size'",
    );
    await initdb(
      { pgBin: newBin, pgdata: scratch, runDir: config.runDir, log, redactor, signal },
      config.superuserPassword,
      walSegmentMiB(Number(segment?.bytes)),
    );
    await mkdir(work, { recursive: true, mode: 0o700 });
    await runCommand(
      join(newBin, 'pg_upgrade'),
      [
        '--check',
        '--link',
        '-b',
        ctx.pgBin,
        '-B',
        newBin,
        '-d',
        config.pgdata,
        '-D',
        scratch,
        '-U',
        SUPERUSER,
        '-s',
        config.socketDir,
        '-p',
        String(PORT.postgres),
        '-P',
        '50433',
      ],
      { cwd: work, log, redactor, signal },
    );
    return { ok: true, message: `pg_upgrade --check ${from} → ${to} passed against the running server` };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  } finally {
    await rm(scratch, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}
