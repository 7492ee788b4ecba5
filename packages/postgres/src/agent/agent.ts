/**
 * The instance agent: bootstraps PGDATA, runs postgres as primary (while holding the leader Lease)
 * or as a streaming replica of the Lease holder, keeps its configuration in step with the
 * operator's ConfigMap, and reports on its own Pod.
 *
 * Guarantees: postgres runs as primary only inside a leadership of the Lease, and is stopped when
 * the Lease cannot be renewed before the renew deadline (fencing). API errors are logged and
 * retried, never fatal. On stop, the primary stops postgres before it releases the Lease.
 */

import { mkdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '@kanri/client';
import { LeaderElector } from '@kanri/runtime';
import { API_VERSION, KIND, names, ROLE, type Role } from '../contract.js';
import { basebackup, initdb, inspectDataDir } from './bootstrap.js';
import { planBoot, shouldPromote } from './bootstrap-plan.js';
import type { AgentConfig } from './config.js';
import { writeFileIfChanged } from './files.js';
import type { HealthSource } from './http-server.js';
import { InstanceFiles } from './instance-files.js';
import { lookupLeader, readLease } from './leader-lookup.js';
import { LocalDb } from './local-db.js';
import type { Logger } from './logger.js';
import type { AgentMetrics } from './metrics.js';
import { watchObject } from './object-watch.js';
import { PostgresProcess } from './postgres-process.js';
import { ensureSystemRoles, reconcileSlots, reconcileUsers } from './primary-tasks.js';
import type { Redactor } from './redactor.js';
import { StatusReporter } from './status-reporter.js';
import { Wakeup } from './wakeup.js';

export interface AgentOptions {
  readonly config: AgentConfig;
  /** Resolved directory of postgres's programs. */
  readonly pgBin: string;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly redactor: Redactor;
  readonly metrics: AgentMetrics;
}

const PRIMARY_TASK_PERIOD_MS = 5_000;
const USERS_RESYNC_MS = 30_000;

export class Agent implements HealthSource {
  readonly #config: AgentConfig;
  readonly #client: KubeClient;
  readonly #log: Logger;
  readonly #redactor: Redactor;
  readonly #postgres: PostgresProcess;
  readonly #db: LocalDb;
  readonly #files: InstanceFiles;
  readonly #pgBin: string;
  readonly #status: StatusReporter;

  /** Undefined until the boot plan is known: nothing is reported on the Pod before that. */
  #role: Role | undefined;
  #leading = false;
  /** Why the instance cannot serve at this stage (bootstrapping, fenced, …); undefined once it runs. */
  #phase: string | undefined = 'starting';
  #stopping = false;
  #primaryLsn: string | undefined;
  #filesReady = false;
  #leadership: Promise<void> = Promise.resolve();
  #clusterSpec: unknown;
  #usersDue = true;
  /** Set when another instance was seen holding the Lease while this one campaigned or led. */
  #leaseTakenBy: string | undefined;
  readonly #primaryWakeup = new Wakeup();

  constructor(options: AgentOptions) {
    this.#config = options.config;
    this.#pgBin = options.pgBin;
    this.#client = options.client;
    this.#log = options.log;
    this.#redactor = options.redactor;
    this.#postgres = new PostgresProcess({
      pgBin: options.pgBin,
      pgdata: options.config.pgdata,
      log: options.log.child({ component: 'postgres' }),
      onCrash: () => options.metrics.crashes.inc(),
    });
    this.#db = new LocalDb(options.config.socketDir, options.log);
    this.#files = new InstanceFiles(options.config, options.log);
    this.#status = new StatusReporter({
      config: options.config,
      client: options.client,
      db: this.#db,
      postgres: this.#postgres,
      metrics: options.metrics,
      log: options.log,
      state: () => ({
        role: this.#role,
        leading: this.#leading,
        phase: this.#phase,
        stopping: this.#stopping,
        primaryLsn: this.#primaryLsn,
      }),
    });
  }

  health(): string | null {
    return this.#status.health();
  }

  readiness(): string | null {
    return this.#status.readiness();
  }

  /** Runs until `signal` aborts; then stops postgres (and releases the Lease if it held it). */
  async run(signal: AbortSignal): Promise<void> {
    const { runDir, socketDir } = this.#config;
    await mkdir(runDir, { recursive: true, mode: 0o700 });
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    const status = this.#status.run(signal);
    const configLoaded = this.#watchConfig(signal);
    try {
      await Promise.race([configLoaded, sleep(10_000, undefined, { signal }).catch(() => undefined)]);
      await this.#boot(signal);
    } finally {
      this.#stopping = true;
      this.#phase = 'stopped';
      await this.#postgres.stop('fast');
      await this.#leadership;
      await status;
      await this.#status.report(true).catch(() => undefined);
      await this.#db.close().catch(() => undefined);
      // A fallback socket directory under /tmp outlives the Pod otherwise; rmdir leaves it if not empty.
      if (socketDir !== runDir) await rmdir(socketDir).catch(() => undefined);
    }
  }

  /** Marks the instance not ready at once (before postgres is stopped). */
  beginShutdown(): void {
    this.#stopping = true;
  }

  // ---- boot -------------------------------------------------------------------------------------

  async #boot(signal: AbortSignal): Promise<void> {
    const config = this.#config;
    const data = await inspectDataDir(config.pgdata);
    const lease = await this.#retry('read the leader Lease', signal, () =>
      readLease(this.#client, config.namespace, config.cluster, signal),
    );
    if (signal.aborted || !lease) return;
    const plan = planBoot({
      ...data,
      mode: config.bootstrap,
      leaseExists: lease.exists,
      leaseHolder: lease.holder,
      self: config.podName,
    });
    this.#role = plan.action === 'initdb' || plan.action === 'lead' ? ROLE.primary : ROLE.replica;
    this.#log.info({ plan: plan.action, ...data, leaseHolder: lease.holder ?? null }, 'boot plan');
    const context = {
      pgBin: this.#pgBin,
      pgdata: config.pgdata,
      runDir: config.runDir,
      log: this.#log,
      redactor: this.#redactor,
      signal,
    };
    switch (plan.action) {
      case 'initdb': {
        this.#phase = 'initialising a new cluster (initdb)';
        const started = performance.now();
        await initdb(context, config.superuserPassword);
        this.#log.info({ ms: Math.round(performance.now() - started) }, 'initdb done');
        return this.#runLeader(signal);
      }
      case 'basebackup':
        this.#phase = 'looking for a primary to clone';
        if (!(await this.#cloneFromPrimary(signal))) return;
        return this.#runFollower(signal);
      case 'lead':
        return this.#runLeader(signal);
      case 'follow':
        return this.#runFollower(signal);
      case 'wait':
        this.#phase = plan.reason;
        this.#log.error({ reason: plan.reason }, 'this instance cannot run: it would diverge from the primary');
        return untilAborted(signal);
    }
  }

  async #cloneFromPrimary(signal: AbortSignal): Promise<boolean> {
    const config = this.#config;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const leader = await lookupLeader(this.#client, config.namespace, config.cluster, signal);
        if (!leader.holder || !leader.podIP || leader.holder === config.podName) {
          this.#phase = 'waiting for a primary to clone (nobody holds the leader Lease)';
        } else if (!leader.ready) {
          // Trying now would fail and back off; the primary reports ready within seconds.
          this.#phase = `waiting for the primary ${leader.holder} to be ready before cloning it`;
        } else {
          this.#phase = `cloning the primary ${leader.holder} (pg_basebackup)`;
          const started = performance.now();
          await basebackup(
            {
              pgBin: this.#pgBin,
              pgdata: config.pgdata,
              runDir: config.runDir,
              log: this.#log,
              redactor: this.#redactor,
              signal,
            },
            {
              host: leader.podIP,
              slot: names.slot(config.podName),
              applicationName: config.podName,
              replicationPassword: config.replicationPassword,
            },
          );
          this.#log.info({ ms: Math.round(performance.now() - started), from: leader.holder }, 'pg_basebackup done');
          return true;
        }
      } catch (error) {
        if (signal.aborted) return false;
        failures++;
        this.#phase = `cannot clone the primary yet: ${this.#redactor.describe(error).slice(0, 200)}`;
        this.#log.warn({ err: error, attempt: failures }, 'cannot clone the primary yet; retrying');
      }
      const delayMs = Math.min(config.retryPeriodMs * 2 ** Math.min(failures, 4), 30_000);
      await sleep(delayMs, undefined, { signal }).catch(() => undefined);
    }
    return false;
  }

  // ---- primary ----------------------------------------------------------------------------------

  async #runLeader(signal: AbortSignal): Promise<void> {
    const config = this.#config;
    this.#role = ROLE.primary;
    this.#phase = 'waiting for the leader Lease';
    const election = new AbortController();
    let otherLeader: string | undefined;
    const elector = new LeaderElector({
      client: this.#client,
      namespace: config.namespace,
      name: names.leaderLease(config.cluster),
      identity: config.podName,
      leaseDurationMs: config.leaseDurationMs,
      renewDeadlineMs: config.renewDeadlineMs,
      retryPeriodMs: config.retryPeriodMs,
      logger: this.#log.child({ component: 'lease' }),
      onStartedLeading: (leadership) => {
        // One leadership at a time: a new one starts postgres only after the last one stopped it.
        this.#leadership = this.#leadership
          .then(() => this.#lead(leadership, signal))
          .catch((error: unknown) => {
            this.#log.error({ err: error }, 'leading failed');
          });
        return this.#leadership;
      },
      onNewLeader: (identity) => {
        if (identity === config.podName) return;
        // Someone else leads: this former primary must neither write nor campaign.
        otherLeader = identity;
        this.#leaseTakenBy = identity;
        election.abort();
      },
    });
    await elector.run(AbortSignal.any([signal, election.signal]));
    await this.#leadership;
    if (signal.aborted || otherLeader === undefined) return;
    this.#role = ROLE.replica;
    this.#phase = `former primary: the leader Lease is held by ${otherLeader}; rewinding is not implemented yet`;
    this.#log.error({ leader: otherLeader }, 'another instance took the leader Lease; this one stays stopped');
    await untilAborted(signal);
  }

  /** One leadership: postgres runs as primary until `leadership` aborts, then it is stopped. */
  async #lead(leadership: AbortSignal, agentSignal: AbortSignal): Promise<void> {
    this.#role = ROLE.primary;
    this.#phase = 'starting postgres as primary';
    try {
      await this.#retry('write the configuration files', leadership, () => this.#files.write());
      if (leadership.aborted) return;
      this.#filesReady = true;
      this.#postgres.start();
      await this.#untilAccepting(leadership);
      if (leadership.aborted) return;
      await this.#retry('create the replication role', leadership, () =>
        ensureSystemRoles(this.#db, this.#config, this.#log),
      );
      if (leadership.aborted) return;
      // Slots first: a replica cloning as soon as this one reports ready finds its slot in place.
      await reconcileSlots(this.#db, this.#client, this.#config, this.#log).catch(() => undefined);
      this.#leading = true;
      this.#phase = undefined;
      this.#log.info('running as primary');
      this.#status.wake();
      const watching = watchObject<KubeObject>({
        resource: this.#client.resource<KubeObject>(API_VERSION, KIND),
        namespace: this.#config.namespace,
        name: this.#config.cluster,
        log: this.#log,
        signal: leadership,
        onChange: (cluster) => {
          this.#clusterSpec = (cluster as { spec?: unknown } | undefined)?.spec;
          this.#usersDue = true;
          this.#primaryWakeup.wake();
        },
      });
      await this.#primaryTasks(leadership);
      await watching;
    } finally {
      this.#leading = false;
      if (!agentSignal.aborted) {
        const why = this.#leaseTakenBy
          ? `${this.#leaseTakenBy} holds the leader Lease now`
          : 'the leader Lease could not be renewed before the renew deadline';
        this.#phase = `fenced: ${why}; postgres stopped`;
        this.#log.error({ reason: why }, 'FENCING: stopping postgres so that it takes no more writes');
      }
      // Fast, not smart: clients are cut off at once, so no write lands after the deadline.
      await this.#postgres.stop('fast', 10_000);
      this.#status.wake();
    }
  }

  async #primaryTasks(leadership: AbortSignal): Promise<void> {
    let lastUsersMs = Number.NEGATIVE_INFINITY;
    while (!leadership.aborted) {
      try {
        await reconcileSlots(this.#db, this.#client, this.#config, this.#log);
      } catch (error) {
        if (!leadership.aborted) this.#log.warn({ err: error }, 'cannot reconcile replication slots; retrying');
      }
      if (this.#usersDue || performance.now() - lastUsersMs > USERS_RESYNC_MS) {
        this.#usersDue = false;
        lastUsersMs = performance.now();
        try {
          await reconcileUsers(this.#db, this.#client, this.#config, this.#clusterSpec, this.#log, this.#redactor);
        } catch (error) {
          this.#usersDue = true;
          if (!leadership.aborted) this.#log.warn({ err: error }, 'cannot reconcile users and databases; retrying');
        }
      }
      await this.#primaryWakeup.wait(PRIMARY_TASK_PERIOD_MS, leadership);
    }
  }

  // ---- replica ----------------------------------------------------------------------------------

  async #runFollower(signal: AbortSignal): Promise<void> {
    const config = this.#config;
    this.#role = ROLE.replica;
    this.#phase = 'looking for the primary';
    const slot = names.slot(config.podName);
    let following: string | undefined;
    await writeFileIfChanged(join(config.pgdata, 'standby.signal'), '');
    while (!signal.aborted) {
      try {
        const leader = await lookupLeader(this.#client, config.namespace, config.cluster, signal);
        this.#primaryLsn = leader.lsn;
        // The failover hook: when it says yes, this replica will take the Lease and promote (a later version).
        if (shouldPromote()) this.#log.warn('promotion is wanted but not implemented yet');
        const ip = leader.holder !== config.podName ? leader.podIP : undefined;
        // Without a new holder there is nothing better to follow: keep the last primary.
        if (ip && ip !== following) {
          this.#files.setPrimary(
            { host: ip, slot, passfile: this.#files.passfile, applicationName: config.podName },
            slot,
          );
          if (following) this.#log.info({ from: following, to: ip, leader: leader.holder }, 'following a new primary');
          following = ip;
        } else if (!following) {
          this.#files.setPrimary(undefined, slot);
        }
        const changed = await this.#files.write();
        this.#filesReady = true;
        if (!this.#postgres.wanted) this.#postgres.start();
        else if (changed) this.#postgres.reload();
        this.#phase = following ? undefined : 'no primary to follow (nobody holds the leader Lease)';
      } catch (error) {
        if (signal.aborted) break;
        this.#log.warn({ err: error }, 'cannot follow the primary; retrying');
      }
      await sleep(config.retryPeriodMs, undefined, { signal }).catch(() => undefined);
    }
  }

  // ---- configuration ----------------------------------------------------------------------------

  /** Follows the operator's ConfigMap; resolves once its first state (present or not) is known. */
  #watchConfig(signal: AbortSignal): Promise<void> {
    let loaded: () => void = () => undefined;
    const first = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    void watchObject({
      resource: this.#client.resource('v1', 'ConfigMap'),
      namespace: this.#config.namespace,
      name: names.config(this.#config.cluster),
      log: this.#log,
      signal,
      onChange: async (configMap) => {
        this.#files.setOperatorConfig(configMap?.data);
        loaded();
        if (!this.#filesReady) return;
        if ((await this.#files.write()) && this.#postgres.reload()) {
          this.#log.info('configuration changed; postgres reloaded');
          setTimeout(() => void this.#warnPendingRestart(), 1_000).unref();
        }
      },
    });
    return first;
  }

  async #warnPendingRestart(): Promise<void> {
    try {
      const rows = await this.#db.query<{ name: string }>('SELECT name FROM pg_settings WHERE pending_restart');
      if (rows.length > 0)
        this.#log.warn({ parameters: rows.map((row) => row.name) }, 'some parameters take effect only after a restart');
    } catch {
      // postgres is restarting or stopping; the next change checks again.
    }
  }

  // ---- helpers ----------------------------------------------------------------------------------

  /** Polls until postgres answers, or `signal` aborts. */
  async #untilAccepting(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !(await this.#db.ping())) {
      await sleep(200, undefined, { signal }).catch(() => undefined);
    }
  }

  /** Retries `action` with backoff until it succeeds or `signal` aborts (then undefined). */
  async #retry<T>(what: string, signal: AbortSignal, action: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        return await action();
      } catch (error) {
        if (signal.aborted) return undefined;
        const delayMs = Math.min(500 * 2 ** Math.min(attempt, 6), 30_000);
        this.#log.warn({ err: error, attempt, retryInMs: delayMs }, `cannot ${what}; retrying`);
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
      }
    }
    return undefined;
  }
}

/** Resolves when `signal` aborts: for an instance that must wait, doing nothing, until it is stopped. */
function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
