/**
 * The primary's backup work, for one leadership: keep `pgbackrest.conf` equal to the spec, create
 * the stanza whenever the repo options change (idempotent), and run the cluster's PostgresBackups
 * one at a time, oldest first, recording each in its status: Running with a heartbeat while it
 * runs, then Succeeded with what pgBackRest recorded, or Failed with pgBackRest's reason.
 *
 * Guarantees: at most one backup of the cluster runs (only the Lease holder runs any, and it runs
 * them in turn); a backup never stays Running after its run ended: a run cut short by the end of
 * the leadership is marked Failed here, and one whose agent died is failed by the operator once
 * its heartbeat is stale.
 */
import { Informer } from '@kanri/cache';
import { isNotFound } from '@kanri/client';
import { Backoff, Wakeup } from '@kanri/timing';
import {
  API_VERSION,
  BACKUP_KIND,
  buildPgBackRestConf,
  CONFIG_KEY,
  decodeRestoreSource,
  LABEL,
  PGBACKREST_STANZA,
  type PgBackRestSpec,
  repoIndex,
  repoLocation,
  unsupportedRepo,
} from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { failureReason } from '../io/pgbackrest.js';
import { backupStatusFields, firstRecoverabilityPoint, parseBackups } from './backup-info.js';

const PERIOD_MS = 5_000;
const HEARTBEAT_MS = 10_000;
const INFO_REFRESH_MS = 300_000;
/**
 * A backup is stopped once WAL archiving has failed this long while it ran: pgBackRest cannot
 * finish a backup whose WAL does not reach the repo, and with the repo unreachable it retries
 * for as long as the outage lasts, so the backup would stay Running throughout.
 */
const ARCHIVE_STALL_MS = 60_000;

/** A PostgresBackup as the agent reads it. */
interface BackupRecord {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; creationTimestamp?: string; labels?: Record<string, string> };
  spec?: { cluster?: string; repoName?: string; type?: string; options?: string[] };
  status?: { phase?: string; instance?: string };
}

/** The declared repos this agent can use, and why the others cannot be. */
export function usableSpec(spec: PgBackRestSpec | undefined): { usable?: PgBackRestSpec; unsupported: string[] } {
  if (!spec || spec.repos.length === 0) return { unsupported: [] };
  const unsupported = spec.repos.map(unsupportedRepo).filter((why): why is string => why !== undefined);
  const repos = spec.repos.filter((repo) => unsupportedRepo(repo) === undefined);
  return { ...(repos.length > 0 ? { usable: { ...spec, repos } } : {}), unsupported };
}

export async function runPrimaryBackups(ctx: AgentContext, leadership: AbortSignal): Promise<void> {
  const { config, log } = ctx;
  // Its own wake-up: a Wakeup has one waiter, and the primary's other loop waits on ctx.primaryWakeup.
  const wakeup = new Wakeup();
  const offCluster = ctx.view.onClusterChange(() => wakeup.wake());
  // Followed only once the spec declares repos: a cluster without backups (or an API server
  // without the PostgresBackup CRD) costs nothing.
  let records: Informer<BackupRecord> | undefined;
  const followRecords = () => {
    records ??= new Informer(ctx.client.resource<BackupRecord>(API_VERSION, BACKUP_KIND), {
      namespace: config.namespace,
      labelSelector: { [LABEL.cluster]: config.cluster },
      onError: (error, retryInMs) => log.warn({ err: error, retryInMs }, 'cannot follow PostgresBackups; retrying'),
    }).start();
    // A new PostgresBackup starts at once rather than at the next lap.
    records.onChange(() => wakeup.wake());
    return records;
  };
  const stanzaBackoff = new Backoff({ initialMs: 5_000, maxMs: 120_000 });
  let stanzaRetryAt = 0;
  let infoAt = 0;
  const failedHere = new Set<string>();
  try {
    while (!leadership.aborted) {
      let busy = false;
      try {
        const declared = ctx.view.spec?.backups?.pgbackrest;
        const { usable, unsupported } = usableSpec(declared);
        const state = ctx.backups;
        const clash = usable ? sourceClash(ctx, usable) : undefined;
        if (!usable || clash) {
          state.target = undefined;
          state.stanza = clash
            ? `refused: ${clash}`
            : unsupported.length > 0
              ? `unsupported: ${unsupported.join('; ')}`
              : undefined;
        } else {
          const hash = await ctx.pgbackrest.write(usable);
          state.writtenHash = hash;
          state.target = ctx.pgbackrest.archiveTarget();
          if (hash !== state.stanzaHash || (state.stanza !== 'created' && performance.now() >= stanzaRetryAt)) {
            const result = await ctx.pgbackrest.run(['stanza-create'], { signal: leadership });
            if (leadership.aborted) return;
            state.stanzaHash = hash;
            if (result.code === 0) {
              stanzaBackoff.reset();
              state.stanza = 'created';
              log.info({ repos: usable.repos.map((r) => r.name) }, 'pgBackRest stanza created');
              infoAt = 0;
            } else {
              state.stanza = failureReason(result, 'stanza-create');
              stanzaRetryAt = performance.now() + stanzaBackoff.next();
              log.warn({ reason: state.stanza }, 'cannot create the pgBackRest stanza; retrying');
            }
          }
          if (state.stanzaReady) {
            if (performance.now() >= infoAt) {
              infoAt = performance.now() + INFO_REFRESH_MS;
              await refreshRecoveryWindow(ctx, usable, leadership);
            }
            const next = nextBackup(followRecords().list() as BackupRecord[], failedHere);
            if (next) {
              await runBackup(ctx, next, usable, leadership).catch((error: unknown) => {
                log.error({ err: error, backup: next.metadata?.name }, 'backup failed');
              });
              failedHere.add(next.metadata?.name ?? '');
              infoAt = 0;
              busy = true;
            }
          }
        }
      } catch (error) {
        if (!leadership.aborted) log.warn({ err: error }, 'backup work failed; retrying');
      }
      if (!busy) await wakeup.wait(PERIOD_MS, leadership);
    }
  } finally {
    // Never awaited: the end of a leadership (fencing) must not wait for a request in flight to a
    // server that may be unreachable.
    offCluster();
    void records?.stop().catch(() => undefined);
  }
}

/**
 * Why this clone must not write into a repo it declares: the repo is where its data source's
 * backups live (so archiving would write a second history into the source's stanza).
 */
function sourceClash(ctx: AgentContext, own: PgBackRestSpec): string | undefined {
  const source = decodeRestoreSource(ctx.view.configData?.[CONFIG_KEY.restoreSource]);
  if (source?.id !== 'clone') return undefined;
  const paths = { pgPath: '', socketPath: '', port: 0, spoolPath: '', logPath: '', lockPath: '' };
  const mine = buildPgBackRestConf({ namespace: ctx.config.namespace, cluster: ctx.config.cluster, spec: own, paths });
  const theirs = buildPgBackRestConf({
    namespace: source.namespace,
    cluster: source.cluster,
    spec: { repos: [source.repo], ...(source.global ? { global: source.global } : {}) },
    paths,
  });
  const sourceLocation = repoLocation(theirs.options, repoIndex(source.repo.name));
  const same = own.repos.find((r) => repoLocation(mine.options, repoIndex(r.name)) === sourceLocation);
  return same
    ? `${same.name} is the data source's repo (${sourceLocation.split('|').pop()}); a clone never archives into its source's repo path`
    : undefined;
}

/** The oldest Pending backup (by creation, then name) not already run by this leadership. */
function nextBackup(records: readonly BackupRecord[], done: ReadonlySet<string>): BackupRecord | undefined {
  return records
    .filter((r) => (r.status?.phase ?? 'Pending') === 'Pending' && !done.has(r.metadata?.name ?? ''))
    .sort(
      (a, b) =>
        (a.metadata?.creationTimestamp ?? '').localeCompare(b.metadata?.creationTimestamp ?? '') ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    )[0];
}

async function refreshRecoveryWindow(ctx: AgentContext, spec: PgBackRestSpec, signal: AbortSignal): Promise<void> {
  const first = spec.repos[0];
  if (!first) return;
  const result = await ctx.pgbackrest.run([`--repo=${repoIndex(first.name)}`, '--output=json', 'info'], { signal });
  if (result.code === 0)
    ctx.backups.recoveryFirst = firstRecoverabilityPoint(parseBackups(result.stdout, PGBACKREST_STANZA));
}

async function runBackup(
  ctx: AgentContext,
  record: BackupRecord,
  spec: PgBackRestSpec,
  leadership: AbortSignal,
): Promise<void> {
  const { config, log } = ctx;
  const name = record.metadata?.name ?? '';
  const resource = ctx.client.resource<BackupRecord>(API_VERSION, BACKUP_KIND);
  const patchStatus = (status: Record<string, unknown>) =>
    resource.patchStatus(
      name,
      { status },
      { namespace: config.namespace, type: 'merge', signal: AbortSignal.timeout(10_000) },
    );
  const repoName = record.spec?.repoName ?? spec.repos[0]?.name ?? 'repo1';
  if (!spec.repos.some((r) => r.name === repoName)) {
    await patchStatus({
      phase: 'Failed',
      reason: 'RepoNotDeclared',
      message: `${repoName} is not a usable repo of PostgresCluster ${config.cluster}`,
      completedAt: new Date().toISOString(),
    });
    return;
  }
  const repo = `--repo=${repoIndex(repoName)}`;
  const type = record.spec?.type ?? 'full';
  const startedAt = new Date();
  try {
    await patchStatus({
      phase: 'Running',
      instance: config.podName,
      startedAt: startedAt.toISOString(),
      heartbeatTime: startedAt.toISOString(),
      message: `${type} backup to ${repoName} running on ${config.podName}`,
    });
  } catch (error) {
    if (isNotFound(error)) return; // deleted before it started
    throw error;
  }
  log.info({ backup: name, repo: repoName, type }, 'backup started');
  const stalled = new AbortController();
  let stallReason: string | undefined;
  const heartbeat = setInterval(() => {
    void patchStatus({ heartbeatTime: new Date().toISOString() }).catch(() => undefined);
    const archive = ctx.backups.archiveStalled(startedAt, ARCHIVE_STALL_MS);
    if (archive !== undefined && !stalled.signal.aborted) {
      stallReason = `stopped: WAL archiving has failed for over ${ARCHIVE_STALL_MS / 1000} s while the backup ran (${archive})`;
      stalled.abort();
    }
  }, HEARTBEAT_MS);
  const signal = AbortSignal.any([leadership, stalled.signal]);
  try {
    const before = await ctx.pgbackrest.run([repo, '--output=json', 'info'], { signal });
    const known = new Set(parseBackups(before.stdout, PGBACKREST_STANZA).map((b) => b.label));
    const result = signal.aborted
      ? undefined
      : await ctx.pgbackrest.run([repo, `--type=${type}`, ...(record.spec?.options ?? []), 'backup'], { signal });
    const completedAt = new Date().toISOString();
    if (result?.code !== 0) {
      const reason = leadership.aborted
        ? 'the instance lost the leader Lease while the backup ran'
        : (stallReason ?? failureReason(result ?? before, 'pgbackrest backup'));
      log.warn({ backup: name, reason }, 'backup failed');
      await patchStatus({ phase: 'Failed', reason: 'BackupFailed', message: reason, completedAt });
      ctx.events.record('Warning', 'BackupFailed', `backup ${name} failed: ${reason}`);
      return;
    }
    const after = await ctx.pgbackrest.run([repo, '--output=json', 'info']);
    const made = parseBackups(after.stdout, PGBACKREST_STANZA).filter((b) => !known.has(b.label));
    const backup = made[made.length - 1];
    await patchStatus({
      phase: 'Succeeded',
      reason: 'BackupSucceeded',
      message: backup ? `${type} backup ${backup.label} in ${repoName}` : `${type} backup in ${repoName}`,
      completedAt,
      ...(backup ? backupStatusFields(backup) : {}),
    });
    log.info({ backup: name, label: backup?.label, ms: Date.now() - startedAt.getTime() }, 'backup succeeded');
    // A full backup taken after WAL was dropped starts a history that needs none of the lost WAL.
    const dropped = ctx.backups.walDropped;
    if (type === 'full' && dropped && Date.parse(dropped.time) < startedAt.getTime())
      ctx.backups.walDropped = undefined;
    ctx.events.record('Normal', 'BackupSucceeded', `backup ${name} (${type}, ${repoName}) succeeded`);
  } finally {
    clearInterval(heartbeat);
  }
}
