/** The options of the LeaderElector (leader-election.ts). */
import type { KubeClient } from '@kanri/client';
import type { Lease } from './lease-record.js';

/** The subset of pino's logger the elector uses. */
export interface LeaderElectionLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface LeaderElectionOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  /** The Lease's name. */
  readonly name: string;
  /** Unique per candidate process, e.g. `${hostname}_${pid}_${random}`. */
  readonly identity: string;
  /** How long others wait, after last seeing the Lease change, before taking it. Whole seconds on the wire (rounded up). Default 15 s. */
  readonly leaseDurationMs?: number;
  /** A leader that has not renewed for this long steps down. Must be shorter than the lease duration. Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** The pause between renewals, and the base of the candidates' jittered poll. Default 2 s. */
  readonly retryPeriodMs?: number;
  /** Called on becoming leader; `signal` aborts when leadership is lost or released. */
  readonly onStartedLeading?: (signal: AbortSignal) => void | Promise<void>;
  /** Called after each leadership ends (never if this candidate did not lead). */
  readonly onStoppedLeading?: () => void;
  /** Called when a different holder is observed (this candidate included). */
  readonly onNewLeader?: (identity: string) => void;
  /**
   * A Lease naming this identity that the caller has just written itself, with a resourceVersion
   * precondition (a takeover decided outside the elector, say by ranking candidates), and the
   * `performance.now()` at which that write was sent. The first leadership starts from it without
   * another round trip; its renew deadline counts from `sentAtMs`, as if the elector had written it.
   */
  readonly adopt?: { readonly lease: Omit<Lease, 'apiVersion' | 'kind'>; readonly sentAtMs: number };
  /**
   * Asked before each attempt to take a Lease this candidate does not hold (free, expired, or
   * missing): a reason refuses the attempt (logged when it changes), undefined lets it go ahead.
   * For candidates that must not lead from some states, e.g. a database whose history is behind
   * the one the last leader recorded on the Lease. Renewals are never asked.
   */
  readonly mayAcquire?: (lease: Lease | undefined) => string | undefined | Promise<string | undefined>;
  /**
   * Labels and owner references the Lease is created with (when this candidate creates it), e.g. an
   * owner so that the Lease is garbage-collected with the object it elects for. Resolved at creation.
   */
  readonly leaseMetadata?: () => Pick<NonNullable<Lease['metadata']>, 'labels' | 'ownerReferences'>;
  /**
   * Told, on each acquire, renewal, or vouched extension, the `performance.now()` until which this
   * leader may act: the send time of its last successful write (or of the vouching call) plus the
   * renew deadline. A watchdog outside the leader's event loop fed with it stops work that outlives
   * it, which a stalled process cannot do for itself.
   */
  readonly onLeadingUntil?: (deadlineMs: number) => void;
  /**
   * Asked when renewals have failed for want of an answer (not because another holder was seen) and
   * the renew deadline is less than a retry period away. Resolving true keeps leading for another
   * renew deadline, counted from the moment of the call; false, a throw, or `signal` aborting (at the
   * deadline) steps down as usual. For failsafe modes in which every peer vouches for the leader
   * while the API server cannot be reached; the peers must then refuse to take the Lease for a lease
   * duration after vouching. Renewals go on meanwhile, and the first that succeeds ends the extension.
   */
  readonly keepLeadingWithoutApi?: (signal: AbortSignal) => Promise<boolean>;
  readonly logger?: LeaderElectionLogger;
}
