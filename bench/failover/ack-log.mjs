// What both failover writers (the Node one for the chaos scripts, the libpq one for
// bench:failover) record and answer: acknowledged commits in time order, and failed attempts.

export class AckLog {
  /** Acknowledged commits: { trial, seq, at (performance.now() when acknowledged), address }. */
  acks = [];
  /** Failed attempts (connect or insert), for the report. */
  failures = 0;

  /** The first ack after `since` from an address other than `notAddress`, or undefined. */
  firstAckAfter(since, notAddress) {
    // Acks are in time order: only the tail after `since` is looked at.
    let found;
    for (let i = this.acks.length - 1; i >= 0 && this.acks[i].at > since; i--) {
      if (this.acks[i].address !== notAddress) found = this.acks[i];
    }
    return found;
  }

  acksOf(trial) {
    return this.acks.filter((a) => a.trial === trial);
  }
}
