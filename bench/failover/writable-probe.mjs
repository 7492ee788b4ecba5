// When the database became writable again after a kill, measured the same way for every system
// and apart from any client's search for the new primary: one connection straight to each
// surviving member, each trying a one-row INSERT every `everyMs`. A replica refuses it at once
// (read-only transaction); the first INSERT a member acknowledges after the kill is the time the
// database took writes again (in synchronous mode that includes waiting for a standby, as for
// any client).
import { setTimeout as sleep } from 'node:timers/promises';
import { connectTo, queryOnce } from './writer.mjs';

export const PROBE_TABLE = 'kanri_bench_writable';

export async function createProbeTable(address, credentials) {
  await queryOnce(
    address,
    credentials,
    `create table if not exists ${PROBE_TABLE} (trial int not null, at timestamptz not null default now())`,
  );
}

export class WritableProbe {
  /** The first acknowledged INSERT: { at (performance.now()), address }, or undefined. */
  first;
  /** INSERTs tried, for the report. */
  attempts = 0;
  /** With `continuous`: every acknowledged INSERT, { at, address }, in time order. */
  acks = [];
  #stopped = false;
  #loops;

  /**
   * Starts probing `addresses` (host:port) for `trial`; call before the kill, so that the
   * connections are open when it falls. `continuous` keeps every member probing after the first
   * acknowledgement and records each one (`acks`): for failures after which the old primary may
   * take writes again, when the question is how long the database took none.
   */
  constructor(addresses, credentials, trial, { everyMs = 10, continuous = false } = {}) {
    this.#loops = addresses.map((address) => this.#probe(address, credentials, trial, everyMs, continuous));
  }

  /** The first INSERT acknowledged after `since` by a member other than `notAddress` (continuous). */
  firstAckAfter(since, notAddress) {
    return this.acks.find((a) => a.at > since && a.address !== notAddress);
  }

  /** The first INSERT acknowledged after `since`, or undefined. */
  writableAfter(since) {
    return this.first && this.first.at > since ? this.first : undefined;
  }

  async stop() {
    this.#stopped = true;
    await Promise.all(this.#loops);
  }

  async #probe(address, credentials, trial, everyMs, continuous) {
    let client;
    while (!this.#stopped && (continuous || !this.first)) {
      try {
        client ??= await connectTo(address, credentials, 1_000);
        this.attempts++;
        await client.query(`insert into ${PROBE_TABLE} (trial) values ($1)`, [trial]);
        const ack = { at: performance.now(), address };
        this.first ??= ack;
        if (continuous) this.acks.push(ack);
      } catch (error) {
        // 25006: read_only_sql_transaction, a replica; anything else drops the connection.
        if (error?.code !== '25006') {
          const broken = client;
          client = undefined;
          if (broken) await Promise.race([broken.end().catch(() => {}), sleep(200)]);
        }
      }
      await sleep(everyMs);
    }
    if (client) await Promise.race([client.end().catch(() => {}), sleep(200)]);
  }
}
