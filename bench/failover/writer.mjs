// The client side of a failover: one connection, one INSERT per transaction (autocommit), each
// with the next sequence number, through whatever the system says is the primary. Every commit
// the server acknowledged is recorded with its time and the address that acknowledged it, so the
// driver can tell when writes resumed on a new primary and which acknowledged commits it lacks.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { AckLog } from './ack-log.mjs';

export const TABLE = 'kanri_bench_writes';

/** Opens a pg connection to `address` (`host:port`); errors after `timeoutMs`, each query after `queryTimeoutMs`. */
export async function connectTo(address, { user, password, database }, timeoutMs = 2_000, queryTimeoutMs = 5_000) {
  const [host, port] = address.split(':');
  const client = new pg.Client({
    host,
    port: Number(port),
    user,
    password,
    database,
    connectionTimeoutMillis: timeoutMs,
    // A primary that dies mid-query resets the socket at once on loopback; this bounds the rest
    // (a synchronous commit waiting for a standby that is gone).
    query_timeout: queryTimeoutMs,
  });
  // A connection that breaks between queries emits 'error'; the next query reports it too.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Runs `sql` once on `address` and closes the connection. */
export async function queryOnce(address, credentials, sql, params = []) {
  const client = await connectTo(address, credentials);
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await Promise.race([client.end().catch(() => {}), sleep(1_000)]);
  }
}

export async function createTable(address, credentials) {
  await queryOnce(
    address,
    credentials,
    `create table if not exists ${TABLE} (trial int not null, seq bigint not null, primary key (trial, seq))`,
  );
}

export class Writer extends AckLog {
  trial = 0;
  #seq = 0;
  #client;
  #address;
  #server;
  #paused = true;
  #stopped = false;
  #loop;
  #idle;
  #candidates;
  #credentials;

  /**
   * @param candidates async () => addresses (`host:port`) that may be the primary now, best first
   * @param credentials { user, password, database }
   */
  constructor(candidates, credentials) {
    super();
    this.#candidates = candidates;
    this.#credentials = credentials;
  }

  /** Starts (or resumes) writing rows tagged with `trial`. */
  resume(trial) {
    this.trial = trial;
    this.#paused = false;
    this.#loop ??= this.#run();
  }

  /** Stops writing after the transaction in flight; resolves once it has settled. */
  async pause() {
    this.#paused = true;
    while (this.#idle === false) await sleep(5);
  }

  async stop() {
    this.#stopped = true;
    this.#paused = true;
    await this.#loop;
    await this.#disconnect();
  }

  /**
   * Each failed attempt with what failed: a refused connection costs a retry, a connection to an
   * address nobody answers costs the whole connect timeout, and a gap's length is one or the other.
   */
  errors = [];

  #failed(step, error) {
    this.failures++;
    this.errors.push({ at: performance.now(), step, reason: error?.code ?? String(error?.message).slice(0, 60) });
  }

  async #disconnect() {
    const client = this.#client;
    this.#client = undefined;
    this.#address = undefined;
    this.#server = undefined;
    // end() on a connection the server reset may never settle: do not wait for it for long.
    if (client) await Promise.race([client.end().catch(() => {}), sleep(200)]);
  }

  async #connect() {
    let addresses = [];
    try {
      addresses = await this.#candidates();
    } catch {
      // The locator is down (API server, REST API): try again.
    }
    for (const address of addresses) {
      try {
        this.#client = await connectTo(address, this.#credentials);
        this.#address = address;
        // Behind a Service the address is the same for every member: the server's own address
        // names which one acknowledged, so a lost commit can be traced to the member that had it.
        this.#server = (await this.#client.query('select host(inet_server_addr()) as server')).rows[0]?.server;
        return true;
      } catch (error) {
        this.#failed('connect', error);
        await this.#disconnect();
      }
    }
    return false;
  }

  async #run() {
    while (!this.#stopped) {
      if (this.#paused) {
        this.#idle = true;
        await sleep(10);
        continue;
      }
      this.#idle = false;
      if (!this.#client && !(await this.#connect())) {
        await sleep(50);
        continue;
      }
      const seq = ++this.#seq;
      const trial = this.trial;
      try {
        await this.#client.query(`insert into ${TABLE} (trial, seq) values ($1, $2)`, [trial, seq]);
        this.acks.push({ trial, seq, at: performance.now(), address: this.#address, server: this.#server });
      } catch (error) {
        // Not acknowledged: its fate is unknown, so it is never counted as lost.
        this.#failed('insert', error);
        await this.#disconnect();
        await sleep(20);
      }
    }
    this.#idle = true;
  }
}

/**
 * Acknowledged commits of `trial` missing on the primary at `address`: the commits a failover
 * lost.
 */
export async function lostCommits(writer, trial, address, credentials) {
  return (await checkCommits(writer, trial, address, credentials)).lost.map((a) => a.seq);
}

/**
 * `lostCommits` with what a reader needs to trust it: the acknowledgements missing (each with the
 * server that gave it), and which server answered the check and whether it was in recovery (a
 * check answered by a standby would count its lag as loss).
 */
export async function checkCommits(writer, trial, address, credentials) {
  const client = await connectTo(address, credentials);
  try {
    const [{ server, recovery }] = (
      await client.query('select host(inet_server_addr()) as server, pg_is_in_recovery() as recovery')
    ).rows;
    const rows = (await client.query(`select seq from ${TABLE} where trial = $1`, [trial])).rows;
    const present = new Set(rows.map((r) => Number(r.seq)));
    return { lost: writer.acksOf(trial).filter((a) => !present.has(a.seq)), server, inRecovery: recovery };
  } finally {
    await Promise.race([client.end().catch(() => {}), sleep(1_000)]);
  }
}
