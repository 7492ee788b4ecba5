/**
 * Reading `pgbackrest info --output=json`: the backups a repo holds and what a finished backup
 * recorded (label, size, WAL and LSN range), and the oldest point it can restore to. Pure.
 */
import { z } from 'zod';
import { FULL_BACKUPS_PER_REPO, type FullBackupReport } from '../../contract/index.js';

const backupSchema = z
  .object({
    label: z.string(),
    type: z.string(),
    timestamp: z.object({ start: z.number(), stop: z.number() }),
    info: z
      .object({
        size: z.number().optional(),
        repository: z.object({ size: z.number().optional(), delta: z.number().optional() }).loose().optional(),
      })
      .loose()
      .optional(),
    archive: z.object({ start: z.string().nullish(), stop: z.string().nullish() }).loose().optional(),
    lsn: z.object({ start: z.string().nullish(), stop: z.string().nullish() }).loose().optional(),
    error: z.boolean().optional(),
  })
  .loose();

const infoSchema = z.array(z.object({ name: z.string(), backup: z.array(backupSchema).default([]) }).loose());

export type BackupInfo = z.infer<typeof backupSchema>;

/** The stanza's backups, oldest first; [] when the output says none (or is not pgBackRest's). */
export function parseBackups(json: string, stanza: string): BackupInfo[] {
  let parsed: unknown;
  try {
    // Warnings pgBackRest prints before its configuration is read still reach stdout.
    parsed = JSON.parse(json.slice(Math.max(0, json.indexOf('['))));
  } catch {
    return [];
  }
  const result = infoSchema.safeParse(parsed);
  if (!result.success) return [];
  const backups = result.data.find((s) => s.name === stanza)?.backup ?? [];
  return [...backups].sort((a, b) => a.timestamp.stop - b.timestamp.stop);
}

/** `96.2 MiB`. */
export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** What a PostgresBackup's status records of the backup pgBackRest made. */
export function backupStatusFields(backup: BackupInfo): Record<string, string | number> {
  const size = backup.info?.size;
  const fields: Record<string, string | number> = {
    label: backup.label,
    duration: `${backup.timestamp.stop - backup.timestamp.start}s`,
  };
  if (size !== undefined) {
    fields.sizeBytes = size;
    fields.size = humanSize(size);
  }
  if (backup.info?.repository?.size !== undefined) fields.repoSizeBytes = backup.info.repository.size;
  if (backup.archive?.start) fields.walStart = backup.archive.start;
  if (backup.archive?.stop) fields.walStop = backup.archive.stop;
  if (backup.lsn?.start) fields.lsnStart = backup.lsn.start;
  if (backup.lsn?.stop) fields.lsnStop = backup.lsn.stop;
  return fields;
}

/** The oldest time the repo can restore to: when its oldest good backup ended. */
export function firstRecoverabilityPoint(backups: readonly BackupInfo[]): string | undefined {
  const first = backups.find((b) => !b.error);
  return first ? new Date(first.timestamp.stop * 1000).toISOString() : undefined;
}

/**
 * The latest full backups of `repo` that pgBackRest lists without error, newest last, as the
 * primary reports them (contract/instance-report.ts, `backups.fullBackups`).
 *
 * @example
 * ```ts
 * latestFullBackups('repo1', parseBackups(stdout, 'db')); // [{ repo: 'repo1', label: '20260102-030405F', stoppedAt: '2026-01-02T03:05:00.000Z' }]
 * ```
 */
export function latestFullBackups(repo: string, backups: readonly BackupInfo[]): FullBackupReport[] {
  return backups
    .filter((b) => b.type === 'full' && !b.error)
    .slice(-FULL_BACKUPS_PER_REPO)
    .map((b) => ({ repo, label: b.label, stoppedAt: new Date(b.timestamp.stop * 1000).toISOString() }));
}
