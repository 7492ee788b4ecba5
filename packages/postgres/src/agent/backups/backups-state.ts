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

/** One archive command's push, and when its outcome arrived. */
export interface ArchiveEvent {
  readonly wal: string;
  readonly time: string;
}

export interface ArchivingTarget {
  readonly bin: string;
  readonly args: readonly string[];
}

/**
 * One owner of these facts: every change goes through a named transition, and everyone else reads
 * them through getters.
 *
 * @example
 * ```ts
 * const backups = new BackupsState();
 * backups.optionsWritten(hash, pgbackrest.archiveTarget());
 * backups.stanzaCreated(hash);
 * backups.stanzaReady; // true
 * ```
 */
export class BackupsState {
  #target: ArchivingTarget | undefined;
  #writtenHash: string | undefined;
  #stanzaHash: string | undefined;
  #stanza: string | undefined;
  #lastFailure: (ArchiveEvent & { readonly reason: string }) | undefined;
  #lastSuccess: ArchiveEvent | undefined;
  #recoveryFirst: string | undefined;
  #fullBackups: readonly FullBackupReport[] | undefined;
  #walDropped: (ArchiveEvent & { readonly reason: string }) | undefined;
  #restore: RestoreReport | undefined;
  #stanzaUpgradeDue = false;

  /** What the archive command runs, while archiving is allowed to. */
  get target(): ArchivingTarget | undefined {
    return this.#target;
  }

  /** The repo options hash of the file written now. */
  get writtenHash(): string | undefined {
    return this.#writtenHash;
  }

  /** The repo options hash the stanza was last created (or tried) for. */
  get stanzaHash(): string | undefined {
    return this.#stanzaHash;
  }

  /** `created`, `failed: …`, `unsupported: …`, `waiting: …`, `refused: …`; undefined without repos. */
  get stanza(): string | undefined {
    return this.#stanza;
  }

  get lastFailure(): (ArchiveEvent & { readonly reason: string }) | undefined {
    return this.#lastFailure;
  }

  get lastSuccess(): ArchiveEvent | undefined {
    return this.#lastSuccess;
  }

  /** The start of the recovery window: the first repo's oldest backup. */
  get recoveryFirst(): string | undefined {
    return this.#recoveryFirst;
  }

  /** The latest full backups of each repo, as pgBackRest's `info` last listed them. */
  get fullBackups(): readonly FullBackupReport[] | undefined {
    return this.#fullBackups;
  }

  /** WAL pgBackRest dropped (its queue was full): set until a full backup starts a new history. */
  get walDropped(): (ArchiveEvent & { readonly reason: string }) | undefined {
    return this.#walDropped;
  }

  /** The restore this data came from, as its marker says. */
  get restore(): RestoreReport | undefined {
    return this.#restore;
  }

  /**
   * This data came from a major upgrade and pgBackRest's stanza still describes the old cluster:
   * the stanza is brought over with `stanza-upgrade` (never on other data: that would take over a
   * repo whose stanza is another cluster's).
   */
  get stanzaUpgradeDue(): boolean {
    return this.#stanzaUpgradeDue;
  }

  /** Archiving is refused: no usable repo (`why` undefined), or `why` (reported as the stanza). */
  archivingOff(why: string | undefined): void {
    this.#target = undefined;
    this.#stanza = why;
  }

  /** The repo options with `hash` are written: the archive command runs `target`. */
  optionsWritten(hash: string, target: ArchivingTarget | undefined): void {
    this.#writtenHash = hash;
    this.#target = target;
  }

  /** The stanza exists for the options with `hash` (created, or upgraded after a major upgrade). */
  stanzaCreated(hash: string): void {
    this.#stanzaHash = hash;
    this.#stanza = 'created';
    this.#stanzaUpgradeDue = false;
  }

  /** Creating the stanza for the options with `hash` failed, with pgBackRest's `reason`. */
  stanzaFailed(hash: string, reason: string): void {
    this.#stanzaHash = hash;
    this.#stanza = reason;
  }

  /** This data came from a major upgrade; its stanza is upgraded already, or not yet. */
  upgradedData(stanzaUpgraded: boolean): void {
    this.#stanzaUpgradeDue = !stanzaUpgraded;
  }

  /** The restore this data came from. */
  restored(report: RestoreReport): void {
    this.#restore = report;
  }

  /** pgBackRest's `info`: the recovery window's start, from the first repo. */
  seeRecoveryWindow(first: string | undefined): void {
    this.#recoveryFirst = first;
  }

  /** pgBackRest's `info`: the latest full backups of every repo. */
  seeFullBackups(backups: readonly FullBackupReport[]): void {
    this.#fullBackups = backups;
  }

  /** A backup succeeded: a full one started after WAL was dropped begins a history that needs none of it. */
  seeBackupSucceeded(type: string, startedAt: Date): void {
    const dropped = this.#walDropped;
    if (type === 'full' && dropped && Date.parse(dropped.time) < startedAt.getTime()) this.#walDropped = undefined;
  }

  /** The stanza is created for the options written now. */
  get stanzaReady(): boolean {
    return this.#stanza === 'created' && this.#stanzaHash !== undefined && this.#stanzaHash === this.#writtenHash;
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

  /** The archive command's outcome for one segment (the control socket, backups/control-server.ts). */
  seeArchiveOutcome(outcome: ArchiveOutcome, now = new Date()): void {
    const time = now.toISOString();
    if (!outcome.ok) {
      this.#lastFailure = { wal: outcome.wal, time, reason: outcome.reason ?? 'unknown' };
      return;
    }
    this.#lastSuccess = { wal: outcome.wal, time };
    // pgBackRest reports a drop as a success; the first one marks where recovery stops, until a full backup.
    if (outcome.dropped && !this.#walDropped) this.#walDropped = { wal: outcome.wal, time, reason: outcome.dropped };
  }

  /** The report's `backups` (archive statistics are added by the reporter from pg_stat_archiver). */
  report(): BackupsReport | undefined {
    if (this.stanza === undefined) return undefined;
    return {
      stanza: this.stanza,
      ...(this.stanzaHash ? { stanzaHash: this.stanzaHash } : {}),
      ...(this.recoveryFirst ? { recoveryWindow: { first: this.recoveryFirst } } : {}),
      ...(this.walDropped ? { walDropped: { wal: this.walDropped.wal, time: this.walDropped.time } } : {}),
      ...(this.fullBackups ? { fullBackups: [...this.fullBackups] } : {}),
    };
  }
}
