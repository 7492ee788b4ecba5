/**
 * The operator's share of backups, planned from the cluster, its PostgresBackups and the primary's
 * report. Pure. It creates PostgresBackups (one per manual annotation value, one per due schedule),
 * fails those whose instance stopped heartbeating, and derives `status.pgbackrest`,
 * `status.archive` and the `WALArchiving` condition. The primary's agent runs the backups.
 */
import { createHash } from 'node:crypto';
import type { ConditionInput } from '@kanri/runtime';
import { BACKUP_OPTIONS, refusedOption } from '../../api/command-options.js';
import type { PostgresBackup } from '../../api/postgres-backup.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  API_VERSION,
  archiveFailing,
  BACKUP_KIND,
  type BackupsReport,
  GROUP,
  triggerValue,
} from '../../contract/index.js';
import { clusterLabels } from '../builders/labels.js';
import { declaredSchedules, latestDue, nextRun, SCHEDULE_TYPES, type ScheduleKey } from './backup-schedule.js';

/** A Running backup whose heartbeat is older than this ran on an instance that is gone. */
export const BACKUP_HEARTBEAT_STALE_MS = 60_000;

export const BACKUP_LABEL = { schedule: `${GROUP}/backup-schedule`, trigger: `${GROUP}/backup-trigger` } as const;
export const SCHEDULED_AT_ANNOTATION = `${GROUP}/scheduled-at`;

export interface BackupPlanInput {
  readonly cluster: PostgresCluster;
  readonly records: readonly PostgresBackup[];
  /** The current primary's report of its repos and archive; undefined without a primary. */
  readonly primaryBackups: BackupsReport | undefined;
  readonly now: Date;
}

export interface BackupPlan {
  readonly create: PostgresBackup[];
  readonly fail: { name: string; message: string }[];
  readonly status: { pgbackrest?: Record<string, unknown>; archive?: Record<string, unknown> };
  /** WALArchiving, or undefined to remove it (no repo declared). */
  readonly condition: ConditionInput | undefined;
  /** When the next schedule is due. */
  readonly requeueAfterMs: number | undefined;
  /** Why a manual backup request was refused, once per request (an Event). */
  readonly refused?: string;
}

const shortHash = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 8);

/** `--type=diff` among manual options picks the backup's type; the rest pass through. */
export function splitTypeOption(options: readonly string[] = []): { type: 'full' | 'diff' | 'incr'; rest: string[] } {
  let type: 'full' | 'diff' | 'incr' = 'full';
  const rest: string[] = [];
  for (const option of options) {
    const match = /^--type=(full|diff|incr)$/.exec(option.trim());
    if (match) type = match[1] as typeof type;
    else rest.push(option);
  }
  return { type, rest };
}

function record(
  cluster: PostgresCluster,
  name: string,
  spec: PostgresBackup['spec'],
  labels: Record<string, string>,
  annotations: Record<string, string> = {},
): PostgresBackup {
  const clusterName = cluster.metadata?.name ?? '';
  return {
    apiVersion: API_VERSION,
    kind: BACKUP_KIND,
    metadata: {
      name,
      namespace: cluster.metadata?.namespace,
      labels: { ...clusterLabels(clusterName), ...labels },
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec,
  };
}

const finished = (r: PostgresBackup) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed';

function outcome(r: PostgresBackup | undefined) {
  if (!r) return { finished: false };
  return {
    name: r.metadata?.name ?? '',
    finished: finished(r),
    ...(r.status?.phase === 'Succeeded' ? { succeeded: 1 } : {}),
    ...(r.status?.phase === 'Failed' ? { failed: 1 } : {}),
    ...(r.status?.startedAt ? { startTime: r.status.startedAt } : {}),
    ...(r.status?.completedAt ? { completionTime: r.status.completedAt } : {}),
  };
}

export function planBackups(input: BackupPlanInput): BackupPlan {
  const { cluster, records, now } = input;
  const spec = cluster.spec.backups?.pgbackrest;
  const clusterName = cluster.metadata?.name ?? '';
  const create: PostgresBackup[] = [];
  const fail: { name: string; message: string }[] = [];
  const byName = new Map(records.map((r) => [r.metadata?.name ?? '', r]));

  for (const r of records) {
    const beat = Date.parse(r.status?.heartbeatTime ?? r.status?.startedAt ?? '');
    if (r.status?.phase === 'Running' && Number.isFinite(beat) && now.getTime() - beat > BACKUP_HEARTBEAT_STALE_MS) {
      fail.push({
        name: r.metadata?.name ?? '',
        message: `${r.status.instance ?? 'the instance'} stopped reporting while the backup ran (last heartbeat ${r.status.heartbeatTime ?? r.status.startedAt})`,
      });
    }
  }
  if (!spec) return { create, fail, status: {}, condition: undefined, requeueAfterMs: undefined };

  const previous = (cluster.status as { pgbackrest?: Record<string, unknown> } | undefined)?.pgbackrest ?? {};
  const pgbackrest: Record<string, unknown> = {};

  // Manual: each new annotation value makes one backup; the same value again makes none.
  const manualId = triggerValue(cluster.metadata?.annotations, 'backup');
  // Admission refuses these options; a spec admitted before the allow-list would make a
  // PostgresBackup the API refuses, so the request ends failed here, saying why.
  const refusedManual = refusedOption(spec.manual?.options, BACKUP_OPTIONS);
  let refused: string | undefined;
  if (manualId !== undefined && refusedManual) {
    pgbackrest.manualBackup = { id: manualId, finished: true, failed: 1 };
    if ((previous.manualBackup as { id?: string } | undefined)?.id !== manualId)
      refused = `manual backup ${manualId} refused: spec.backups.pgbackrest.manual.options: option ${refusedManual.option} is ${refusedManual.why}`;
  } else if (manualId !== undefined) {
    const name = `${clusterName}-manual-${shortHash(manualId)}`;
    const { type, rest } = splitTypeOption(spec.manual?.options);
    const repoName = spec.manual?.repoName ?? spec.repos[0]?.name ?? 'repo1';
    if (!byName.has(name) && !cluster.spec.shutdown) {
      create.push(
        record(
          cluster,
          name,
          { cluster: clusterName, repoName, type, ...(rest.length ? { options: rest } : {}), trigger: 'annotation' },
          { [BACKUP_LABEL.trigger]: 'annotation' },
        ),
      );
    }
    pgbackrest.manualBackup = { id: manualId, ...outcome(byName.get(name)), ...(byName.has(name) ? {} : { name }) };
  } else if (previous.manualBackup) {
    pgbackrest.manualBackup = previous.manualBackup;
  }

  // Schedules: the latest due time since the last one served (or since the cluster exists).
  let requeueAfterMs: number | undefined;
  const scheduled: Record<string, unknown>[] = [];
  const created = new Date(cluster.metadata?.creationTimestamp ?? now.toISOString());
  for (const schedule of declaredSchedules(spec.repos)) {
    const key = `${schedule.repo}-${schedule.key}`;
    const mine = records
      .filter((r) => r.metadata?.labels?.[BACKUP_LABEL.schedule] === key)
      .sort((a, b) =>
        (a.metadata?.annotations?.[SCHEDULED_AT_ANNOTATION] ?? '').localeCompare(
          b.metadata?.annotations?.[SCHEDULED_AT_ANNOTATION] ?? '',
        ),
      );
    const last = mine[mine.length - 1];
    const since = new Date(last?.metadata?.annotations?.[SCHEDULED_AT_ANNOTATION] ?? created.toISOString());
    const due = cluster.spec.shutdown ? undefined : latestDue(schedule.cron, since, now);
    let latest = last;
    if (due) {
      const type = SCHEDULE_TYPES[schedule.key as ScheduleKey];
      const stamp = due
        .toISOString()
        .replace(/[-:]/g, '')
        .replace(/\.\d+Z$/, 'z')
        .toLowerCase();
      latest = record(
        cluster,
        `${clusterName}-${schedule.repo}-${type}-${stamp}`,
        { cluster: clusterName, repoName: schedule.repo, type, trigger: 'schedule' },
        { [BACKUP_LABEL.schedule]: key, [BACKUP_LABEL.trigger]: 'schedule' },
        { [SCHEDULED_AT_ANNOTATION]: due.toISOString() },
      );
      create.push(latest);
    }
    if (latest) scheduled.push({ repo: schedule.repo, type: SCHEDULE_TYPES[schedule.key], ...outcome(latest) });
    const next = nextRun(schedule.cron, due ?? now);
    if (next) {
      const inMs = Math.max(1_000, next.getTime() - now.getTime());
      requeueAfterMs = requeueAfterMs === undefined ? inMs : Math.min(requeueAfterMs, inMs);
    }
  }
  if (scheduled.length > 0) pgbackrest.scheduledBackups = scheduled;

  const report = input.primaryBackups;
  pgbackrest.repos = spec.repos.map((repo) => ({
    name: repo.name,
    stanzaCreated: report?.stanza === 'created',
    ...(report?.stanzaHash ? { repoOptionsHash: report.stanzaHash } : {}),
  }));
  const archive = report?.archive
    ? {
        ...report.archive,
        ...(report.recoveryWindow?.first ? { firstRecoverabilityPoint: report.recoveryWindow.first } : {}),
        ...(report.recoveryWindow?.last ? { lastRecoverableTime: report.recoveryWindow.last } : {}),
      }
    : undefined;
  return {
    create,
    fail,
    status: { pgbackrest, ...(archive ? { archive } : {}) },
    condition: archivingCondition(report),
    requeueAfterMs,
    ...(refused ? { refused } : {}),
  };
}

function archivingCondition(report: BackupsReport | undefined): ConditionInput {
  const type = 'WALArchiving';
  if (!report) return { type, status: 'Unknown', reason: 'NoPrimary', message: 'no primary reports on the archive' };
  if (report.stanza.startsWith('unsupported'))
    return { type, status: 'False', reason: 'RepoUnsupported', message: report.stanza };
  if (report.stanza.startsWith('refused'))
    return { type, status: 'False', reason: 'RepoIsDataSource', message: report.stanza };
  if (report.stanza.startsWith('waiting'))
    return { type, status: 'False', reason: 'RepoHostNotReady', message: report.stanza };
  if (report.stanza !== 'created') return { type, status: 'False', reason: 'StanzaNotCreated', message: report.stanza };
  const a = report.archive;
  if (report.walDropped) {
    return {
      type,
      status: 'False',
      reason: 'WALDropped',
      message: `pgBackRest dropped WAL from ${report.walDropped.wal} on at ${report.walDropped.time} (archive-push-queue-max): point-in-time continuity is broken; take a new full backup`,
    };
  }
  if (archiveFailing(a)) {
    return {
      type,
      status: 'False',
      reason: 'ArchiveFailing',
      message: `archiving ${a?.lastFailedWal} failed at ${a?.lastFailedTime}${a?.lastFailureReason ? `: ${a.lastFailureReason}` : ''}; ${a?.pendingSegments ?? 0} segments waiting`,
    };
  }
  return {
    type,
    status: 'True',
    reason: 'Archiving',
    message: a?.lastArchivedWal
      ? `last archived ${a.lastArchivedWal} at ${a.lastArchivedTime}; ${a.pendingSegments ?? 0} segments waiting`
      : 'the stanza exists; no segment archived yet',
  };
}
