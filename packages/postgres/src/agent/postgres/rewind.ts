/**
 * Rejoining after losing the primary role: pg_rewind winds a former primary's PGDATA back to where
 * it left the new primary's history (only the blocks that changed since are copied), so it can
 * stream from the new primary. pg_rewind (PostgreSQL 13+) first runs crash recovery in single-user
 * mode itself when the instance was not shut down cleanly.
 */
import { execFile } from 'node:child_process';
import { readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { PORT, REPLICATION_USER } from '../../contract/index.js';
import { CommandError, withParentDeathSignal } from '../commands.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import {
  CHECKPOINTED_TIMELINE_SQL,
  type CheckpointedTimelineRow,
  checkpointedTimeline,
} from '../plan/leadership/rejoin-plan.js';
import { type MemberTarget, memberConninfo, usesPassword } from '../plan/member-connection.js';
import { AGENT_SESSION_OPTIONS } from './session-options.js';

export interface ControlData {
  /** `in production`, `shut down`, `shut down in recovery`, `in archive recovery`, … */
  readonly state: string;
  /** Latest checkpoint location: after a clean shutdown, the shutdown checkpoint (the last record). */
  readonly checkpointLsn: string;
  readonly timeline: number;
  /**
   * The hot-standby limits recorded in the control file (`max_connections setting`, …) by
   * parameter name; on a standby, the primary's values as last replayed.
   */
  readonly limits: Readonly<Record<string, number>>;
  /** Database system identifier: equal on every member of one cluster, and only there. */
  readonly systemIdentifier: string;
  /** Fixed at initdb: a major upgrade's new cluster must have the same. */
  readonly walSegmentBytes: number;
}

/** pg_controldata's label → the parameter it records. */
const LIMIT_LABELS: Readonly<Record<string, string>> = {
  'max_connections setting': 'max_connections',
  'max_worker_processes setting': 'max_worker_processes',
  'max_wal_senders setting': 'max_wal_senders',
  'max_prepared_xacts setting': 'max_prepared_transactions',
  'max_locks_per_xact setting': 'max_locks_per_transaction',
};

/** Parses pg_controldata's output. Pure. */
export function parseControlData(text: string): ControlData {
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim() ?? '';
  return {
    state: field('Database cluster state'),
    checkpointLsn: field('Latest checkpoint location'),
    timeline: Number(field("Latest checkpoint's TimeLineID")) || 0,
    limits: Object.fromEntries(
      Object.entries(LIMIT_LABELS).flatMap(([label, name]) => {
        const value = Number.parseInt(field(label), 10);
        return Number.isFinite(value) ? [[name, value]] : [];
      }),
    ),
    systemIdentifier: field('Database system identifier'),
    walSegmentBytes: Number(field('Bytes per WAL segment')) || 0,
  };
}

/** Runs a tool and resolves with its combined output; rejects (redacted) on a non-zero exit. */
export function captureCommand(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; redactor: Redactor; timeoutMs?: number },
): Promise<string> {
  const [file, argv] = withParentDeathSignal(command, args);
  const tool = command.split('/').pop() ?? command;
  return new Promise((resolve, reject) => {
    execFile(
      file,
      argv,
      { env: options.env ?? process.env, timeout: options.timeoutMs ?? 0, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (!error) return resolve(output);
        const tail = output.trim().split('\n').slice(-5).join(' | ');
        reject(new CommandError(options.redactor.redact(`${tool} failed: ${tail || error.message}`)));
      },
    );
  });
}

export async function readControlData(pgBin: string, pgdata: string, redactor: Redactor): Promise<ControlData> {
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  return parseControlData(await captureCommand(join(pgBin, 'pg_controldata'), ['-D', pgdata], { env, redactor }));
}

export interface RewindResult {
  /** pg_rewind found the histories had not diverged (this instance's WAL is a prefix of the source's). */
  readonly needed: boolean;
  readonly ms: number;
}

/** How long the source may take to checkpoint its new timeline before the rewind gives up. */
const CHECKPOINT_WAIT_MS = 60_000;

/**
 * pg_rewind from the new primary `source`, as the replication user: granted only the functions
 * pg_rewind reads files with (users-plan.ts), reached as member-connection.ts says (verify-full,
 * the replication certificate as the only credential with the cluster's TLS files). No superuser
 * logs in over the network. Resolves whether a rewind was needed; rejects if it failed.
 */
export async function rewind(input: {
  readonly pgBin: string;
  readonly pgdata: string;
  readonly source: MemberTarget;
  /** Used only without the cluster's TLS files (usesPassword). */
  readonly replicationPassword: string;
  readonly log: Logger;
  readonly redactor: Redactor;
}): Promise<RewindResult> {
  const started = performance.now();
  const waitedMs = await untilTimelineCheckpointed(input.source, input.replicationPassword);
  if (waitedMs > 0) input.log.info({ waitedMs }, "waited for the source's checkpoint of its new timeline");
  const source = memberConninfo(input.source, [
    ['dbname', 'postgres'],
    ['connect_timeout', '10'],
  ]);
  const password = usesPassword(input.source) ? { PGPASSWORD: input.replicationPassword } : {};
  const output = await captureCommand(
    join(input.pgBin, 'pg_rewind'),
    ['--target-pgdata', input.pgdata, '--source-server', source],
    {
      env: { ...process.env, ...password, LC_ALL: 'C', LANG: 'C' },
      redactor: input.redactor,
      timeoutMs: 10 * 60_000,
    },
  );
  for (const line of output.split('\n')) if (line.trim()) input.log.info({ tool: 'pg_rewind' }, line);
  return { needed: !/no rewind required/.test(output), ms: Math.round(performance.now() - started) };
}

/**
 * Waits until the source's pg_control holds its current timeline (CHECKPOINTED_TIMELINE_SQL). The
 * new primary checkpoints itself (promote.ts, and checkpointIfTimelineLags while pg_control lags):
 * CHECKPOINT needs a superuser before PostgreSQL 15, which no member is on another's. Resolves how
 * long it waited (0: not at all).
 */
async function untilTimelineCheckpointed(target: MemberTarget, password: string): Promise<number> {
  const tls = target.tls;
  const db = new pg.Client({
    host: target.ip,
    port: PORT.postgres,
    user: REPLICATION_USER,
    database: 'postgres',
    connectionTimeoutMillis: 10_000,
    application_name: 'kanri-agent-rewind',
    options: AGENT_SESSION_OPTIONS,
    // Node checks the certificate against `servername` (verify-full) before the startup message.
    ...(tls
      ? {
          ssl: {
            ca: await readFile(tls.serverCa, 'utf8'),
            cert: await readFile(tls.replicationCert, 'utf8'),
            key: await readFile(tls.replicationKey, 'utf8'),
            servername: target.serverName,
          },
        }
      : { password }),
  });
  db.on('error', () => undefined);
  try {
    await db.connect();
    const started = performance.now();
    const deadline = started + CHECKPOINT_WAIT_MS;
    for (let polls = 0; ; polls++) {
      const {
        rows: [row],
      } = await db.query<CheckpointedTimelineRow>(CHECKPOINTED_TIMELINE_SQL);
      const state = checkpointedTimeline(row);
      if (state?.checkpointed) return polls === 0 ? 0 : Math.round(performance.now() - started);
      if (performance.now() > deadline)
        throw new Error(
          state
            ? `the source has not checkpointed its timeline ${state.timeline} after ${CHECKPOINT_WAIT_MS / 1000} s`
            : `the source is still in recovery after ${CHECKPOINT_WAIT_MS / 1000} s`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await db.end().catch(() => undefined);
  }
}

/**
 * Moves a PGDATA that could not be rewound aside (replacing an older one), so that a fresh clone
 * can take its place while its transactions stay on disk for inspection. Resolves the new path.
 */
export async function setAside(pgdata: string): Promise<string> {
  const aside = `${pgdata}.diverged`;
  await rm(aside, { recursive: true, force: true });
  await rename(pgdata, aside);
  return aside;
}
