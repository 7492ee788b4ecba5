/**
 * The report each agent writes on its own Pod (annotation `ANNOTATION.status`): its encoding and
 * its one decoder. The operator's status, the agents' view of their primary and the Pod predicate
 * all read reports through `readPodReport`, so a malformed or foreign annotation is treated the
 * same everywhere: as no report at all.
 */
import { z } from 'zod';
import { ANNOTATION, ROLE } from './names.js';

/** How many full backups per repo the primary reports. */
export const FULL_BACKUPS_PER_REPO = 3;

/** A parameter waiting for a restart: the value postgres runs with and the one its files ask for. */
const pendingRestartSchema = z.object({ name: z.string(), running: z.string(), wanted: z.string() });
export type PendingRestart = z.output<typeof pendingRestartSchema>;

/** A role Kanri created for `spec.users`, no longer declared but kept, and why. */
const removedUserSchema = z.object({ name: z.string(), reason: z.string() });
export type RemovedUser = z.output<typeof removedUserSchema>;

/** statfs of the instance's data volume: what `df` in its Pod shows. */
const dataVolumeReportSchema = z.object({
  /** The filesystem's size (its blocks), less than the claim's capacity by the filesystem's own overhead. */
  sizeBytes: z.number(),
  /** Bytes free to postgres (an unprivileged user). */
  availableBytes: z.number(),
});
export type DataVolumeReport = z.output<typeof dataVolumeReportSchema>;

/** The primary's last completed pass over `spec.users`. */
const usersReportSchema = z.object({
  /** The PostgresCluster's `metadata.generation` the pass ran against. */
  generation: z.number(),
  removed: z.array(removedUserSchema),
});
export type UsersReport = z.output<typeof usersReportSchema>;

/**
 * The primary's last run of `spec.databaseInitSQL`: reported on its Pod, kept in the cluster's
 * `status.databaseInitSQLRun`, so a new primary knows what ran (or failed) before it and a failed
 * script runs again only once its text changes.
 */
export const databaseInitSqlRunSchema = z.object({
  configMap: z.string().describe('The ConfigMap the SQL came from.'),
  key: z.string().describe('Its key.'),
  sha256: z.string().describe('SHA-256 of the SQL that ran, in hex; empty when the SQL could not be read.'),
  result: z.enum(['Succeeded', 'Failed']),
  message: z.string().optional().describe("Why it failed: psql's error, or why the ConfigMap could not be read."),
  finishedAt: z.string().describe('When the run ended (ISO).'),
});
export type DatabaseInitSqlRun = z.output<typeof databaseInitSqlRunSchema>;

/** The later of two runs by `finishedAt` (ISO times of one format compare as strings). */
export function laterInitSqlRun(
  a: DatabaseInitSqlRun | undefined,
  b: DatabaseInitSqlRun | undefined,
): DatabaseInitSqlRun | undefined {
  if (!a || !b) return a ?? b;
  return a.finishedAt >= b.finishedAt ? a : b;
}

/** From `pg_stat_archiver`, the archive command's own outcome, and `archive_status`. */
const archiveReportSchema = z.object({
  lastArchivedWal: z.string().optional(),
  lastArchivedTime: z.string().optional(),
  lastFailedWal: z.string().optional(),
  lastFailedTime: z.string().optional(),
  /** pgBackRest's error for the last failure. */
  lastFailureReason: z.string().optional(),
  /** Segments postgres has not archived yet (`.ready` files). */
  pendingSegments: z.number().optional(),
});
export type ArchiveReport = z.output<typeof archiveReportSchema>;

/** A full backup as `pgbackrest info` lists it. */
const fullBackupReportSchema = z.object({
  /** The repo, repo1 to repo4. */
  repo: z.string(),
  /** pgBackRest's label, e.g. 20260102-030405F. */
  label: z.string(),
  /** When the backup ended (pgBackRest's `timestamp.stop`), ISO. */
  stoppedAt: z.string(),
});
export type FullBackupReport = z.output<typeof fullBackupReportSchema>;

/** The primary's view of its pgBackRest repos and WAL archive. */
const backupsReportSchema = z.object({
  /** The repo options hash (contract/pgbackrest.ts) the stanza was last created for. */
  stanzaHash: z.string().optional(),
  /** `created`, or why not (`failed: …`, `unsupported: …`). */
  stanza: z.string(),
  archive: archiveReportSchema.optional(),
  /** What the repos can restore to: the oldest backup's end and the last archived WAL's time. */
  recoveryWindow: z.object({ first: z.string().optional(), last: z.string().optional() }).optional(),
  /** pgBackRest dropped WAL from here on (its queue limit): no point-in-time recovery across it until a new full backup. */
  walDropped: z.object({ wal: z.string(), time: z.string() }).optional(),
  /**
   * The latest full backups of each repo (at most {@link FULL_BACKUPS_PER_REPO}) that pgBackRest's
   * own `info` lists without error: what the major-upgrade gate checks a PostgresBackup's word
   * against, since anyone who may write that status could forge it.
   */
  fullBackups: z
    .array(fullBackupReportSchema)
    .max(4 * FULL_BACKUPS_PER_REPO)
    .optional(),
});
export type BackupsReport = z.output<typeof backupsReportSchema>;

/** The restore an instance ran at boot (spec.dataSource or the restore annotation). */
const restoreReportSchema = z.object({
  /** The annotation value (in-place restore) or `clone`. */
  id: z.string(),
  result: z.enum(['running', 'succeeded', 'failed']),
  reason: z.string().optional(),
});
export type RestoreReport = z.output<typeof restoreReportSchema>;

/** A pre-flight `pg_upgrade --check`, run while the old server serves. */
const upgradeCheckReportSchema = z.object({
  /** The major checked against. */
  to: z.number(),
  ok: z.boolean(),
  /** What failed (pg_upgrade's own words), or what was checked. */
  message: z.string(),
  /** ISO time the check ended. */
  at: z.string(),
});
export type UpgradeCheckReport = z.output<typeof upgradeCheckReportSchema>;

/** A major upgrade on this instance's data. */
const upgradeReportSchema = z.object({
  from: z.number(),
  to: z.number(),
  /** `running`, `succeeded`, or `failed` (then the old data was put back: the new server never started). */
  result: z.enum(['running', 'succeeded', 'failed']),
  /** Where it stands, or why it failed. */
  message: z.string(),
  /** How long `pg_upgrade` itself took, in ms. */
  pgUpgradeMs: z.number().optional(),
});
export type UpgradeReport = z.output<typeof upgradeReportSchema>;

/** What the agent reports on its Pod (annotation {@link ANNOTATION.status}). */
const instanceReportSchema = z.object({
  role: z.enum([ROLE.primary, ROLE.replica]),
  /** postgres accepts connections (and, on a replica, is streaming from the primary). */
  ready: z.boolean(),
  /** Timeline of the instance (`pg_control_checkpoint()` or `pg_stat_wal_receiver`). */
  timeline: z.number(),
  /** Database system identifier: every member of one cluster shares it. */
  systemIdentifier: z.string(),
  /** Parameters changed in the configuration that take effect only after a restart. */
  pendingRestart: z.array(pendingRestartSchema).optional(),
  /**
   * A replica: the primary's hot-standby limits as its control data last replayed them
   * (`pg_control_recovery()`); a standby refuses to start with a lower value of its own.
   */
  controlLimits: z.record(z.string(), z.number()).optional(),
  /** The last `ANNOTATION.restartPostgres` token this instance restarted postgres for. */
  restartServed: z.string().optional(),
  /** The operator's configuration as postgres has loaded it (the value of CONFIG_HASH_SETTING). */
  configHash: z.string().optional(),
  /** The running server's version (`server_version`, e.g. `16.15`), once postgres has answered. */
  serverVersion: z.string().optional(),
  /** Primary: `pg_current_wal_lsn()`. Replica: last received LSN. */
  receivedLsn: z.string(),
  /** Replica: last replayed LSN. Primary: same as receivedLsn. */
  replayedLsn: z.string(),
  /** Replica: bytes between the primary's current LSN (as last seen) and replayed LSN. 0 on the primary. */
  lagBytes: z.number(),
  /** ISO time of the report. */
  updatedAt: z.string(),
  /** Human-readable reason when not ready. */
  message: z.string().optional(),
  /**
   * The agent's latest failover decision, e.g. `waiting: no replica within lag limit (db-i-2 lags
   * 20 MiB > 16 MiB)` on a replica, or `promoted: took over from db-i-0 (expired Lease)`.
   */
  failover: z.string().optional(),
  /** The last switchover this instance took part in, e.g. `switched over to db-i-1 in 1.2 s`. */
  switchover: z.string().optional(),
  /**
   * The token of the last `ANNOTATION.switchoverOrder` this instance served: switched over,
   * refused (`switchover` says why) or failed. The operator clears the order once it sees it.
   */
  switchoverServed: z.string().optional(),
  /** How this instance last rejoined after losing the primary role: `pg_rewind …` or `re-cloned …`. */
  rejoin: z.string().optional(),
  /** Primary in synchronous mode: the published synchronous standbys (see ANNOTATION.syncStandbys). */
  synchronousStandbys: z.array(z.string()).optional(),
  /** Primary with `spec.backups`: the stanza and the WAL archive as this instance sees them. */
  backups: backupsReportSchema.optional(),
  /** An instance restored in place or cloned from a repo: how the restore went. */
  restore: restoreReportSchema.optional(),
  /** Why its data volume counts as full (postgres said "No space left on device", or almost no space is free). */
  diskFull: z.string().optional(),
  /** The data volume's size and free space, as of this report (absent while it cannot be read). */
  dataVolume: dataVolumeReportSchema.optional(),
  /** The primary: its last pass over `spec.users`. */
  users: usersReportSchema.optional(),
  /** The primary: its last run of `spec.databaseInitSQL`. */
  databaseInitSQL: databaseInitSqlRunSchema.optional(),
  /**
   * The public half (SPKI PEM, ECDSA P-256) of the key this agent made in memory for the peer API:
   * the operator certifies it as this instance (ANNOTATION.peerCertificate). The private half never
   * leaves the agent, so no other instance can present this instance's identity.
   */
  peerKey: z.string().max(1024).optional(),
  /** The primary: its last pre-flight check of a major upgrade (`pg_upgrade --check` against the running server). */
  upgradeCheck: upgradeCheckReportSchema.optional(),
  /** The instance a major upgrade runs on: how `pg_upgrade` went. */
  upgrade: upgradeReportSchema.optional(),
});
export type InstanceReport = z.output<typeof instanceReportSchema>;

// A newer agent may add fields; an older operator keeps reading the ones it knows.
const reportSchema = instanceReportSchema.loose();

/**
 * The annotation value for a report.
 *
 * @example
 * ```ts
 * pod.metadata.annotations[ANNOTATION.status] = encodeReport(report);
 * ```
 */
export function encodeReport(report: InstanceReport): string {
  return JSON.stringify(report);
}

/**
 * The report in an annotation value; undefined when absent or not a report.
 *
 * @example
 * ```ts
 * decodeReport('{"role":"primary"}'); // undefined: fields are missing
 * ```
 */
export function decodeReport(raw: string | undefined): InstanceReport | undefined {
  if (!raw) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = reportSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** Anything with Pod metadata: a Pod from the API, or one from a cache. */
interface HasAnnotations {
  readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> } | undefined;
}

/**
 * The report on a Pod, if it carries a valid one.
 *
 * @example
 * ```ts
 * const report = readPodReport(pod);
 * if (report?.ready) console.log(`${pod.metadata?.name} serves as ${report.role}`);
 * ```
 */
export function readPodReport(pod: HasAnnotations | undefined): InstanceReport | undefined {
  return decodeReport(pod?.metadata?.annotations?.[ANNOTATION.status]);
}

/**
 * The archive is failing when its last attempt failed: postgres retries that segment until it works.
 *
 * @example
 * ```ts
 * archiveFailing({ lastArchivedTime: '2026-12-01T10:00:00Z', lastFailedTime: '2026-12-01T10:00:05Z' }); // true
 * ```
 */
export function archiveFailing(archive: ArchiveReport | undefined): boolean {
  if (!archive?.lastFailedTime) return false;
  return !archive.lastArchivedTime || Date.parse(archive.lastFailedTime) > Date.parse(archive.lastArchivedTime);
}

/**
 * pgBackRest's reason when every push has failed for longer than `ms`, counted from `since` at the
 * earliest (a backup's start); undefined while archiving works or has not failed that long.
 *
 * @example
 * ```ts
 * archiveStalled({ lastArchivedTime: '2026-12-01T10:00:00Z', lastFailedTime: '2026-12-01T10:02:00Z', lastFailureReason: 'S3 down' },
 *   new Date('2026-12-01T10:00:30Z'), 60_000, new Date('2026-12-01T10:02:00Z')); // 'S3 down'
 * ```
 */
export function archiveStalled(
  archive: ArchiveReport | undefined,
  since: Date,
  ms: number,
  now = new Date(),
): string | undefined {
  if (!archiveFailing(archive)) return undefined;
  const from = Math.max(since.getTime(), archive?.lastArchivedTime ? Date.parse(archive.lastArchivedTime) : 0);
  return now.getTime() - from > ms ? (archive?.lastFailureReason ?? 'WAL archiving fails') : undefined;
}
