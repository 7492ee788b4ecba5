/**
 * Runs a cluster's PostgresBackups one at a time, oldest first, recording each in its status:
 * Running with a heartbeat while it runs, then Succeeded with what pgBackRest recorded, or Failed
 * with pgBackRest's reason. The primary runs them (repos it reaches itself), or the repo host does
 * (a volume repo: pgBackRest backs up only from the host that holds the repo).
 *
 * Guarantees: a backup never stays Running after its run ended: a run cut short (the end of the
 * leadership, the agent stopping) is marked Failed here, and one whose agent died is failed by the
 * operator once its heartbeat is stale.
 */
import { Informer, type ReadonlyDeep } from '@kanri/cache';
import { isNotFound, type KubeClient } from '@kanri/client';
import type { Wakeup } from '@kanri/timing';
import { POSTGRES_BACKUP_OPTIONS, refusedOption } from '../../api/command-options.js';
import { BACKUP_TYPES, type PostgresBackup } from '../../api/postgres-backup.js';
import {
  API_VERSION,
  BACKUP_KIND,
  LABEL,
  PGBACKREST_STANZA,
  type PgBackRestSpec,
  repoIndex,
} from '../../contract/index.js';
import type { Logger } from '../log/logger.js';
import { backupStatusFields, parseBackups } from './backup-info.js';
import { failureReason, type PgBackRest } from './pgbackrest.js';

const HEARTBEAT_MS = 10_000;
/**
 * A backup is stopped once WAL archiving has failed this long while it ran: pgBackRest cannot
 * finish a backup whose WAL does not reach the repo, and with the repo unreachable it retries
 * for as long as the outage lasts, so the backup would stay Running throughout.
 */
const ARCHIVE_STALL_MS = 60_000;

export interface BackupRunnerDeps {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly cluster: string;
  /** Who runs the backups (recorded in their status). */
  readonly podName: string;
  readonly log: Logger;
  readonly events: { record(type: 'Normal' | 'Warning', reason: string, note: string): void };
  readonly pgbackrest: Pick<PgBackRest, 'run'>;
  /** Why WAL archiving has failed for `ms` since `startedAt`, if it has (the primary knows). */
  readonly archiveStalled?: (startedAt: Date, ms: number) => string | undefined;
  /** A backup of `type` that started at `startedAt` succeeded. */
  readonly onSucceeded?: (type: string, startedAt: Date) => void;
  /** Woken when a PostgresBackup changes. */
  readonly wakeup: Wakeup;
}

/** The cluster's PostgresBackups as one runner sees and runs them. */
export class BackupQueue {
  readonly #deps: BackupRunnerDeps;
  // Followed only once a backup may run: a cluster without backups (or an API server without the
  // PostgresBackup CRD) costs nothing.
  #records: Informer<PostgresBackup> | undefined;
  readonly #done = new Set<string>();

  constructor(deps: BackupRunnerDeps) {
    this.#deps = deps;
  }

  #follow(): Informer<PostgresBackup> {
    if (this.#records) return this.#records;
    const { client, namespace, cluster, log, wakeup } = this.#deps;
    const records = new Informer(client.resource<PostgresBackup>(API_VERSION, BACKUP_KIND), {
      namespace,
      labelSelector: { [LABEL.cluster]: cluster },
      onError: (error, retryInMs) => log.warn({ err: error, retryInMs }, 'cannot follow PostgresBackups; retrying'),
    }).start();
    // A new PostgresBackup starts at once rather than at the next lap.
    records.onChange(() => wakeup.wake());
    this.#records = records;
    return records;
  }

  /**
   * Runs the next Pending backup not yet run by this queue; resolves whether one ran.
   */
  async runNext(spec: PgBackRestSpec, signal: AbortSignal): Promise<boolean> {
    const next = nextBackup(this.#follow().list(), this.#done);
    if (!next) return false;
    await runBackup(this.#deps, next, spec, signal).catch((error: unknown) => {
      this.#deps.log.error({ err: error, backup: next.metadata?.name }, 'backup failed');
    });
    this.#done.add(next.metadata?.name ?? '');
    return true;
  }

  /** The backups whose status says Succeeded, as one string that changes when that set does. */
  succeededKey(): string {
    return this.#follow()
      .list()
      .filter((r) => r.status?.phase === 'Succeeded')
      .map((r) => r.metadata?.name ?? '')
      .sort()
      .join(',');
  }

  /** Never awaited by callers that must not wait for a request in flight (fencing). */
  stop(): Promise<void> {
    return this.#records?.stop() ?? Promise.resolve();
  }
}

/** The oldest Pending backup (by creation, then name) not already run by this leadership. */
function nextBackup(
  records: readonly ReadonlyDeep<PostgresBackup>[],
  done: ReadonlySet<string>,
): ReadonlyDeep<PostgresBackup> | undefined {
  return records
    .filter((r) => (r.status?.phase ?? 'Pending') === 'Pending' && !done.has(r.metadata?.name ?? ''))
    .sort(
      (a, b) =>
        (a.metadata?.creationTimestamp ?? '').localeCompare(b.metadata?.creationTimestamp ?? '') ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    )[0];
}

/**
 * Why a PostgresBackup's spec must not reach pgBackRest: admission refuses it, so it is one
 * admitted before the allow-list, or written past admission. It then fails with this reason.
 * It reads the fields as unknown: such a spec need not have the API's type.
 *
 * @example
 * ```ts
 * refusedSpec({ type: 'full', options: ['--repo1-path=/elsewhere'] }); // 'spec.options: option --repo1-path=/elsewhere is not allowed: …'
 * ```
 */
export function refusedSpec(
  spec: { readonly type?: unknown; readonly options?: unknown } | undefined,
): string | undefined {
  const type = spec?.type ?? 'full';
  if (!(BACKUP_TYPES as readonly unknown[]).includes(type))
    return `spec.type: ${JSON.stringify(type)} is not one of ${BACKUP_TYPES.join(', ')}`;
  const options = spec?.options;
  if (options === undefined) return undefined;
  if (!Array.isArray(options) || !options.every((o): o is string => typeof o === 'string'))
    return 'spec.options: not a list of strings';
  const refused = refusedOption(options, POSTGRES_BACKUP_OPTIONS);
  return refused && `spec.options: option ${refused.option} is ${refused.why}`;
}

async function runBackup(
  deps: BackupRunnerDeps,
  record: ReadonlyDeep<PostgresBackup>,
  spec: PgBackRestSpec,
  leadership: AbortSignal,
): Promise<void> {
  const { log } = deps;
  const name = record.metadata?.name ?? '';
  const resource = deps.client.resource<PostgresBackup>(API_VERSION, BACKUP_KIND);
  const patchStatus = (status: Record<string, unknown>) =>
    resource.patchStatus(
      name,
      { status },
      { namespace: deps.namespace, type: 'merge', signal: AbortSignal.timeout(10_000) },
    );
  const repoName = record.spec?.repoName ?? spec.repos[0]?.name ?? 'repo1';
  if (!spec.repos.some((r) => r.name === repoName)) {
    await patchStatus({
      phase: 'Failed',
      reason: 'RepoNotDeclared',
      message: `${repoName} is not a usable repo of PostgresCluster ${deps.cluster}`,
      completedAt: new Date().toISOString(),
    });
    return;
  }
  const refused = refusedSpec(record.spec);
  if (refused) {
    log.warn({ backup: name, reason: refused }, 'backup refused');
    await patchStatus({
      phase: 'Failed',
      reason: 'OptionNotAllowed',
      message: refused,
      completedAt: new Date().toISOString(),
    });
    deps.events.record('Warning', 'BackupFailed', `backup ${name} refused: ${refused}`);
    return;
  }
  const repo = `--repo=${repoIndex(repoName)}`;
  const type = record.spec?.type ?? 'full';
  const startedAt = new Date();
  try {
    await patchStatus({
      phase: 'Running',
      instance: deps.podName,
      startedAt: startedAt.toISOString(),
      heartbeatTime: startedAt.toISOString(),
      message: `${type} backup to ${repoName} running on ${deps.podName}`,
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
    const archive = deps.archiveStalled?.(startedAt, ARCHIVE_STALL_MS);
    if (archive !== undefined && !stalled.signal.aborted) {
      stallReason = `stopped: WAL archiving has failed for over ${ARCHIVE_STALL_MS / 1000} s while the backup ran (${archive})`;
      stalled.abort();
    }
  }, HEARTBEAT_MS);
  const signal = AbortSignal.any([leadership, stalled.signal]);
  try {
    const before = await deps.pgbackrest.run([repo, '--output=json', 'info'], { signal });
    const known = new Set(parseBackups(before.stdout, PGBACKREST_STANZA).map((b) => b.label));
    const result = signal.aborted
      ? undefined
      : await deps.pgbackrest.run([repo, `--type=${type}`, ...(record.spec?.options ?? []), 'backup'], { signal });
    const completedAt = new Date().toISOString();
    if (result?.code !== 0) {
      const reason = leadership.aborted
        ? `${deps.podName} stopped running backups (the primary lost the leader Lease, or the agent stopped) while the backup ran`
        : (stallReason ?? failureReason(result ?? before, 'pgbackrest backup'));
      log.warn({ backup: name, reason }, 'backup failed');
      await patchStatus({ phase: 'Failed', reason: 'BackupFailed', message: reason, completedAt });
      deps.events.record('Warning', 'BackupFailed', `backup ${name} failed: ${reason}`);
      return;
    }
    const after = await deps.pgbackrest.run([repo, '--output=json', 'info']);
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
    deps.onSucceeded?.(type, startedAt);
    deps.events.record('Normal', 'BackupSucceeded', `backup ${name} (${type}, ${repoName}) succeeded`);
  } finally {
    clearInterval(heartbeat);
  }
}
