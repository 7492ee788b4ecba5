// A split-brain watcher: every ~50 ms it asks every instance directly (its own address, not a
// Service) whether it is out of recovery, and if so has it take a tiny write. Two instances that
// accept writes over overlapping time spans — or alternate A, B, A within a second, which no
// legitimate failover does — are two primaries at once. It also records when each probe began, so
// that a span in which it could not look is reported as blind rather than as "no split brain"
// (split-brain-check.mjs).
import { setTimeout as sleep } from 'node:timers/promises';
import { blindSpans, violations } from './split-brain-check.mjs';
import { connectTo, queryOnce } from './writer.mjs';

export const BRAIN_TABLE = 'kanri_chaos_brain';

/** The table the watcher writes to, created on the primary at `address`. */
export async function createBrainTable(address, credentials) {
  await queryOnce(
    address,
    credentials,
    `create table if not exists ${BRAIN_TABLE} (instance text not null, at timestamptz not null default now())`,
  );
}

export class SplitBrainWatcher {
  /** Every accepted write: { instance, start, end } (performance.now()). */
  accepted = [];
  probes = 0;
  /** Per instance (`name@address`): when the watcher learnt of it, and when each attempt began. */
  #attempts = new Map();
  #stoppedAt;
  #loops = new Map();
  #stopped = false;
  #credentials;
  #instances;
  #refresh;

  /**
   * @param instances async () => [{ name, address }], asked again every few seconds (new Pods, IPs)
   */
  constructor(instances, credentials) {
    this.#instances = instances;
    this.#credentials = credentials;
  }

  start() {
    this.#refresh = this.#refreshLoop();
  }

  async stop() {
    this.#stoppedAt ??= performance.now();
    this.#stopped = true;
    await this.#refresh;
    await Promise.all(this.#loops.values());
  }

  async #refreshLoop() {
    while (!this.#stopped) {
      try {
        for (const { name, address } of await this.#instances()) {
          const key = `${name}@${address}`;
          if (!this.#loops.has(key)) this.#loops.set(key, this.#probe(name, address));
        }
      } catch {
        // The API is being stalled by the chaos: keep probing the instances already known.
      }
      for (let i = 0; i < 40 && !this.#stopped; i++) await sleep(50);
    }
  }

  async #probe(name, address) {
    let db;
    const times = [];
    this.#attempts.set(`${name}@${address}`, { since: performance.now(), times });
    while (!this.#stopped) {
      times.push(performance.now());
      try {
        if (!db) {
          // Short timeouts bound one attempt (connect, set, select, insert) to ~7 s, under the
          // blind threshold of 10 s, whatever the instance does.
          db = await connectTo(address, this.#credentials, 1_000, 2_000);
          // A primary waiting for a synchronous standby still counts as accepting the write.
          await db.query('set synchronous_commit = local');
        }
        const start = performance.now();
        this.probes++;
        const [row] = (await db.query('select pg_is_in_recovery() as r')).rows;
        if (row?.r === false) {
          await db.query(`insert into ${BRAIN_TABLE} (instance) values ($1)`, [name]);
          this.accepted.push({ instance: name, start, end: performance.now() });
        }
      } catch {
        const old = db;
        db = undefined;
        if (old) await Promise.race([old.end().catch(() => {}), sleep(200)]);
      }
      await sleep(50);
    }
    if (db) await Promise.race([db.end().catch(() => {}), sleep(200)]);
  }

  /** Distinct moments at which two instances accepted writes (see the file comment). */
  violations() {
    return violations(this.accepted);
  }

  /**
   * Spans of more than `ms` within `[from, to]` (performance.now(); `to` defaults to now, or to
   * `stop()`) in which the watcher began no probe of an instance it knew: it could not have seen
   * a split brain there. Each loop begins a probe at least every ~7 s (1 s to connect, 2 s for each
   * of its statements), whatever the instance does.
   */
  blindSpans(from, to = this.#stoppedAt ?? performance.now(), ms = undefined) {
    return blindSpans(this.#attempts, { from, to, ...(ms === undefined ? {} : { ms }) });
  }
}
