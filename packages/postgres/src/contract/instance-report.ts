/**
 * The report each agent writes on its own Pod (annotation `ANNOTATION.status`): its encoding and
 * its one decoder. The operator's status, the agents' view of their primary and the Pod predicate
 * all read reports through `readPodReport`, so a malformed or foreign annotation is treated the
 * same everywhere: as no report at all.
 */
import { z } from 'zod';
import { ANNOTATION, ROLE, type Role } from './names.js';

/** What the agent reports on its Pod (annotation {@link ANNOTATION.status}). */
export interface InstanceReport {
  role: Role;
  /** postgres accepts connections (and, on a replica, is streaming from the primary). */
  ready: boolean;
  /** Timeline of the instance (`pg_control_checkpoint()` or `pg_stat_wal_receiver`). */
  timeline: number;
  /** Database system identifier: every member of one cluster shares it. */
  systemIdentifier: string;
  /** Parameters changed in the configuration that take effect only after a restart. */
  pendingRestart?: PendingRestart[];
  /**
   * A replica: the primary's hot-standby limits as its control data last replayed them
   * (`pg_control_recovery()`); a standby refuses to start with a lower value of its own.
   */
  controlLimits?: Record<string, number>;
  /** The last `ANNOTATION.restartPostgres` token this instance restarted postgres for. */
  restartServed?: string;
  /** The operator's configuration as postgres has loaded it (the value of CONFIG_HASH_SETTING). */
  configHash?: string;
  /** The running server's version (`server_version`, e.g. `16.15`), once postgres has answered. */
  serverVersion?: string;
  /** Primary: `pg_current_wal_lsn()`. Replica: last received LSN. */
  receivedLsn: string;
  /** Replica: last replayed LSN. Primary: same as receivedLsn. */
  replayedLsn: string;
  /** Replica: bytes between the primary's current LSN (as last seen) and replayed LSN. 0 on the primary. */
  lagBytes: number;
  /** ISO time of the report. */
  updatedAt: string;
  /** Human-readable reason when not ready. */
  message?: string;
  /**
   * The agent's latest failover decision, e.g. `waiting: no replica within lag limit (db-i-2 lags
   * 20 MiB > 16 MiB)` on a replica, or `promoted: took over from db-i-0 (expired Lease)`.
   */
  failover?: string;
  /** The last switchover this instance took part in, e.g. `switched over to db-i-1 in 1.2 s`. */
  switchover?: string;
  /** How this instance last rejoined after losing the primary role: `pg_rewind …` or `re-cloned …`. */
  rejoin?: string;
  /** Primary in synchronous mode: the published synchronous standbys (see ANNOTATION.syncStandbys). */
  synchronousStandbys?: string[];
  /** Primary with `spec.backups`: the stanza and the WAL archive as this instance sees them. */
  backups?: BackupsReport;
  /** An instance restored in place or cloned from a repo: how the restore went. */
  restore?: RestoreReport;
  /** Why its data volume counts as full (postgres said "No space left on device", or almost no space is free). */
  diskFull?: string;
  /** The primary: its last pass over `spec.users`. */
  users?: UsersReport;
  /**
   * The public half (SPKI PEM, ECDSA P-256) of the key this agent made in memory for the peer API:
   * the operator certifies it as this instance (ANNOTATION.peerCertificate). The private half never
   * leaves the agent, so no other instance can present this instance's identity.
   */
  peerKey?: string;
  /** The primary: its last pre-flight check of a major upgrade (`pg_upgrade --check` against the running server). */
  upgradeCheck?: UpgradeCheckReport;
  /** The instance a major upgrade runs on: how `pg_upgrade` went. */
  upgrade?: UpgradeReport;
}

/** A pre-flight `pg_upgrade --check`, run while the old server serves. */
export interface UpgradeCheckReport {
  /** The major checked against. */
  to: number;
  ok: boolean;
  /** What failed (pg_upgrade's own words), or what was checked. */
  message: string;
  /** ISO time the check ended. */
  at: string;
}

/** A major upgrade on this instance's data. */
export interface UpgradeReport {
  from: number;
  to: number;
  /** `running`, `succeeded`, or `failed` (then the old data was put back: the new server never started). */
  result: 'running' | 'succeeded' | 'failed';
  /** Where it stands, or why it failed. */
  message: string;
  /** How long `pg_upgrade` itself took, in ms. */
  pgUpgradeMs?: number;
}

/** A role Kanri created for `spec.users`, no longer declared but kept, and why. */
export interface RemovedUser {
  name: string;
  reason: string;
}

/** The primary's last completed pass over `spec.users`. */
export interface UsersReport {
  /** The PostgresCluster's `metadata.generation` the pass ran against. */
  generation: number;
  removed: RemovedUser[];
}

/** A parameter waiting for a restart: the value postgres runs with and the one its files ask for. */
export interface PendingRestart {
  name: string;
  running: string;
  wanted: string;
}

/** The primary's view of its pgBackRest repos and WAL archive. */
export interface BackupsReport {
  /** The repo options hash (contract/pgbackrest.ts) the stanza was last created for. */
  stanzaHash?: string;
  /** `created`, or why not (`failed: …`, `unsupported: …`). */
  stanza: string;
  archive?: ArchiveReport;
  /** What the repos can restore to: the oldest backup's end and the last archived WAL's time. */
  recoveryWindow?: { first?: string; last?: string };
  /** pgBackRest dropped WAL from here on (its queue limit): no point-in-time recovery across it until a new full backup. */
  walDropped?: { wal: string; time: string };
  /**
   * The latest full backups of each repo (at most {@link FULL_BACKUPS_PER_REPO}) that pgBackRest's
   * own `info` lists without error: what the major-upgrade gate checks a PostgresBackup's word
   * against, since anyone who may write that status could forge it.
   */
  fullBackups?: FullBackupReport[];
}

/** How many full backups per repo the primary reports. */
export const FULL_BACKUPS_PER_REPO = 3;

/** A full backup as `pgbackrest info` lists it. */
export interface FullBackupReport {
  /** The repo, repo1 to repo4. */
  repo: string;
  /** pgBackRest's label, e.g. 20260102-030405F. */
  label: string;
  /** When the backup ended (pgBackRest's `timestamp.stop`), ISO. */
  stoppedAt: string;
}

/** From `pg_stat_archiver`, the archive command's own outcome, and `archive_status`. */
export interface ArchiveReport {
  lastArchivedWal?: string;
  lastArchivedTime?: string;
  lastFailedWal?: string;
  lastFailedTime?: string;
  /** pgBackRest's error for the last failure. */
  lastFailureReason?: string;
  /** Segments postgres has not archived yet (`.ready` files). */
  pendingSegments?: number;
}

/** The restore an instance ran at boot (spec.dataSource or the restore annotation). */
export interface RestoreReport {
  /** The annotation value (in-place restore) or `clone`. */
  id: string;
  /** `running`, `succeeded`, or `failed`. */
  result: 'running' | 'succeeded' | 'failed';
  reason?: string;
}

const reportSchema = z
  .object({
    role: z.enum([ROLE.primary, ROLE.replica]),
    ready: z.boolean(),
    timeline: z.number(),
    systemIdentifier: z.string(),
    serverVersion: z.string().optional(),
    pendingRestart: z.array(z.object({ name: z.string(), running: z.string(), wanted: z.string() })).optional(),
    controlLimits: z.record(z.string(), z.number()).optional(),
    restartServed: z.string().optional(),
    configHash: z.string().optional(),
    receivedLsn: z.string(),
    replayedLsn: z.string(),
    lagBytes: z.number(),
    updatedAt: z.string(),
    message: z.string().optional(),
    failover: z.string().optional(),
    switchover: z.string().optional(),
    rejoin: z.string().optional(),
    synchronousStandbys: z.array(z.string()).optional(),
    diskFull: z.string().optional(),
    peerKey: z.string().max(1024).optional(),
    users: z
      .object({
        generation: z.number(),
        removed: z.array(z.object({ name: z.string(), reason: z.string() })),
      })
      .optional(),
    backups: z
      .object({
        stanzaHash: z.string().optional(),
        stanza: z.string(),
        archive: z
          .object({
            lastArchivedWal: z.string().optional(),
            lastArchivedTime: z.string().optional(),
            lastFailedWal: z.string().optional(),
            lastFailedTime: z.string().optional(),
            lastFailureReason: z.string().optional(),
            pendingSegments: z.number().optional(),
          })
          .optional(),
        recoveryWindow: z.object({ first: z.string().optional(), last: z.string().optional() }).optional(),
        walDropped: z.object({ wal: z.string(), time: z.string() }).optional(),
        fullBackups: z
          .array(z.object({ repo: z.string(), label: z.string(), stoppedAt: z.string() }))
          .max(4 * FULL_BACKUPS_PER_REPO)
          .optional(),
      })
      .optional(),
    restore: z
      .object({
        id: z.string(),
        result: z.enum(['running', 'succeeded', 'failed']),
        reason: z.string().optional(),
      })
      .optional(),
    upgradeCheck: z.object({ to: z.number(), ok: z.boolean(), message: z.string(), at: z.string() }).optional(),
    upgrade: z
      .object({
        from: z.number(),
        to: z.number(),
        result: z.enum(['running', 'succeeded', 'failed']),
        message: z.string(),
        pgUpgradeMs: z.number().optional(),
      })
      .optional(),
  })
  // A newer agent may add fields; an older operator keeps reading the ones it knows.
  .loose();

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
  return parsed.success ? (parsed.data as InstanceReport) : undefined;
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
