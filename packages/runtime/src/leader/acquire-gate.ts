/**
 * A candidate's own veto on taking a Lease it does not hold (`mayAcquire`), asked before each such
 * attempt; a refusal is logged when its reason changes, not at every poll.
 */
import type { LeaderElectionLogger, LeaderElectionOptions } from './leader-election-options.js';
import type { Lease } from './lease-record.js';

export class AcquireGate {
  readonly #ask: LeaderElectionOptions['mayAcquire'];
  readonly #log: LeaderElectionLogger;
  readonly #context: object;
  #said: string | undefined;

  constructor(ask: LeaderElectionOptions['mayAcquire'], log: LeaderElectionLogger, context: object) {
    this.#ask = ask;
    this.#log = log;
    this.#context = context;
  }

  /** Whether taking `lease` (undefined: creating it) is refused now. */
  async refuses(lease: Lease | undefined): Promise<boolean> {
    const reason = await this.#ask?.(lease);
    if (reason !== undefined && reason !== this.#said)
      this.#log.warn({ ...this.#context, reason }, 'not taking the lease');
    this.#said = reason;
    return reason !== undefined;
  }
}
