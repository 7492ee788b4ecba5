/**
 * Failover tests' world: the end-to-end harness with 3 nodes (process nodes, optionally each behind
 * its own API proxy, or real nodes), clusters with one instance per node, a client that writes a
 * sequence through `<name>-primary` and records every acknowledged commit, and a watcher that tries
 * a write on every instance directly every 50 ms to catch two primaries at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '@kanri/client';
import { type ControlPlane, realNodesUnsupportedReason, ServiceEndpointReader, waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import pg from 'pg';
import {
  ANNOTATION,
  type InstanceReport,
  LABEL,
  names,
  type PostgresCluster,
  PostgresClusterResource,
} from '../../src/index.js';
import { clusters, type PostgresEnv, processNodeOf, startPostgresEnv } from '../harness.js';

export type FailoverEnv = PostgresEnv;

/** Chooses the node kind of the tests that can run on either: `KANRI_FAILOVER_NODES`, process by default. */
export const FAILOVER_NODES_VARIABLE = 'KANRI_FAILOVER_NODES';

/** The node kind `KANRI_FAILOVER_NODES` asks for; an unknown value is an error naming it. */
export function failoverNodes(env: NodeJS.ProcessEnv = process.env): PostgresEnv['nodes'] {
  const value = env[FAILOVER_NODES_VARIABLE] ?? 'process';
  if (value !== 'process' && value !== 'real') {
    throw new Error(`${FAILOVER_NODES_VARIABLE}=${value}: expected process or real`);
  }
  return value;
}

/**
 * Three nodes, so every instance has a host of its own to lose: process nodes, or real nodes when
 * `nodes` (by default from `KANRI_FAILOVER_NODES`) says so. Real nodes where the machine cannot run
 * them fail with the reason, rather than quietly testing process nodes instead.
 */
export async function startFailoverEnv(
  options: { apiProxy?: boolean; nodes?: PostgresEnv['nodes'] } = {},
): Promise<FailoverEnv> {
  const nodes = options.nodes ?? failoverNodes();
  if (nodes === 'process') return startPostgresEnv({ processNodes: 3, apiProxy: options.apiProxy ?? false });
  if (options.apiProxy) throw new Error('startFailoverEnv: apiProxy needs process nodes');
  const unsupported = await realNodesUnsupportedReason();
  if (unsupported) throw new Error(`${FAILOVER_NODES_VARIABLE}=real, but real nodes cannot run here: ${unsupported}`);
  return startPostgresEnv({ realNodes: 3 });
}

/** An instance's Pod IP as the API has it now: a real node's Pods come back from a power loss with new ones. */
export async function podIP(client: KubeClient, pod: string): Promise<string | undefined> {
  return (await client.resource<Pod>('v1', 'Pod').get(pod, { namespace: 'default' })).status?.podIP;
}

/** {@link podIP}, read from the API at most every 500 ms per Pod; the last one known while the API fails. */
export function podAddresses(client: KubeClient): (pod: string) => Promise<string | undefined> {
  const known = new Map<string, { ip: string | undefined; at: number }>();
  return async (pod) => {
    const cached = known.get(pod);
    if (cached && performance.now() - cached.at < 500) return cached.ip;
    const ip = await podIP(client, pod).catch(() => cached?.ip);
    known.set(pod, { ip, at: performance.now() });
    return ip;
  };
}

export function failoverCluster(name: string, replicas: number, ha: Record<string, unknown> = {}): PostgresCluster {
  return {
    apiVersion: PostgresClusterResource.apiVersion,
    kind: 'PostgresCluster',
    metadata: { name, namespace: 'default' },
    spec: {
      postgresVersion: 15,
      // The tests read and write through the superuser over the network.
      enableSuperuserAccess: true,
      instances: [
        {
          name: 'i',
          replicas,
          dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { [LABEL.cluster]: name } } },
              ],
            },
          },
        },
      ],
      config: { parameters: { shared_buffers: '16MB', max_connections: 40 } },
      ha,
    },
  } as unknown as PostgresCluster;
}

export { clusters };

export async function podsOf(client: KubeClient, cluster: string): Promise<Pod[]> {
  return (
    await client.resource<Pod>('v1', 'Pod').list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${cluster}` })
  ).items;
}

export function reportOf(pod: Pod | undefined): InstanceReport | undefined {
  const raw = pod?.metadata?.annotations?.[ANNOTATION.status];
  return raw ? (JSON.parse(raw) as InstanceReport) : undefined;
}

export async function leaseOf(client: KubeClient, cluster: string) {
  return client
    .resource<KubeObject & { spec?: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } }>(
      'coordination.k8s.io/v1',
      'Lease',
    )
    .get(names.leaderLease(cluster), { namespace: 'default' });
}

/**
 * How many times the leader Lease changed hands: each new primary takes it from another holder (or
 * after a release) and adds one. Unlike Events, which the recorder stops writing for an object after
 * 25, it never drops a change.
 */
export async function leaseTransitions(client: KubeClient, cluster: string): Promise<number> {
  return (await leaseOf(client, cluster)).spec?.leaseTransitions ?? 0;
}

/**
 * Waits until every instance reports ready (fresh reports), one primary holding the Lease and the
 * others streaming; resolves the primary's Pod name and the Pods.
 */
export async function waitHealthy(client: KubeClient, cluster: string, instances: number, timeoutMs = 180_000) {
  return waitFor(
    `${cluster}: ${instances} healthy instances`,
    async () => {
      const pods = await podsOf(client, cluster);
      const reports = pods.map((p) => ({ name: p.metadata?.name ?? '', report: reportOf(p), ip: p.status?.podIP }));
      const holder = (await leaseOf(client, cluster)).spec?.holderIdentity;
      const fresh = (r: InstanceReport | undefined) => r && Date.now() - Date.parse(r.updatedAt) < 30_000;
      const primaries = reports.filter((r) => r.report?.role === 'primary' && r.report.ready && fresh(r.report));
      const replicas = reports.filter((r) => r.report?.role === 'replica' && r.report.ready && fresh(r.report));
      if (
        pods.length !== instances ||
        primaries.length !== 1 ||
        replicas.length !== instances - 1 ||
        primaries[0]?.name !== holder
      ) {
        // Thrown, not returned, so that a timeout names each instance's state (waitFor shows the last error).
        const seen = reports.map(({ name, report: r }) =>
          r
            ? `${name} ${r.role}${r.ready ? ' ready' : ''}${fresh(r) ? '' : ' (stale)'}${r.message ? `: ${r.message}` : ''}`
            : `${name} no report`,
        );
        throw new Error(`${seen.join('; ') || 'no Pods'}; Lease held by ${holder ?? 'nobody'}`);
      }
      return { primary: holder as string, pods };
    },
    timeoutMs,
    250,
  );
}

/** The process node that runs `pod`; `env.hostOf` for tests that run on either kind of node. */
export const nodeOf = processNodeOf;

export async function sql<R extends Record<string, unknown>>(
  host: string,
  password: string,
  text: string,
  params: unknown[] = [],
): Promise<R[]> {
  const db = new pg.Client({
    host,
    port: 5432,
    user: 'postgres',
    password,
    database: 'postgres',
    connectionTimeoutMillis: 5_000,
  });
  // A server shutting down (a restart under test) may end the session between the query and
  // end(): pg then emits 'error' on the idle client, which without a listener is an uncaught
  // exception that fails whichever test is running. A failed query still rejects below.
  db.on('error', () => {});
  await db.connect();
  try {
    return (await db.query<R>(text, params)).rows;
  } finally {
    await closeClient(db);
  }
}

/**
 * Ends a client, waiting at most 500 ms: pg's `end()` waits for the socket's end event, and some
 * pg versions never resolved it on a connection that had failed (node-postgres #2777, #2923). The
 * pg here resolves it after a killed backend, a read timeout and a stopped backend (tried by
 * hand), but a watcher loop stuck there would stop probing that instance while its verdict still
 * passed, so the wait is bounded anyway.
 */
export async function closeClient(db: pg.Client | undefined): Promise<void> {
  if (db) await Promise.race([db.end().catch(() => undefined), sleep(500)]);
}

export async function superuserPassword(client: KubeClient, cluster: string): Promise<string> {
  const secret = await client.resource('v1', 'Secret').get(names.superuserSecret(cluster), { namespace: 'default' });
  return Buffer.from((secret as { data: Record<string, string> }).data.password ?? '', 'base64').toString('utf8');
}

export interface Ack {
  readonly n: number;
  readonly at: number;
  readonly host: string;
  /**
   * The primary's WAL position read right after the commit was acknowledged: at or past the end
   * of its commit record, so a commit that a new primary lacks has `lsn` past the fork point.
   */
  readonly lsn: string;
}

/** How long the sequence writer waits for a connection before it looks the primary up again. */
export const WRITER_CONNECT_TIMEOUT_MS = 2_000;

/** Options of {@link SequenceWriter}. */
export interface SequenceWriterOptions {
  /**
   * A pause after each acknowledged commit, ms; 0 (the default) writes as fast as the primary
   * commits. Files that count lost commits keep 0: the more WAL in flight at a crash, the more a
   * replication bug would lose. Files that only need writes to keep flowing pace the writer: at
   * full speed it alone kept a core of CI's two busy (postgres and this process, ~1 CPU-s per s).
   */
  readonly pauseMs?: number;
}

/** The pace for files that need writes to flow, not commits at risk: ~80 commits/s. */
export const PACED_WRITES: SequenceWriterOptions = { pauseMs: 10 };

/**
 * Writes 1, 2, 3, … one transaction each through `<cluster>-primary` (looked up again after every
 * error), records each acknowledged commit. Errors and timeouts are not acknowledgements.
 */
export class SequenceWriter {
  readonly acks: Ack[] = [];
  errors = 0;
  /**
   * Each failed attempt: when it ended, the address it went to (when it got that far) and how long
   * it took, so a slow failover can be told apart from a client stuck on a dead address.
   */
  readonly failures: { readonly at: number; readonly host?: string; readonly ms: number; readonly message: string }[] =
    [];
  #next = 1;
  #stop = new AbortController();
  #running: Promise<void> | undefined;

  constructor(
    private readonly cp: ControlPlane,
    private readonly cluster: string,
    private readonly password: string,
    private readonly options: SequenceWriterOptions = {},
  ) {}

  start(): void {
    this.#running = this.#loop();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** The first acknowledgement after `ms` (performance.now()), if any. */
  firstAckAfter(ms: number): Ack | undefined {
    return this.acks.find((a) => a.at > ms);
  }

  async #loop(): Promise<void> {
    const endpoints = new ServiceEndpointReader(this.cp);
    while (!this.#stop.signal.aborted) {
      let db: pg.Client | undefined;
      let host: string | undefined;
      let started = performance.now();
      try {
        const ready = (await endpoints.endpoints('default', names.primaryService(this.cluster), 5432)).find(
          (e) => e.ready,
        );
        if (!ready) throw new Error('no ready endpoint');
        host = ready.ip;
        db = new pg.Client({
          host,
          port: 5432,
          user: 'postgres',
          password: this.password,
          database: 'postgres',
          connectionTimeoutMillis: WRITER_CONNECT_TIMEOUT_MS,
          query_timeout: 5_000,
        });
        db.on('error', () => undefined);
        await db.connect();
        while (!this.#stop.signal.aborted) {
          const n = this.#next++;
          // One round trip (simple protocol, hence n inlined: it is our integer). The explicit
          // transaction matters: statements sent in one simple query otherwise run as one implicit
          // transaction, and the SELECT would read the WAL position before the commit record (a
          // commit lost exactly at the fork then looked as if it lay before it, and failover-rto
          // failed on it once). COMMIT ends the transaction, so the SELECT reads past its record.
          const results = (await db.query(
            `BEGIN; INSERT INTO seq (n) VALUES (${n}); COMMIT; SELECT pg_current_wal_lsn()::text AS lsn`,
          )) as unknown as pg.QueryResult<{ lsn: string }>[];
          this.acks.push({ n, at: performance.now(), host, lsn: results.at(-1)?.rows[0]?.lsn ?? '' });
          if (this.options.pauseMs) await sleep(this.options.pauseMs);
          started = performance.now();
        }
      } catch (error) {
        const at = performance.now();
        this.failures.push({ at, ...(host ? { host } : {}), ms: at - started, message: (error as Error).message });
        this.errors++;
        await sleep(50);
      } finally {
        await closeClient(db);
      }
    }
    await endpoints.close();
  }
}

export interface Acceptance {
  readonly pod: string;
  /** `performance.now()` in this process, before the write was sent and after it was acknowledged. */
  readonly start: number;
  readonly end: number;
  /**
   * The server's wall clock (epoch ms) while it inserted the row: the commit came just after it.
   * Unlike `end`, it does not move when this process's event loop lags under load.
   */
  readonly serverAtMs: number;
}

/**
 * Tries a tiny write on every instance directly (its Pod IP) every 50 ms, with synchronous_commit =
 * off so a primary that takes a write is seen even while it waits for a standby or its disk.
 */
export class SplitBrainWatcher {
  readonly accepted: Acceptance[] = [];
  probes = 0;
  /** Per instance, when each probe (or connection attempt) began: to show that no loop went blind. */
  readonly #attempts = new Map<string, number[]>();
  #stoppedAt = 0;
  /** Failed probes by message, so a watcher that saw little says why. */
  readonly errors = new Map<string, number>();
  #stop = new AbortController();
  #loops: Promise<void>[] = [];

  /**
   * `addressOf`, when given, is asked for an instance's address at every (re)connection, so that
   * the watcher follows a Pod to a new IP; `ip` is used when it knows none.
   */
  constructor(
    private readonly instances: readonly { name: string; ip: string }[],
    private readonly password: string,
    private readonly addressOf?: (pod: string) => Promise<string | undefined>,
  ) {}

  start(): void {
    this.#loops = this.instances.map((i) => this.#probe(i.name, i.ip));
  }

  async stop(): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stoppedAt = performance.now();
    this.#stop.abort();
    await Promise.all(this.#loops);
  }

  /**
   * Pairs of acceptances on two instances whose time spans overlap, or that alternate A, B, A within
   * a second: two primaries taking writes over the same period interleave like that, while even the
   * fastest legitimate back-and-forth (two switchovers) takes seconds.
   */
  violations(): string[] {
    const found: string[] = [];
    const sorted = [...this.accepted].sort((a, b) => a.start - b.start);
    for (let i = 0; i < sorted.length; i++) {
      const a = sorted[i] as Acceptance;
      for (let j = i + 1; j < sorted.length; j++) {
        const b = sorted[j] as Acceptance;
        if (b.start > a.end + 1_000) break;
        if (b.pod === a.pod) continue;
        if (b.start <= a.end) found.push(`${a.pod} and ${b.pod} both accepted writes at ${Math.round(b.start)} ms`);
        const back = sorted.slice(j + 1).find((c) => c.pod === a.pod && c.start <= a.end + 1_000);
        if (back) found.push(`${a.pod}, then ${b.pod}, then ${a.pod} again accepted writes within 1 s`);
      }
    }
    return [...new Set(found)];
  }

  /**
   * Spans longer than `ms` in which an instance's loop began no probe, between `start()` and
   * `stop()`. A healthy loop begins one at least every ~3.5 s (1 s connection timeout, 2 s query
   * timeout, 50 ms pause), whatever the instance's state, so a longer span means the watcher was
   * blind to that instance and its empty `violations()` proves nothing there.
   */
  blindSpans(ms = 10_000): string[] {
    const found: string[] = [];
    for (const i of this.instances) {
      const times = [...(this.#attempts.get(i.name) ?? []), this.#stoppedAt];
      for (let k = 1; k < times.length; k++) {
        const gap = (times[k] as number) - (times[k - 1] as number);
        if (gap > ms) found.push(`${i.name}: no probe for ${(gap / 1000).toFixed(1)} s`);
      }
    }
    return found;
  }

  async #probe(pod: string, ip: string): Promise<void> {
    let db: pg.Client | undefined;
    const attempts: number[] = [];
    this.#attempts.set(pod, attempts);
    while (!this.#stop.signal.aborted) {
      attempts.push(performance.now());
      try {
        if (!db) {
          db = new pg.Client({
            host: (await this.addressOf?.(pod)) ?? ip,
            port: 5432,
            user: 'postgres',
            password: this.password,
            database: 'postgres',
            connectionTimeoutMillis: 1_000,
            query_timeout: 2_000,
          });
          db.on('error', () => undefined);
          await db.connect();
          // off, not local: a commit is acknowledged without waiting for its WAL flush, so a
          // primary stuck on its disk that still takes writes is seen taking them.
          await db.query('SET synchronous_commit = off');
        }
        const start = performance.now();
        this.probes++;
        // Only a postgres out of recovery is asked to write (a replica would log an error 20 times a second).
        const [row] = (await db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows;
        if (row?.r === false) {
          const { rows } = await db.query<{ at: number }>(
            'INSERT INTO brain (pod) VALUES ($1) RETURNING extract(epoch FROM clock_timestamp()) * 1000 AS at',
            [pod],
          );
          this.accepted.push({ pod, start, end: performance.now(), serverAtMs: Number(rows[0]?.at) });
        }
      } catch (error) {
        const message = (error as Error).message.replace(/\d+(\.\d+)*/g, 'N');
        this.errors.set(message, (this.errors.get(message) ?? 0) + 1);
        await closeClient(db);
        db = undefined;
      }
      await sleep(50);
    }
    await closeClient(db);
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
