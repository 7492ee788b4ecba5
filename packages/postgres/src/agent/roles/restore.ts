/**
 * Restoring this instance from a pgBackRest repo (a clone's first instance, or the instance an
 * in-place restore keeps): `pgbackrest restore --delta` into PGDATA, then postgres recovers from
 * the archive up to the target (or the archive's end) and promotes itself onto a new timeline.
 *
 * Guarantees: postgres is never promoted by the agent here, so recovery stops exactly where the
 * target says (promoting early would end it wherever replay happened to be). A restore that fails
 * (pgBackRest's checksum check, a target the archive cannot reach) is reported with its reason and
 * the instance stays down; each restore id runs once, and re-runs only after a restart of the Pod
 * while it had not succeeded (the marker beside PGDATA says how far it got).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleepUnlessAborted } from '@kanri/timing';
import { normalizeOptions, RESTORE_OPTIONS, refusedOption } from '../../api/command-options.js';
import {
  CONFIG_KEY,
  decodeRestoreSource,
  hasRecoveryTarget,
  names,
  PgBackRestConfError,
  type RestoreReport,
  type RestoreSource,
  recordedRepoPaths,
  repoIndex,
  restoreStoredAt,
  unsupportedRepo,
} from '../../contract/index.js';
import { cloneAccess } from '../backups/clone-access.js';
import { failureReason } from '../backups/pgbackrest.js';
import { volumeAccess } from '../backups/volume-access.js';
import type { AgentContext } from '../context.js';
import { writeFileIfChanged } from '../files.js';
import { retry } from '../retry.js';

/** What a restore leaves in postgresql.auto.conf that must not outlive it. */
export const RECOVERY_SETTINGS = [
  'restore_command',
  'recovery_target',
  'recovery_target_time',
  'recovery_target_xid',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_action',
  'recovery_target_inclusive',
  'recovery_target_timeline',
] as const;

/** Beside PGDATA (which `--delta` rewrites): which restore ran here, and how it ended. */
export function restoreMarkerPath(dataDir: string): string {
  return join(dataDir, 'kanri-restore.json');
}

export async function readRestoreMarker(dataDir: string): Promise<RestoreReport | undefined> {
  try {
    return JSON.parse(await readFile(restoreMarkerPath(dataDir), 'utf8')) as RestoreReport;
  } catch {
    return undefined;
  }
}

async function mark(ctx: AgentContext, report: RestoreReport): Promise<void> {
  ctx.backups.restored(report);
  await writeFileIfChanged(restoreMarkerPath(ctx.config.dataDir), `${JSON.stringify(report)}\n`);
  ctx.state.setPhase(
    report.result === 'failed'
      ? `restore ${report.id} failed: ${report.reason}`
      : report.result === 'running'
        ? `restoring (${report.id})`
        : undefined,
    { report: true },
  );
}

/** Waits for the operator's restore source in the ConfigMap. */
async function restoreSource(ctx: AgentContext, signal: AbortSignal): Promise<RestoreSource | undefined> {
  while (!signal.aborted) {
    const source = decodeRestoreSource(ctx.view.configData?.[CONFIG_KEY.restoreSource]);
    if (source) return source;
    ctx.state.setPhase('waiting for the restore source in the cluster configuration');
    await sleepUnlessAborted(1_000, signal);
  }
  return undefined;
}

/** Resolves true once postgres runs restored and promoted, false when the restore failed (reported). */
export async function restoreFromRepo(ctx: AgentContext, signal: AbortSignal): Promise<boolean> {
  const { config, log, postgres } = ctx;
  const source = await restoreSource(ctx, signal);
  if (!source) return false;
  const id = config.restoreId ?? source.id;
  const fail = async (reason: string) => {
    log.error({ restore: id, reason }, 'restore failed');
    ctx.events.record('Warning', 'RestoreFailed', `${config.podName}: restore ${id} failed: ${reason}`);
    await postgres.stop('fast');
    await mark(ctx, { id, result: 'failed', reason });
    return false;
  };
  const unsupported = unsupportedRepo(source.repo);
  if (unsupported) return fail(unsupported);
  // Admission refuses these; a spec admitted before that rule, or written past admission, fails
  // here instead of reaching pgBackRest.
  const options = restoreOptions(source.options);
  if (typeof options === 'string') return fail(options);
  await mark(ctx, { id, result: 'running' });
  const file = join(config.runDir, 'pgbackrest-restore.conf');
  const repos = { repos: [source.repo], ...(source.global ? { global: source.global } : {}) };
  // A volume repo is read through its cluster's repo host, once it serves and this Pod has its
  // certificate; a clone's, read-only through the source's repo host's clone port once granted.
  const gateway = source.gateway;
  while (!signal.aborted) {
    const clone = gateway ? await cloneAccess(config, gateway, source.repo.name, signal) : undefined;
    const volume = gateway ? (clone?.access ? { gateway: clone.access } : {}) : volumeAccess(ctx);
    let unreachable: string[];
    try {
      ({ unreachable } = await ctx.pgbackrest.write(repos, {
        file,
        stanza: source.stanza,
        storedAt: restoreStoredAt(source, recordedRepoPaths(ctx.view.cluster)),
        volume,
      }));
    } catch (error) {
      if (error instanceof PgBackRestConfError) return fail(error.message);
      throw error;
    }
    if (unreachable.length === 0 && !clone?.waiting) break;
    ctx.state.setPhase(
      `restore ${id}: waiting: ${clone?.waiting ?? `for ${unreachable.join(', ')}: its path (recorded by the operator), or a certificate and ${names.repoHost(config.cluster)} serving it`}`,
    );
    await sleepUnlessAborted(1_000, signal);
  }
  if (signal.aborted) return false;
  await mkdir(config.pgdata, { recursive: true, mode: 0o700 });
  // --delta keeps what matches the backup (an in-place restore); an empty directory needs none.
  const hasData = existsSync(join(config.pgdata, 'PG_VERSION'));
  const started = performance.now();
  log.info(
    { restore: id, repo: source.repo.name, from: `${source.namespace}/${source.cluster}`, options },
    'restoring',
  );
  const result = await ctx.pgbackrest.run(
    [
      `--repo=${repoIndex(source.repo.name)}`,
      `--pg1-path=${config.pgdata}`,
      ...(hasData ? ['--delta'] : []),
      ...options,
      ...(hasRecoveryTarget(options) ? ['--target-action=promote'] : []),
      'restore',
    ],
    { signal, base: ctx.pgbackrest.baseArgs(file, source.configDir, source.stanza) },
  );
  if (signal.aborted) return false;
  if (result.code !== 0) return fail(failureReason(result, 'pgbackrest restore'));
  log.info({ restore: id, ms: Math.round(performance.now() - started) }, 'files restored; recovering from the archive');

  // postgres replays the archive and promotes itself at the target (or the archive's end).
  ctx.lastFatal.line = undefined;
  await ctx.files.write();
  postgres.start();
  while (!signal.aborted) {
    const fatal = readFatal(ctx);
    if (fatal) return fail(`postgres could not recover: ${fatal.replace(/^.*?(FATAL|PANIC):\s*/, '')}`);
    const o = await ctx.db.observe();
    if (o.connected && o.inRecovery === false) break;
    ctx.state.setPhase(`recovering from the archive (${o.connected ? `replayed ${o.replayLsn ?? '?'}` : 'starting'})`);
    await sleepUnlessAborted(500, signal);
  }
  if (signal.aborted) return false;
  // pgBackRest wrote the recovery settings into postgresql.auto.conf, which pg_basebackup copies:
  // a replica cloned from here would inherit the target, and its promotion would then fail with
  // "recovery ended before configured recovery target was reached". The restore_command also
  // names this Pod's restore configuration.
  await retry(log, 'reset the recovery settings', signal, async () => {
    for (const setting of RECOVERY_SETTINGS) await ctx.db.query(`ALTER SYSTEM RESET ${setting}`);
  });
  if (signal.aborted) return false;
  postgres.reload();
  await mark(ctx, { id, result: 'succeeded' });
  log.info({ restore: id, ms: Math.round(performance.now() - started) }, 'restored and promoted');
  ctx.events.record('Normal', 'Restored', `${config.podName} restored (${id}) and promoted onto a new timeline`);
  return true;
}

/**
 * The restore options as pgBackRest receives them (PGO's quotes removed), or why they must not
 * run: only the allow-list of RESTORE_OPTIONS, as admission checks.
 *
 * @example
 * ```ts
 * restoreOptions(['--type=time', '--target="2026-01-02 03:04:05+00"']); // ['--type=time', '--target=2026-01-02 03:04:05+00']
 * restoreOptions(['--recovery-option=restore_command=sh']); // 'restore options: option --recovery-option=… is not allowed: …'
 * ```
 */
export function restoreOptions(options: readonly string[] | undefined): string[] | string {
  const refused = refusedOption(options, RESTORE_OPTIONS);
  return refused ? `restore options: option ${refused.option} is ${refused.why}` : normalizeOptions(options ?? []);
}

/** Read through a call: the line is set by postgres's log reader while this role waits. */
function readFatal(ctx: AgentContext): string | undefined {
  return ctx.lastFatal.line;
}
