/**
 * What one leadership keeps between its loops (the primary's tasks, the synchronous-standby loop,
 * a switchover and the step-down watch): made when the elector's campaign starts, dropped when it
 * ends, so nothing of a past leadership leaks into the next. Its fields change only through the
 * named transitions below, as `AgentStateStore`'s do.
 */
import type { PendingSync } from '../plan/leadership/sync-plan.js';

export class PrimarySession {
  readonly #election = new AbortController();
  #takenBy: string | undefined;
  #steppedDown: string | undefined;
  #switching = false;
  #syncConfigured: readonly string[] = [];
  #syncPending: PendingSync | undefined;
  #usersDue = true;

  /** Aborts when the campaign ends: another instance holds the Lease, or this one gave it up. */
  get ended(): AbortSignal {
    return this.#election.signal;
  }

  /** Who holds the Lease now, once another instance was seen holding it or it was handed over. */
  get takenBy(): string | undefined {
    return this.#takenBy;
  }

  /** Why this primary gave the Lease up (roles/step-down.ts), once it did. */
  get steppedDown(): string | undefined {
    return this.#steppedDown;
  }

  /** A switchover is stopping writes: the other loops stand still, and fencing is expected. */
  get switching(): boolean {
    return this.#switching;
  }

  /** synchronous_standby_names as configured in postgres now. */
  get syncConfigured(): readonly string[] {
    return this.#syncConfigured;
  }

  /** A change of the synchronous standbys on its way (plan/leadership/sync-plan.ts). */
  get syncPending(): PendingSync | undefined {
    return this.#syncPending;
  }

  /** Users and databases need a pass (the spec changed, or the last pass failed). */
  get usersDue(): boolean {
    return this.#usersDue;
  }

  /** `holder` holds the Lease (it was seen there, or handed to it): the campaign ends. */
  lostTo(holder: string): void {
    this.#takenBy = holder;
    this.#election.abort();
  }

  /** This primary gives the Lease up because of `why` (a full data volume): the campaign ends. */
  stepDown(why: string): void {
    this.#steppedDown = why;
    this.#election.abort();
  }

  /** A switchover starts stopping writes. */
  beginSwitching(): void {
    this.#switching = true;
  }

  /** No switchover stops writes (any more): it failed, or a new leadership starts. */
  endSwitching(): void {
    this.#switching = false;
  }

  /** A leadership starts with `configured` as its synchronous standbys, nothing pending. */
  startSync(configured: readonly string[]): void {
    this.#syncConfigured = [...configured];
    this.#syncPending = undefined;
  }

  /** postgres waited at `lsn` for every configured standby. */
  captureSync(lsn: string): void {
    this.#syncPending = { members: this.#syncConfigured, lsn };
  }

  /** postgres now waits for `members`; the set is pending until published. */
  configureSync(members: readonly string[]): void {
    this.#syncConfigured = [...members];
    this.#syncPending = { members: [...members], lsn: undefined };
  }

  /** `members` are published on the Lease: once that is the configured set, nothing is pending. */
  publishedSync(members: readonly string[]): void {
    if (members.length === this.#syncConfigured.length) this.#syncPending = undefined;
  }

  /** The spec may have changed: users and databases need a pass. */
  usersChanged(): void {
    this.#usersDue = true;
  }

  /** A pass over users and databases starts; a failed one calls {@link usersChanged} again. */
  usersPassStarted(): void {
    this.#usersDue = false;
  }
}
