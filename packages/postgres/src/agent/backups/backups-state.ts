/**
 * What the agent knows of its repos and archive beyond what postgres says: the stanza, the archive
 * command's last outcomes (with pgBackRest's reason), the recovery window and a restore's result.
 * One owner; the status reporter reads snapshots, the control socket and the backup runner write.
 */

import {
  archiveFailing,
  archiveStalled,
  type BackupsReport,
  type FullBackupReport,
  type RestoreReport,
} from '../../contract/index.js';
import type { ArchiveOutcome } from '../pgbackrest-archive-push.js';

export interface ArchivingTarget {
  readonly bin: string;
  readonly args: readonly string[];
}

export class BackupsState {
  target: ArchivingTarget | undefined;
  /** The repo options hash of the file written now, and the one the stanza was created for. */
  writtenHash: string | undefined;
  stanzaHash: string | undefined;
  /** `created`, `failed: …`, `unsupported: …`; undefined without repos. */
  stanza: string | undefined;
  lastFailure: { wal: string; time: string; reason: string } | undefined;
  lastSuccess: { wal: string; time: string } | undefined;
  recoveryFirst: string | undefined;
  /** The latest full backups of each repo, as pgBackRest's `info` last listed them. */
  fullBackups: FullBackupReport[] | undefined;
  /** WAL pgBackRest dropped (its queue was full): set until a full backup starts a new history. */
  walDropped: { wal: string; time: string; reason: string } | undefined;
  restore: RestoreReport | undefined;
  /**
   * This data came from a major upgrade and pgBackRest's stanza still describes the old cluster:
   * the stanza is brought over with `stanza-upgrade` (never on other data: that would take over a
   * repo whose stanza is another cluster's).
   */
  stanzaUpgradeDue = false;

  /** The stanza is created for the options written now. */
  get stanzaReady(): boolean {
    return this.stanza === 'created' && this.stanzaHash !== undefined && this.stanzaHash === this.writtenHash;
  }

  /** The archive command's last push failed (postgres retries that segment until it works). */
  get archiveFailing(): boolean {
    return archiveFailing({ lastArchivedTime: this.lastSuccess?.time, lastFailedTime: this.lastFailure?.time });
  }

  /**
   * pgBackRest's reason when every push has failed for longer than `ms` (counted from `since` at
   * the earliest); undefined while archiving works or has not failed that long.
   */
  archiveStalled(since: Date, ms: number, now = new Date()): string | undefined {
    return archiveStalled(
      {
        lastArchivedTime: this.lastSuccess?.time,
        lastFailedTime: this.lastFailure?.time,
        lastFailureReason: this.lastFailure?.reason,
      },
      since,
      ms,
      now,
    );
  }

  seeArchiveOutcome(outcome: ArchiveOutcome, now = new Date()): void {
    const time = now.toISOString();
    if (!outcome.ok) {
      this.lastFailure = { wal: outcome.wal, time, reason: outcome.reason ?? 'unknown' };
      return;
    }
    this.lastSuccess = { wal: outcome.wal, time };
    // pgBackRest reports a drop as a success; the first one marks where recovery stops, until a full backup.
    if (outcome.dropped && !this.walDropped) this.walDropped = { wal: outcome.wal, time, reason: outcome.dropped };
  }

  /** The report's `backups` (archive statistics are added by the reporter from pg_stat_archiver). */
  report(): BackupsReport | undefined {
    if (this.stanza === undefined) return undefined;
    return {
      stanza: this.stanza,
      ...(this.stanzaHash ? { stanzaHash: this.stanzaHash } : {}),
      ...(this.recoveryFirst ? { recoveryWindow: { first: this.recoveryFirst } } : {}),
      ...(this.walDropped ? { walDropped: { wal: this.walDropped.wal, time: this.walDropped.time } } : {}),
      ...(this.fullBackups ? { fullBackups: this.fullBackups } : {}),
    };
  }
}
