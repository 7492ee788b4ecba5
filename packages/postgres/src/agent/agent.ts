/**
 * The instance agent: bootstraps PGDATA, runs postgres as primary (while holding the leader Lease)
 * or as a streaming replica of the Lease holder, keeps its configuration in step with the
 * operator's ConfigMap, and reports on its own Pod. Without the operator it also fails over (the
 * most advanced healthy replica takes an expired Lease and promotes itself), rejoins a former
 * primary with pg_rewind, serves planned switchovers, and keeps synchronous standbys.
 *
 * Guarantees: postgres runs as primary only inside a leadership of the Lease, and is stopped when
 * the Lease cannot be renewed before the renew deadline (fencing), which is strictly before any
 * replica can see it expire. API errors are logged and retried, never fatal. On stop, the primary
 * stops postgres before it releases the Lease.
 */

import { mkdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError, type KubeClient, type KubeObject } from '@kanri/client';
import { EventRecorder, LeaderElector } from '@kanri/runtime';
import { Wakeup } from '@kanri/timing';
import type { Pod } from 'kubernetes-types/core/v1.js';
import {
  ANNOTATION,
  API_VERSION,
  EVENT_REASON,
  type InstanceReport,
  KIND,
  LABEL,
  names,
  ROLE,
  type Role,
} from '../contract.js';
import { basebackup, initdb, inspectDataDir } from './bootstrap.js';
import { planBoot } from './bootstrap-plan.js';
import type { AgentConfig } from './config.js';
import { type Candidate, compareCandidates, decideFailover, formatBytes } from './failover-plan.js';
import { writeFileIfChanged } from './files.js';
import { type HaSpec, parseMembers, readHaSpec } from './ha-spec.js';
import type { HealthSource } from './http-server.js';
import { InstanceFiles } from './instance-files.js';
import { lookupLeader, readLease } from './leader-lookup.js';
import { expiresAtMs, holderOf, type Lease, LeaseFollower, type LeaseView, microTime } from './lease-follower.js';
import { LocalDb } from './local-db.js';
import type { Logger } from './logger.js';
import { lsnDistance, maxLsn, parseLsn } from './lsn.js';
import type { AgentMetrics } from './metrics.js';
import { watchObject } from './object-watch.js';
import { fetchPeerStatus, type LiveStatus } from './peer-status.js';
import { PostgresProcess } from './postgres-process.js';
import { ensureSystemRoles, reconcileSlots, reconcileUsers } from './primary-tasks.js';
import type { Redactor } from './redactor.js';
import { buildReport, type ReportDecisions } from './report.js';
import { readControlData, rewind, setAside } from './rewind.js';
import { StatusReporter } from './status-reporter.js';
import { type PendingSync, planSync, renderSynchronousStandbyNames, type StandbyConnection } from './sync-plan.js';

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
const SYNC_PERIOD_MS = 1_000;
/** How long a switchover waits for the target to receive the old primary's last WAL record. */
const SWITCHOVER_CATCH_UP_MS = 30_000;
/** What a standby logs when its WAL went further than the primary's history: it must be rewound. */
const DIVERGED =
  /forked off current database system timeline \d+ before current recovery point|is ahead of the WAL flush position of this server|is not a child of this server's history/;

type Mode = 'lead' | 'follow' | 'rejoin';

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
  readonly #lease: LeaseFollower;
  readonly #events: EventRecorder;

  /** Undefined until the boot plan is known: nothing is reported on the Pod before that. */
  #role: Role | undefined;
  #mode: Mode | undefined;
  #leading = false;
  /** The Lease as #takeLease wrote it, and when the write was sent: handed to the next elector. */
  #takenLease: { lease: Lease; sentAtMs: number } | undefined;
  /** What a takeover reports once promoted (or once its leadership ends without promoting). */
  #afterTakeover: (() => void) | undefined;
  /** Why the instance cannot serve at this stage (bootstrapping, fenced, …); undefined once it runs. */
  #phase: string | undefined = 'starting';
  #stopping = false;
  #primaryLsn: string | undefined;
  /** The highest LSN the current primary is known to have reached; reset when the holder changes. */
  #primaryLsnSeen: string | undefined;
  #filesReady = false;
  #leadership: Promise<void> = Promise.resolve();
  #cluster: KubeObject | undefined;
  #usersDue = true;
  /** Set when another instance was seen holding the Lease while this one campaigned or led. */
  #leaseTakenBy: string | undefined;
  /** This primary came from initdb just now: it runs without synchronous standbys until N stream. */
  #freshCluster = false;
  #election: AbortController | undefined;
  #switching = false;
  #syncConfigured: string[] = [];
  #syncPending: PendingSync | undefined;
  /** A postgres log line saying this replica's WAL is not part of the primary's history. */
  #diverged: string | undefined;
  #rejoinWhy = 'former primary';
  #decisions: { -readonly [K in keyof ReportDecisions]: ReportDecisions[K] } = {};
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
      onLine: (line) => {
        if (this.#mode === 'follow' && DIVERGED.test(line)) this.#diverged ??= line;
      },
    });
    this.#db = new LocalDb(options.config.socketDir, options.log);
    this.#files = new InstanceFiles(options.config, options.log);
    this.#lease = new LeaseFollower(
      options.client,
      options.config.namespace,
      names.leaderLease(options.config.cluster),
      options.log.child({ component: 'lease-follower' }),
    );
    this.#events = new EventRecorder({
      client: options.client,
      controller: 'postgres.kanri.dev/instance-agent',
      instance: options.config.podName,
      logger: options.log,
    });
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
        decisions: { ...this.#decisions },
      }),
    });
  }

  health(): string | null {
    return this.#status.health();
  }

  readiness(): string | null {
    return this.#status.readiness();
  }

  /** This instance as of now, for the candidates' ranking and the switchover (GET /status). */
  async liveStatus(): Promise<LiveStatus> {
    const observation = this.#postgres.running ? await this.#db.observe() : { connected: false };
    const report = buildReport({
      role: this.#role ?? ROLE.replica,
      leading: this.#leading,
      observation,
      primaryLsn: this.#primaryLsn,
      phaseMessage: this.#stopping ? 'shutting down' : this.#phase,
      now: new Date(),
    });
    let why: string | undefined;
    if (this.#stopping) why = 'shutting down';
    else if (this.#mode !== 'follow') why = `not following (${this.#mode ?? 'starting'})`;
    else if (!observation.connected) why = 'postgres is not accepting connections';
    else if (!observation.inRecovery) why = 'postgres is not in recovery';
    this.#primaryLsnSeen = maxLsn(this.#primaryLsnSeen, observation.senderEndLsn);
    return {
      ...report,
      name: this.#config.podName,
      candidate: why === undefined,
      ...(why ? { candidateWhy: why } : {}),
      ...(this.#primaryLsnSeen ? { primaryLsnSeen: this.#primaryLsnSeen } : {}),
      receiverStatus: observation.receiverStatus ?? null,
    };
  }

  /** Runs until `signal` aborts; then stops postgres (and releases the Lease if it held it). */
  async run(signal: AbortSignal): Promise<void> {
    const { runDir, socketDir } = this.#config;
    await mkdir(runDir, { recursive: true, mode: 0o700 });
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    const status = this.#status.run(signal);
    const configLoaded = this.#watchConfig(signal);
    const leaseFollowing = this.#lease.run(signal);
    const clusterWatch = this.#watchCluster(signal);
    try {
      await Promise.race([configLoaded, sleep(10_000, undefined, { signal }).catch(() => undefined)]);
      await this.#boot(signal);
    } finally {
      this.#stopping = true;
      this.#phase = 'stopped';
      await this.#postgres.stop('fast');
      await this.#leadership;
      await status;
      await leaseFollowing;
      await clusterWatch;
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
    let next: Mode;
    switch (plan.action) {
      case 'initdb': {
        this.#phase = 'initialising a new cluster (initdb)';
        const started = performance.now();
        await initdb(this.#bootstrapContext(signal), config.superuserPassword);
        this.#log.info({ ms: Math.round(performance.now() - started) }, 'initdb done');
        this.#freshCluster = true;
        next = 'lead';
        break;
      }
      case 'basebackup':
        this.#phase = 'looking for a primary to clone';
        if (!(await this.#cloneFromPrimary(signal))) return;
        next = 'follow';
        break;
      case 'lead':
        next = 'lead';
        break;
      case 'follow':
        next = 'follow';
        break;
      case 'rejoin':
        this.#leaseTakenBy = plan.leader;
        next = 'rejoin';
        break;
    }
    while (!signal.aborted) {
      this.#mode = next;
      if (next === 'lead') {
        const other = await this.#runLeader(signal);
        if (other === undefined) return;
        next = 'rejoin';
      } else if (next === 'rejoin') {
        const after = await this.#rejoin(signal);
        if (after === undefined) return;
        next = after;
      } else {
        const after = await this.#runFollower(signal);
        if (after === undefined) return;
        next = after;
      }
    }
  }

  #bootstrapContext(signal: AbortSignal) {
    const config = this.#config;
    return {
      pgBin: this.#pgBin,
      pgdata: config.pgdata,
      runDir: config.runDir,
      log: this.#log,
      redactor: this.#redactor,
      signal,
    };
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
          await basebackup(this.#bootstrapContext(signal), {
            host: leader.podIP,
            slot: names.slot(config.podName),
            applicationName: config.podName,
            replicationPassword: config.replicationPassword,
          });
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

  /** Leads while it can; resolves the new holder's name when another instance took the Lease. */
  async #runLeader(signal: AbortSignal): Promise<string | undefined> {
    const config = this.#config;
    this.#role = ROLE.primary;
    this.#phase = 'waiting for the leader Lease';
    this.#leaseTakenBy = undefined;
    const election = new AbortController();
    this.#election = election;
    const adopt = this.#takenLease;
    this.#takenLease = undefined;
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
      // A takeover just written by #takeLease: leading starts from it, not from another read and write.
      ...(adopt ? { adopt } : {}),
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
    this.#runAfterTakeover();
    this.#election = undefined;
    if (signal.aborted) return undefined;
    otherLeader ??= this.#leaseTakenBy;
    if (otherLeader === undefined) return undefined;
    this.#role = ROLE.replica;
    this.#log.warn({ leader: otherLeader }, 'another instance holds the leader Lease; rejoining as its replica');
    return otherLeader;
  }

  /** One leadership: postgres runs as primary until `leadership` aborts, then it is stopped. */
  async #lead(leadership: AbortSignal, agentSignal: AbortSignal): Promise<void> {
    this.#role = ROLE.primary;
    this.#phase = 'starting postgres as primary';
    this.#primaryLsnSeen = undefined;
    // A former primary that handed the Lease over in a switchover may lead again later.
    this.#switching = false;
    // The role label now, not once promoted: clients find this Pod behind <name>-primary while it
    // promotes (as Patroni's GET /leader answers as soon as the leader key is taken), and the few
    // that connect early are refused writes for a few tens of ms instead of searching for longer.
    this.#status.wake();
    // Fencing must not wait for in-flight work (an API request hanging on a dead network path):
    // postgres stops the moment leadership ends.
    const fence = () => void this.#postgres.stop('fast', 2_000);
    leadership.addEventListener('abort', fence, { once: true });
    try {
      this.#syncConfigured = this.#initialSynchronous();
      this.#syncPending = undefined;
      const synchronousStandbyNames = renderSynchronousStandbyNames(
        this.#haSpec().synchronousNumber,
        this.#syncConfigured,
      );
      let promoted = false;
      // A running standby whose synchronous_standby_names is already right (asynchronous mode:
      // none) promotes before its files are rewritten: the only other change, primary_conninfo, is
      // ignored by a primary, and the writes' fsyncs and the reload are off the path to writable.
      // Otherwise the setting must be live before the first commit, or that commit would be
      // acknowledged without its synchronous standby.
      if (this.#postgres.wanted && this.#files.writtenSynchronousStandbyNames === synchronousStandbyNames) {
        await this.#untilAccepting(leadership);
        if (leadership.aborted) return;
        promoted = await this.#promoteIfStandby(leadership);
        if (leadership.aborted) return;
        if (promoted) this.#nowLeading();
      }
      this.#files.setPrimary(undefined, undefined);
      this.#files.setSynchronousStandbyNames(synchronousStandbyNames);
      const changed = await this.#retry('write the configuration files', leadership, () => this.#files.write());
      if (leadership.aborted) return;
      this.#filesReady = true;
      // A promoted replica's postgres runs already (in recovery): reload, then promote it.
      if (this.#postgres.wanted && changed) this.#postgres.reload();
      this.#postgres.start();
      await this.#untilAccepting(leadership);
      if (leadership.aborted) return;
      if (!promoted) {
        promoted = await this.#promoteIfStandby(leadership);
        if (leadership.aborted) return;
        if (promoted) this.#nowLeading();
      }
      // A promoted replica serves at once (above): it has the replication role already, and its
      // peers' slots were created while it promoted. A new primary creates both first, so that a
      // replica cloning as soon as it reports ready finds its slot in place.
      await this.#retry('create the replication role', leadership, () =>
        ensureSystemRoles(this.#db, this.#config, this.#log),
      );
      if (leadership.aborted) return;
      if (!promoted) {
        await reconcileSlots(this.#db, this.#client, this.#config, this.#log).catch(() => undefined);
        this.#nowLeading();
      }
      await Promise.all([this.#primaryTasks(leadership), this.#syncLoop(leadership)]);
    } finally {
      this.#runAfterTakeover();
      this.#leading = false;
      if (!agentSignal.aborted) {
        const why = this.#leaseTakenBy
          ? `${this.#leaseTakenBy} holds the leader Lease now`
          : 'the leader Lease could not be renewed before the renew deadline';
        this.#phase = `fenced: ${why}; postgres stopped`;
        if (!this.#switching) {
          this.#log.error({ reason: why }, 'FENCING: stopping postgres so that it takes no more writes');
          void this.#event('Warning', EVENT_REASON.fenced, `${this.#config.podName} stopped postgres: ${why}`);
        }
      }
      // Fast, escalating soon: clients are cut off at once, and postgres is down well before the
      // Lease can expire for the replicas (renew deadline < lease duration).
      leadership.removeEventListener('abort', fence);
      await this.#postgres.stop('fast', 2_000);
      this.#status.wake();
    }
  }

  #nowLeading(): void {
    this.#leading = true;
    this.#phase = undefined;
    this.#log.info('running as primary');
    this.#status.wake();
    this.#primaryWakeup.wake();
    this.#runAfterTakeover();
  }

  #runAfterTakeover(): void {
    const followUp = this.#afterTakeover;
    this.#afterTakeover = undefined;
    followUp?.();
  }

  /** The synchronous standbys a new leadership starts with (see sync-plan.ts). */
  #initialSynchronous(): string[] {
    const number = this.#haSpec().synchronousNumber;
    if (number <= 0) return [];
    const published = parseMembers(this.#lease.view?.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]).filter(
      (m) => m !== this.#config.podName,
    );
    if (published.length >= number) return published;
    // A new cluster has no standby yet; any other primary waits for N standbys, whoever they are.
    return this.#freshCluster ? [] : ['*'];
  }

  /** True if postgres was a standby and is promoted now. */
  async #promoteIfStandby(leadership: AbortSignal): Promise<boolean> {
    const [row] = await this.#db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    if (!row?.r) return false;
    const started = performance.now();
    this.#phase = 'promoting';
    this.#log.info('promoting postgres (pg_promote)');
    // Synchronous mode: the replicas re-follow this instance as soon as it holds the Lease; with
    // their slots in place they stream from it at once (through the promotion's timeline switch)
    // instead of retrying after wal_retrieve_retry_interval, time without any commit. Asynchronous
    // commits need no replica: the slots come right after the promotion (the primary's first
    // pass), and their fsyncs do not compete with the promotion's.
    if (this.#haSpec().synchronousNumber > 0) {
      void reconcileSlots(this.#db, this.#client, this.#config, this.#log, leadership).catch(() => undefined);
    }
    while (!leadership.aborted) {
      try {
        // pg_promote(true) polls every 100 ms; promotion takes a few tens of ms, so poll closer.
        const [sent] = await this.#db.query<{ ok: boolean }>('SELECT pg_promote(false) AS ok');
        if (sent?.ok && (await this.#untilPromoted(leadership, 60_000))) break;
      } catch (error) {
        this.#log.warn({ err: error }, 'pg_promote failed; retrying');
      }
      await sleep(500, undefined, { signal: leadership }).catch(() => undefined);
    }
    const ms = Math.round(performance.now() - started);
    this.#log.info({ ms }, 'promoted');
    // The new timeline reaches pg_control (where pg_rewind looks) with a checkpoint: do it now, in the
    // background, so that a former primary rewinding from here sees the fork.
    this.#db
      .query('CHECKPOINT')
      .catch((error: unknown) => this.#log.warn({ err: error }, 'checkpoint after promotion failed'));
    this.#decisions.failover = `${this.#decisions.failover ?? 'promoted'} (promoted in ${ms} ms)`;
    return !leadership.aborted;
  }

  /** Waits until postgres has left recovery; false after `timeoutMs`. */
  async #untilPromoted(leadership: AbortSignal, timeoutMs: number): Promise<boolean> {
    const until = performance.now() + timeoutMs;
    while (!leadership.aborted && performance.now() < until) {
      const [row] = await this.#db.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
      if (row && !row.r) return true;
      await sleep(10, undefined, { signal: leadership }).catch(() => undefined);
    }
    return false;
  }

  async #primaryTasks(leadership: AbortSignal): Promise<void> {
    let lastUsersMs = Number.NEGATIVE_INFINITY;
    while (!leadership.aborted) {
      if (!this.#switching) {
        try {
          await reconcileSlots(this.#db, this.#client, this.#config, this.#log, leadership);
        } catch (error) {
          if (!leadership.aborted) this.#log.warn({ err: error }, 'cannot reconcile replication slots; retrying');
        }
        if (this.#usersDue || performance.now() - lastUsersMs > USERS_RESYNC_MS) {
          this.#usersDue = false;
          lastUsersMs = performance.now();
          try {
            await reconcileUsers(
              this.#db,
              this.#client,
              this.#config,
              (this.#cluster as { spec?: unknown } | undefined)?.spec,
              this.#log,
              this.#redactor,
            );
          } catch (error) {
            this.#usersDue = true;
            if (!leadership.aborted) this.#log.warn({ err: error }, 'cannot reconcile users and databases; retrying');
          }
        }
        await this.#maybeSwitchover(leadership).catch((error: unknown) => {
          this.#log.error({ err: error }, 'switchover failed');
        });
      }
      await this.#primaryWakeup.wait(PRIMARY_TASK_PERIOD_MS, leadership);
    }
  }

  // ---- synchronous replication (primary) --------------------------------------------------------

  async #syncLoop(leadership: AbortSignal): Promise<void> {
    let lastReason = '';
    while (!leadership.aborted) {
      if (!this.#switching) {
        try {
          const reason = await this.#syncStep(leadership);
          if (reason !== lastReason && reason) this.#log.info({ reason }, 'synchronous replication');
          lastReason = reason;
        } catch (error) {
          if (!leadership.aborted) this.#log.warn({ err: error }, 'cannot manage synchronous standbys; retrying');
        }
      }
      await sleep(SYNC_PERIOD_MS, undefined, { signal: leadership }).catch(() => undefined);
    }
  }

  /** One step of sync-plan.ts; resolves what it waits for ('' when nothing). */
  async #syncStep(leadership: AbortSignal): Promise<string> {
    const number = this.#haSpec().synchronousNumber;
    // Read fresh: planning from a stale published set could skip the unpublish-first step.
    const view = await this.#lease.refresh(leadership);
    const published = parseMembers(view?.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]);
    const connections = await this.#db.query<{
      name: string;
      state: string;
      sync_state: string;
      flush_lsn: string | null;
    }>('SELECT application_name AS name, state, sync_state, flush_lsn::text FROM pg_stat_replication');
    const [current] = await this.#db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    const action = planSync({
      number,
      published,
      configured: this.#syncConfigured,
      connections: connections.map(
        (c): StandbyConnection => ({ name: c.name, state: c.state, syncState: c.sync_state, flushLsn: c.flush_lsn }),
      ),
      pending: this.#syncPending,
      currentLsn: current?.lsn ?? '0/0',
    });
    this.#decisions.synchronousStandbys = number > 0 ? published : undefined;
    switch (action.kind) {
      case 'none':
        return '';
      case 'wait':
        return action.reason;
      case 'capture':
        this.#syncPending = { members: this.#syncConfigured, lsn: action.lsn };
        return `synchronous standbys must flush ${action.lsn}`;
      case 'configure': {
        const value = renderSynchronousStandbyNames(number, action.members);
        this.#files.setSynchronousStandbyNames(value);
        if (await this.#files.write()) this.#postgres.reload();
        this.#syncConfigured = [...action.members];
        this.#syncPending = { members: [...action.members], lsn: undefined };
        this.#log.info({ synchronous_standby_names: value }, 'synchronous standbys configured');
        return `configured ${value || 'no synchronous standbys'}`;
      }
      case 'publish': {
        const members = [...action.members];
        const ok = await this.#updateLease(leadership, (lease) => {
          if (holderOf({ lease, exists: true, observedAtMs: 0 }) !== this.#config.podName) return undefined;
          return withAnnotations(lease, { [ANNOTATION.syncStandbys]: members.join(',') || null });
        });
        if (ok) {
          this.#decisions.synchronousStandbys = members;
          this.#log.info({ members }, 'synchronous standbys published in the Lease');
          void this.#event(
            'Normal',
            EVENT_REASON.synchronousStandbys,
            `synchronous standbys: ${members.join(', ') || 'none'} (of ${number} required)`,
          );
          if (members.length === this.#syncConfigured.length) this.#syncPending = undefined;
        }
        return ok ? '' : 'cannot publish the synchronous standbys';
      }
    }
  }

  // ---- switchover (primary) ---------------------------------------------------------------------

  async #maybeSwitchover(leadership: AbortSignal): Promise<void> {
    const request = this.#cluster?.metadata?.annotations?.[ANNOTATION.switchover];
    if (!request) return;
    const view = await this.#lease.refresh(leadership);
    if (holderOf(view) !== this.#config.podName) return;
    if (view?.lease?.metadata?.annotations?.[ANNOTATION.switchoverServed] === request) return;
    const started = performance.now();
    const refuse = async (why: string) => {
      this.#decisions.switchover = `refused ${request}: ${why}`;
      this.#log.warn({ request, why }, 'switchover refused');
      void this.#event('Warning', EVENT_REASON.switchoverRefused, `switchover to ${request} refused: ${why}`);
      await this.#updateLease(leadership, (lease) =>
        withAnnotations(lease, { [ANNOTATION.switchoverServed]: request }),
      );
    };
    const target = await this.#chooseSwitchoverTarget(request);
    if ('why' in target) return refuse(target.why);
    const { name, ip } = target;
    this.#log.info({ target: name }, 'switchover: stopping writes');
    this.#switching = true;
    this.#phase = `switching over to ${name}`;
    this.#status.wake();
    let handed = false;
    try {
      // A clean shutdown: the WAL senders send everything up to the shutdown checkpoint first.
      await this.#postgres.stop('fast', 30_000);
      const control = await readControlData(this.#pgBin, this.#config.pgdata, this.#redactor);
      if (control.state !== 'shut down') throw new Error(`postgres did not shut down cleanly (${control.state})`);
      const final = parseLsn(control.checkpointLsn) ?? Number.POSITIVE_INFINITY;
      const deadline = performance.now() + SWITCHOVER_CATCH_UP_MS;
      let received: string | undefined;
      while (performance.now() < deadline && !leadership.aborted) {
        received = (await fetchPeerStatus(ip, 1_000))?.receivedLsn;
        if ((parseLsn(received) ?? -1) > final) break;
        await sleep(50);
      }
      if (!((parseLsn(received) ?? -1) > final))
        throw new Error(
          `${name} did not receive the final WAL ${control.checkpointLsn} (it has ${received ?? 'nothing'})`,
        );
      handed = await this.#updateLease(leadership, (lease) => {
        if (lease.spec?.holderIdentity !== this.#config.podName) return undefined;
        const now = microTime();
        return {
          ...withAnnotations(lease, { [ANNOTATION.switchoverServed]: request, [ANNOTATION.syncStandbys]: null }),
          spec: {
            ...lease.spec,
            holderIdentity: name,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
          },
        };
      });
      if (!handed) throw new Error('could not hand the leader Lease over');
      const ms = Math.round(performance.now() - started);
      this.#decisions.switchover = `switched over to ${name}: writes stopped, ${name} had all WAL up to ${control.checkpointLsn}, Lease handed over after ${ms} ms`;
      this.#log.info({ target: name, ms, finalLsn: control.checkpointLsn }, 'switchover: Lease handed over');
      void this.#event(
        'Normal',
        EVENT_REASON.switchover,
        `switchover from ${this.#config.podName} to ${name} (Lease handed over in ${ms} ms)`,
      );
      this.#leaseTakenBy = name;
      this.#election?.abort();
    } catch (error) {
      const why = this.#redactor.describe(error);
      this.#log.error({ err: error, target: name }, 'switchover failed; staying primary');
      this.#decisions.switchover = `failed to switch over to ${name}: ${why}`;
      void this.#event('Warning', EVENT_REASON.switchoverRefused, `switchover to ${name} failed: ${why}`);
      await this.#updateLease(leadership, (lease) =>
        withAnnotations(lease, { [ANNOTATION.switchoverServed]: request }),
      );
      if (!leadership.aborted) {
        this.#postgres.start();
        await this.#untilAccepting(leadership);
        this.#phase = undefined;
      }
    } finally {
      if (!handed) this.#switching = false;
      this.#status.wake();
    }
  }

  async #chooseSwitchoverTarget(request: string): Promise<{ name: string; ip: string } | { why: string }> {
    const self = this.#config.podName;
    if (request === self) return { why: `${self} is the primary already` };
    const pods = await this.#clusterPods();
    const rows = await this.#db.query<{ name: string; state: string }>(
      'SELECT application_name AS name, state FROM pg_stat_replication',
    );
    const streaming = new Set(rows.filter((r) => r.state === 'streaming').map((r) => r.name));
    const [current] = await this.#db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    const { maximumLagBytes } = this.#haSpec();
    const statuses = await Promise.all(
      pods
        .filter(
          (p) => p.metadata?.name !== self && p.status?.podIP && (request === '*' || p.metadata?.name === request),
        )
        .map(async (p) => ({
          ip: p.status?.podIP as string,
          status: await fetchPeerStatus(p.status?.podIP as string),
        })),
    );
    if (request !== '*' && statuses.length === 0) return { why: `${request} is not an instance of this cluster` };
    const problems: string[] = [];
    const fit = statuses.filter(({ status }) => {
      const name = status?.name ?? request;
      const problem = !status
        ? 'its agent does not answer'
        : !status.candidate
          ? (status.candidateWhy ?? 'not a candidate')
          : !streaming.has(status.name)
            ? 'it is not streaming from this primary'
            : lsnDistance(status.receivedLsn, current?.lsn) > maximumLagBytes
              ? `it lags ${formatBytes(lsnDistance(status.receivedLsn, current?.lsn))} > ${formatBytes(maximumLagBytes)}`
              : undefined;
      if (problem) problems.push(`${name}: ${problem}`);
      return problem === undefined;
    });
    const best = fit
      .map((f) => ({ ...f, candidate: toCandidate(f.status as LiveStatus) }))
      .sort((a, b) => compareCandidates(a.candidate, b.candidate))[0];
    if (!best) return { why: problems.join('; ') || 'no replica to switch over to' };
    return { name: best.candidate.name, ip: best.ip };
  }

  // ---- replica ----------------------------------------------------------------------------------

  /** Follows the holder; resolves 'lead' once this instance holds the Lease (failover or switchover). */
  async #runFollower(signal: AbortSignal): Promise<Mode | undefined> {
    const config = this.#config;
    this.#role = ROLE.replica;
    this.#phase = 'looking for the primary';
    const slot = names.slot(config.podName);
    let following: string | undefined;
    let followedHolder: string | undefined;
    let expiredSince: number | undefined;
    let lastDecision = '';
    let noPrimary: string | undefined;
    await writeFileIfChanged(join(config.pgdata, 'standby.signal'), '');
    this.#files.setSynchronousStandbyNames('');
    while (!signal.aborted) {
      let waitMs = config.retryPeriodMs;
      if (this.#diverged) {
        const line = this.#diverged;
        this.#log.error({ line }, 'this replica has WAL the primary does not have: rewinding it');
        void this.#event(
          'Warning',
          EVENT_REASON.rewound,
          `${config.podName} diverged from the primary (${line.slice(0, 200)}); rewinding`,
        );
        this.#leaseTakenBy = holderOf(this.#lease.view);
        this.#rejoinWhy = 'diverged replica';
        return 'rejoin';
      }
      try {
        const view = this.#lease.view ?? (await this.#lease.refresh(signal));
        const holder = holderOf(view);
        // Confirmed by a fresh read: a watch stalled by a network fault must not make it lead.
        if (holder === config.podName && holderOf(await this.#lease.refresh(signal)) === config.podName) {
          this.#log.info('this instance holds the leader Lease: becoming primary');
          return 'lead';
        }
        const expired = view?.exists === true && performance.now() >= expiresAtMs(view);
        noPrimary = undefined;
        if (holder && !expired) {
          expiredSince = undefined;
          if (this.#decisions.failover?.startsWith('waiting')) this.#decisions.failover = undefined;
          const leader = await lookupLeader(this.#client, config.namespace, config.cluster, signal);
          if (leader.holder !== followedHolder) {
            followedHolder = leader.holder;
            this.#primaryLsnSeen = undefined;
          }
          this.#primaryLsn = leader.lsn;
          this.#primaryLsnSeen = maxLsn(this.#primaryLsnSeen, leader.lsn);
          const ip = leader.holder !== config.podName ? leader.podIP : undefined;
          // Without a new holder there is nothing better to follow: keep the last primary.
          if (ip && ip !== following) {
            this.#files.setPrimary(
              { host: ip, slot, passfile: this.#files.passfile, applicationName: config.podName },
              slot,
            );
            if (following)
              this.#log.info({ from: following, to: ip, leader: leader.holder }, 'following a new primary');
            following = ip;
          } else if (!following) {
            this.#files.setPrimary(undefined, slot);
          }
          // Wake just after the expiry: every ms here is a ms of RTO. Timers may fire a ms or so
          // early; the next pass then waits the rest.
          waitMs = Math.min(waitMs, Math.max(1, (view ? expiresAtMs(view) : 0) - performance.now() + 2));
        } else if (view?.exists) {
          expiredSince ??= performance.now();
          const rankingStarted = performance.now();
          const decision = await this.#considerFailover(view, holder, expiredSince, signal);
          if (decision.message !== lastDecision) {
            lastDecision = decision.message;
            this.#log.info(
              {
                decision: decision.message,
                lastHolder: holder ?? null,
                rankedInMs: Math.round(performance.now() - rankingStarted),
                expiredForMs: Math.round(performance.now() - expiresAtMs(view)),
              },
              'failover decision',
            );
            if (!decision.take)
              void this.#event('Normal', EVENT_REASON.failoverWaiting, `${config.podName}: ${decision.message}`);
          }
          this.#decisions.failover = decision.message;
          // The readiness message too: the operator shows it in the cluster's Ready condition.
          noPrimary = `no primary (the leader Lease ${holder ? `of ${holder} expired` : 'is free'}): ${decision.message}`;
          if (decision.take && (await this.#takeLease(view, holder, decision.message, signal))) return 'lead';
        }
        const changed = await this.#files.write();
        this.#filesReady = true;
        if (!this.#postgres.wanted) this.#postgres.start();
        else if (changed) this.#postgres.reload();
        this.#phase = noPrimary ?? (following ? undefined : 'no primary to follow (nobody holds the leader Lease)');
        const observed = await this.#db.observe();
        this.#primaryLsnSeen = maxLsn(this.#primaryLsnSeen, observed.senderEndLsn);
      } catch (error) {
        if (signal.aborted) break;
        this.#log.warn({ err: error }, 'cannot follow the primary; retrying');
      }
      await this.#lease.changed.wait(waitMs, signal);
    }
    return undefined;
  }

  async #considerFailover(
    view: LeaseView,
    lastHolder: string | undefined,
    expiredSince: number,
    signal: AbortSignal,
  ): Promise<{ take: boolean; message: string }> {
    const { maximumLagBytes, synchronousNumber } = this.#haSpec();
    // The peers are asked while this instance looks at itself: ranking is on the path to RTO.
    const listed = this.#clusterPods(signal);
    const asked = listed.then((pods) =>
      Promise.all(
        pods
          .filter(
            (p) => p.metadata?.name !== this.#config.podName && p.metadata?.name !== lastHolder && p.status?.podIP,
          )
          .map((p) => fetchPeerStatus(p.status?.podIP as string)),
      ),
    );
    const [pods, me, peers] = await Promise.all([listed, this.liveStatus(), asked]);
    const answered = peers.filter((p): p is LiveStatus => p !== undefined);
    let primaryLsn = this.#primaryLsnSeen;
    for (const peer of answered) primaryLsn = maxLsn(primaryLsn, peer.primaryLsnSeen);
    const holderPod = pods.find((p) => p.metadata?.name === lastHolder);
    primaryLsn = maxLsn(primaryLsn, readPodReport(holderPod)?.receivedLsn);
    this.#primaryLsnSeen = primaryLsn;
    const graceOver = performance.now() - expiredSince > this.#config.leaseDurationMs;
    return decideFailover({
      self: this.#config.podName,
      candidates: [me, ...answered].map(toCandidate),
      systemIdentifier: me.systemIdentifier,
      primaryLsn,
      maximumLagBytes,
      synchronousStandbys:
        synchronousNumber > 0 ? parseMembers(view.lease?.metadata?.annotations?.[ANNOTATION.syncStandbys]) : undefined,
      graceOver,
    });
  }

  /** Takes the expired Lease with a resourceVersion precondition; true when this instance holds it now. */
  async #takeLease(
    view: LeaseView,
    lastHolder: string | undefined,
    why: string,
    signal: AbortSignal,
  ): Promise<boolean> {
    const lease = view.lease;
    if (!lease) return false;
    const now = microTime();
    const sentAtMs = performance.now();
    try {
      const written = await this.#client.resource<Lease>('coordination.k8s.io/v1', 'Lease').update(
        {
          ...withAnnotations(lease, { [ANNOTATION.syncStandbys]: null }),
          spec: {
            ...lease.spec,
            holderIdentity: this.#config.podName,
            leaseDurationSeconds: Math.ceil(this.#config.leaseDurationMs / 1000),
            acquireTime: now,
            renewTime: now,
            leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
          },
        },
        { namespace: this.#config.namespace, signal },
      );
      this.#lease.see(written);
      this.#takenLease = { lease: written, sentAtMs };
    } catch (error) {
      if (error instanceof ConflictError) {
        this.#log.info('the leader Lease changed while taking it over; looking again');
        await this.#lease.refresh(signal).catch(() => undefined);
        return false;
      }
      throw error;
    }
    const message = `promoted: took over the leader Lease from ${lastHolder ?? 'nobody'} (${why.replace(/^taking over: /, '')})`;
    this.#decisions.failover = message;
    this.#log.warn({ from: lastHolder ?? null }, 'FAILOVER: took over the leader Lease');
    // After the promotion, not beside it: on a busy API server these requests would delay the
    // role label that clients look for. A client trying the dead Pod first is refused at once.
    this.#afterTakeover = () => {
      void this.#event('Warning', EVENT_REASON.promoted, `${this.#config.podName} ${message}`);
      void this.#relabelStalePrimaries(signal).catch((error: unknown) =>
        this.#log.warn({ err: error }, 'cannot move the primary label off the former primary'),
      );
    };
    return true;
  }

  /**
   * A dead primary's Pod keeps its role label (its agent cannot change it) and, on a node that is
   * down, stays Ready until the node controller notices: move it off, so `-primary` has only us.
   */
  async #relabelStalePrimaries(signal: AbortSignal): Promise<void> {
    for (const pod of await this.#clusterPods(signal)) {
      const name = pod.metadata?.name;
      if (!name || name === this.#config.podName || pod.metadata?.labels?.[LABEL.role] !== ROLE.primary) continue;
      await this.#client
        .resource('v1', 'Pod')
        .patch(
          name,
          { metadata: { labels: { [LABEL.role]: ROLE.replica } } },
          { namespace: this.#config.namespace, type: 'merge', signal },
        );
      this.#log.info({ pod: name }, 'moved the primary role label off the former primary');
    }
  }

  // ---- rejoin (former primary) ------------------------------------------------------------------

  /** pg_rewind from the new primary (re-clone if that fails); resolves what to run next. */
  async #rejoin(signal: AbortSignal): Promise<Mode | undefined> {
    const config = this.#config;
    this.#role = ROLE.replica;
    this.#leading = false;
    const why = this.#rejoinWhy;
    this.#rejoinWhy = 'former primary';
    this.#phase = `${why}: the leader Lease is held by ${this.#leaseTakenBy ?? 'another instance'}; rejoining as its replica`;
    this.#status.wake();
    await this.#postgres.stop('fast', 10_000);
    this.#diverged = undefined;
    // Cleanly stopped (also in recovery) is what pg_rewind needs; a crashed one has no standby.signal,
    // and pg_rewind's own crash recovery runs in single-user mode, which refuses standby mode.
    await rm(join(config.pgdata, 'standby.signal'), { force: true });
    let leader: Awaited<ReturnType<typeof lookupLeader>> | undefined;
    while (!signal.aborted) {
      try {
        leader = await lookupLeader(this.#client, config.namespace, config.cluster, signal);
        if (leader.holder === config.podName) return 'lead';
        if (leader.holder && leader.podIP && leader.ready) break;
        this.#phase = `${why}: waiting for the new primary ${leader.holder ?? '(none)'} to be ready`;
      } catch (error) {
        if (signal.aborted) return undefined;
        this.#log.warn({ err: error }, 'cannot look up the new primary; retrying');
      }
      await sleep(config.retryPeriodMs, undefined, { signal }).catch(() => undefined);
    }
    if (signal.aborted || !leader?.podIP || !leader.holder) return undefined;
    const from = leader.holder;
    this.#phase = `${why}: rewinding from ${from} (pg_rewind)`;
    this.#status.wake();
    try {
      const result = await rewind({
        pgBin: this.#pgBin,
        pgdata: config.pgdata,
        host: leader.podIP,
        superuserPassword: config.superuserPassword,
        log: this.#log.child({ component: 'pg_rewind' }),
        redactor: this.#redactor,
      });
      this.#decisions.rejoin = result.needed
        ? `pg_rewind: rewound from ${from} in ${result.ms} ms`
        : `pg_rewind: no rewind required (its WAL is part of ${from}'s history)`;
      this.#log.info({ from, ...result }, 'rejoining as a replica after pg_rewind');
      void this.#event(
        'Normal',
        EVENT_REASON.rewound,
        `${config.podName} rejoins as a replica of ${from}: ${this.#decisions.rejoin}`,
      );
    } catch (error) {
      const why = this.#redactor.describe(error).slice(0, 300);
      this.#log.error({ err: error, from }, 'pg_rewind failed; cloning the new primary instead');
      void this.#event(
        'Warning',
        EVENT_REASON.rewindFailed,
        `${config.podName}: pg_rewind from ${from} failed: ${why}`,
      );
      const aside = await setAside(config.pgdata);
      this.#phase = `${why}: re-cloning ${from} (pg_rewind failed)`;
      if (!(await this.#cloneFromPrimary(signal))) return undefined;
      this.#decisions.rejoin = `re-cloned from ${from}: pg_rewind failed (${why}); the diverged data directory is kept at ${aside}`;
      void this.#event('Warning', EVENT_REASON.recloned, `${config.podName}: ${this.#decisions.rejoin}`);
    }
    // pg_rewind copies the source's configuration files: the agent's own go back before the start.
    this.#files.setPrimary(undefined, names.slot(config.podName));
    return 'follow';
  }

  // ---- cluster object and configuration ---------------------------------------------------------

  #haSpec(): HaSpec {
    return readHaSpec((this.#cluster as { spec?: unknown } | undefined)?.spec);
  }

  #watchCluster(signal: AbortSignal): Promise<void> {
    return watchObject<KubeObject>({
      resource: this.#client.resource<KubeObject>(API_VERSION, KIND),
      namespace: this.#config.namespace,
      name: this.#config.cluster,
      log: this.#log,
      signal,
      onChange: (cluster) => {
        this.#cluster = cluster;
        this.#usersDue = true;
        this.#primaryWakeup.wake();
      },
    });
  }

  async #clusterPods(signal?: AbortSignal): Promise<Pod[]> {
    const list = await this.#client
      .resource<Pod>('v1', 'Pod')
      .list({ namespace: this.#config.namespace, labelSelector: { [LABEL.cluster]: this.#config.cluster }, signal });
    return list.items;
  }

  /** Read-modify-write of the Lease with its resourceVersion as precondition; `edit` returns undefined to give up. */
  async #updateLease(signal: AbortSignal, edit: (lease: Lease) => Lease | undefined): Promise<boolean> {
    const leases = this.#client.resource<Lease>('coordination.k8s.io/v1', 'Lease');
    for (let attempt = 0; attempt < 5 && !signal.aborted; attempt++) {
      try {
        const current = await leases.get(names.leaderLease(this.#config.cluster), {
          namespace: this.#config.namespace,
          signal,
        });
        const next = edit(current);
        if (!next) return false;
        this.#lease.see(await leases.update(next, { namespace: this.#config.namespace, signal }));
        return true;
      } catch (error) {
        if (!(error instanceof ConflictError)) {
          this.#log.warn({ err: error }, 'cannot update the leader Lease');
          return false;
        }
      }
    }
    return false;
  }

  /** An Event about the cluster (about this Pod until the cluster is known). Best effort. */
  async #event(type: 'Normal' | 'Warning', reason: string, note: string): Promise<void> {
    const regarding: KubeObject = this.#cluster ?? {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: this.#config.podName, namespace: this.#config.namespace },
    };
    await this.#events.record(regarding, type, reason, note);
  }

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
      await sleep(100, undefined, { signal }).catch(() => undefined);
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

function toCandidate(status: LiveStatus): Candidate {
  return {
    name: status.name,
    eligible: status.candidate,
    ...(status.candidateWhy ? { why: status.candidateWhy } : {}),
    systemIdentifier: status.systemIdentifier,
    timeline: status.timeline,
    // A restarted WAL receiver reports from the start of its segment until it streams again.
    receivedLsn: maxLsn(status.receivedLsn, status.replayedLsn) ?? status.receivedLsn,
    replayedLsn: status.replayedLsn,
  };
}

function readPodReport(pod: Pod | undefined): InstanceReport | undefined {
  const raw = pod?.metadata?.annotations?.[ANNOTATION.status];
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as InstanceReport;
  } catch {
    return undefined;
  }
}

/** The Lease with annotations set (null removes one). */
function withAnnotations(lease: Lease, changes: Record<string, string | null>): Lease {
  const annotations = { ...(lease.metadata?.annotations ?? {}) };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  return { ...lease, metadata: { ...lease.metadata, annotations } };
}
