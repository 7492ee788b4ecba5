/**
 * SQL on the local postgres as the superuser, over its private unix socket. A small pool with
 * timeouts on connect and on every query; errors of idle connections (postgres restarting) are
 * logged, never fatal.
 */
import pg from 'pg';
import { type ArchiveReport, CONFIG_HASH_SETTING, type PendingRestart, PORT, SUPERUSER } from '../../contract/index.js';
import type { Logger } from '../log/logger.js';
import type { PostgresObservation } from '../plan/report.js';
import { AGENT_SESSION_OPTIONS } from './session-options.js';

const POOL_SIZE = 4;

export class LocalDb {
  readonly #pool: pg.Pool;
  /**
   * The newest timeline the WAL receiver streamed, by the postmaster start it belongs to. Without a
   * receiver running (the primary just died), a standby shows only its last restartpoint's
   * timeline, which can be older than the WAL it holds: a synchronous-mode failover compares
   * timelines (plan/leadership/failover-plan.ts) and would wrongly find it on another one. A restart (a
   * rewind, a re-clone) forgets it.
   */
  #streamed: { readonly started: string; readonly timeline: number } | undefined;

  constructor(socketDir: string, log: Logger) {
    this.#pool = new pg.Pool({
      host: socketDir,
      port: PORT.postgres,
      user: SUPERUSER,
      database: 'postgres',
      application_name: 'kanri-agent',
      options: AGENT_SESSION_OPTIONS,
      // In a takeover the status loop, the peers' ranking requests and the promotion all query at
      // once; with 2 connections pg_promote waited its turn for tens of ms.
      max: POOL_SIZE,
      connectionTimeoutMillis: 5_000,
      query_timeout: 60_000,
      // As long as the peer connections stay open (peers/peer-server.ts): warm() opens them seconds
      // before a takeover, which must find them open.
      idleTimeoutMillis: 30_000,
    });
    this.#pool.on('error', (error) => log.debug({ err: error }, 'idle connection to postgres failed'));
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<R[]> {
    return (await this.#pool.query<R>(sql, params)).rows;
  }

  /**
   * Opens every connection of the pool now. A takeover queries several at once (the ranking, the
   * peers' status requests, the promotion); a backend started then, on a busy machine, put
   * milliseconds on the path to RTO.
   */
  async warm(): Promise<void> {
    const opened = await Promise.allSettled(Array.from({ length: POOL_SIZE }, () => this.#pool.connect()));
    for (const client of opened) if (client.status === 'fulfilled') client.value.release();
  }

  /** True when postgres accepts a connection and answers. */
  async ping(): Promise<boolean> {
    try {
      await this.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  /** One round trip that tells role, identity, timeline and WAL positions. */
  async observe(): Promise<PostgresObservation> {
    let row: Record<string, unknown> | undefined;
    try {
      [row] = await this.query(OBSERVE_SQL);
    } catch {
      return { connected: false };
    }
    if (!row) return { connected: false };
    const inRecovery = row.in_recovery === true;
    const walfile = row.current_walfile as string | null;
    const started = String(row.started);
    if (this.#streamed?.started !== started) this.#streamed = undefined;
    const received = Math.max(Number(row.received_tli ?? 0), this.#streamed?.timeline ?? 0);
    if (inRecovery && received > 0) this.#streamed = { started, timeline: received };
    const timeline = inRecovery
      ? Math.max(received, Number(row.checkpoint_tli ?? 0))
      : walfile
        ? Number.parseInt(walfile.slice(0, 8), 16)
        : Number(row.checkpoint_tli ?? 0);
    return {
      connected: true,
      inRecovery,
      systemIdentifier: row.system_identifier as string,
      // The running server's own word: the image's tag or spec.postgresVersion may say otherwise.
      serverVersion: (row.server_version as string).split(' ')[0],
      timeline,
      currentLsn: row.current_lsn as string | null,
      receiveLsn: row.receive_lsn as string | null,
      replayLsn: row.replay_lsn as string | null,
      receiverStatus: row.receiver_status as string | null,
      senderEndLsn: row.latest_end_lsn as string | null,
      configHash: (row.config_hash as string | null) || undefined,
      restartPending: row.restart_pending === true,
    };
  }

  /**
   * Parameters waiting for a restart, with their running and configured values (pg_file_settings
   * needs the superuser the agent is).
   */
  async pendingRestart(): Promise<PendingRestart[]> {
    return this.query<PendingRestart>(PENDING_RESTART_SQL);
  }

  /** `pg_stat_archiver` and the count of segments waiting for the archive command. */
  async observeArchive(): Promise<ArchiveReport> {
    const [row] = await this.query<Record<string, string | number | Date | null>>(ARCHIVE_SQL);
    const report: ArchiveReport = {};
    if (!row) return report;
    const time = (value: unknown) => (value instanceof Date ? value.toISOString() : undefined);
    if (row.last_archived_wal) report.lastArchivedWal = String(row.last_archived_wal);
    if (time(row.last_archived_time)) report.lastArchivedTime = time(row.last_archived_time);
    if (row.last_failed_wal) report.lastFailedWal = String(row.last_failed_wal);
    if (time(row.last_failed_time)) report.lastFailedTime = time(row.last_failed_time);
    report.pendingSegments = Number(row.pending ?? 0);
    return report;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

// A restore's recovery targets stay pending once it is over; they mean nothing to a running server.
const RESTART_PENDING = "s.pending_restart AND s.name NOT LIKE 'recovery\\_target%'";

// The current WAL file's name starts with the timeline (8 hex digits): unlike pg_control_checkpoint()
// it is right at once after a promotion, before the next checkpoint.
const OBSERVE_SQL = `
SELECT pg_is_in_recovery() AS in_recovery,
       pg_postmaster_start_time()::text AS started,
       current_setting('server_version') AS server_version,
       (SELECT system_identifier::text FROM pg_control_system()) AS system_identifier,
       (SELECT timeline_id FROM pg_control_checkpoint()) AS checkpoint_tli,
       CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS current_lsn,
       CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END AS current_walfile,
       pg_last_wal_receive_lsn()::text AS receive_lsn,
       pg_last_wal_replay_lsn()::text AS replay_lsn,
       w.status AS receiver_status,
       w.received_tli,
       w.latest_end_lsn::text AS latest_end_lsn,
       current_setting('${CONFIG_HASH_SETTING}', true) AS config_hash,
       EXISTS (SELECT 1 FROM pg_settings s WHERE ${RESTART_PENDING}) AS restart_pending
FROM (SELECT 1) AS one LEFT JOIN pg_stat_wal_receiver AS w ON true`;

// The last line for a name in the files wins, as in postgres itself; a setting removed from the
// files goes back to its built-in value (a restored backup's configuration can do that). Never
// null: the report's schema would refuse it, and the operator would see no report at all.
const PENDING_RESTART_SQL = `
SELECT s.name, s.setting AS running,
       coalesce((SELECT f.setting FROM pg_file_settings f WHERE f.name = s.name ORDER BY f.seqno DESC LIMIT 1),
                s.boot_val, '') AS wanted
FROM pg_settings s WHERE ${RESTART_PENDING}
ORDER BY s.name`;

const ARCHIVE_SQL = `
SELECT a.last_archived_wal, a.last_archived_time, a.last_failed_wal, a.last_failed_time,
       (SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') AS pending
FROM pg_stat_archiver AS a`;
