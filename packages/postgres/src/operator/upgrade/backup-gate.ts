/**
 * The major upgrade's backup gate: is there a full backup of the last 24 h to go back to? A
 * PostgresBackup's status alone cannot say so, since whoever may write that status could forge
 * it; the gate opens only where the status and pgBackRest's own `info` (as the primary reports
 * it, contract/instance-report.ts `backups.fullBackups`) agree: the same repo and label, and
 * pgBackRest's end time, not the status's, within the window. Pure.
 */
import type { PostgresBackup } from '../../api/postgres-backup.js';
import type { FullBackupReport } from '../../contract/index.js';

export interface BackupGateInput {
  /** This cluster's PostgresBackups. */
  readonly records: readonly PostgresBackup[];
  /** The primary's report of pgBackRest's info; undefined when it has reported none (yet). */
  readonly reported: readonly FullBackupReport[] | undefined;
  readonly now: Date;
  readonly withinMs: number;
}

export type BackupGate =
  | { readonly open: true; readonly backup: string; readonly label: string }
  | { readonly open: false; readonly why: string };

/**
 * @example
 * ```ts
 * backupGate({ records: [{ metadata: { name: 'b' }, spec: { cluster: 'db', repoName: 'repo1', type: 'full', trigger: 'manual' }, status: { phase: 'Succeeded', label: 'L' } }],
 *   reported: [{ repo: 'repo1', label: 'L', stoppedAt: new Date().toISOString() }], now: new Date(), withinMs: 86_400_000 });
 * // { open: true, backup: 'b', label: 'L' }
 * ```
 */
export function backupGate(input: BackupGateInput): BackupGate {
  const window = `${input.withinMs / 3_600_000} h`;
  const none = { open: false, why: `no full backup succeeded in the last ${window}` } as const;
  // Labels are timestamps: sorted, the newest claim comes first.
  const claims = input.records
    .filter((r) => r.spec.type === 'full' && r.status?.phase === 'Succeeded' && r.status.label)
    .sort((a, b) => (b.status?.label ?? '').localeCompare(a.status?.label ?? ''));
  if (claims.length === 0) return none;
  if (!input.reported)
    return {
      open: false,
      why: `no full backup of the last ${window} is confirmed yet: the primary has not reported pgBackRest's info`,
    };
  const unconfirmed: string[] = [];
  for (const claim of claims) {
    const label = claim.status?.label ?? '';
    const listed = input.reported.find((b) => b.repo === claim.spec.repoName && b.label === label);
    if (!listed) {
      unconfirmed.push(
        `PostgresBackup ${claim.metadata?.name} says full backup ${label} in ${claim.spec.repoName}, which pgBackRest's info on the primary does not list`,
      );
      continue;
    }
    // pgBackRest's own end time: a status's completedAt is as forgeable as its phase.
    const age = input.now.getTime() - Date.parse(listed.stoppedAt);
    if (age >= 0 && age < input.withinMs) return { open: true, backup: claim.metadata?.name ?? '', label };
  }
  if (unconfirmed.length === 0) return none;
  return {
    open: false,
    why: `no full backup of the last ${window} is confirmed by pgBackRest (${unconfirmed.slice(0, 3).join('; ')})`,
  };
}
