// A split-brain watcher: every ~50 ms it asks every instance directly (its own address, not a
// Service) whether it is out of recovery, and if so has it take a tiny write. Two instances that
// accept writes over overlapping time spans — or alternate A, B, A within a second, which no
// legitimate failover does — are two primaries at once.
import { setTimeout as sleep } from 'node:timers/promises';
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
    while (!this.#stopped) {
      try {
        if (!db) {
          db = await connectTo(address, this.#credentials, 1_000);
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
    const found = [];
    const seen = new Set();
    const sorted = [...this.accepted].sort((a, b) => a.start - b.start);
    for (let i = 0; i < sorted.length; i++) {
      const a = sorted[i];
      for (let j = i + 1; j < sorted.length; j++) {
        const b = sorted[j];
        if (b.start > a.end + 1_000) break;
        if (b.instance === a.instance) continue;
        const overlap = b.start <= a.end;
        let back = false;
        for (let k = j + 1; !overlap && !back && k < sorted.length && sorted[k].start <= a.end + 1_000; k++) {
          back = sorted[k].instance === a.instance;
        }
        if (!overlap && !back) continue;
        // One moment per second and pair, however many probes fell in it.
        const key = `${[a.instance, b.instance].sort().join('+')}@${Math.floor(b.start / 1_000)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        found.push({
          at: Math.round(b.start),
          instances: [a.instance, b.instance],
          kind: overlap ? 'overlapping writes' : 'alternating writes within 1 s',
        });
      }
    }
    return found;
  }
}
