/**
 * The instance agent: bootstraps PGDATA, runs postgres as primary (while holding the leader Lease)
 * or as a streaming replica of the Lease holder, keeps its configuration in step with the
 * operator's ConfigMap, and reports on its own Pod. Without the operator it also fails over,
 * rejoins a former primary with pg_rewind, serves planned switchovers, and keeps synchronous standbys.
 *
 * Shape: one cycle. It boots, then runs one role at a time (roles/primary, roles/replica,
 * roles/rejoin); each role observes the cached cluster view, decides with the pure planners in
 * plan/, acts through the folders named after what they talk to (postgres/, peers/, backups/,
 * reporting/), and ends by naming the next role. `AgentStateStore` owns the agent's state; the
 * status reporter and the peer API read snapshots of it.
 *
 * Guarantees: postgres runs as primary only inside a leadership of the Lease, and is stopped when
 * the Lease cannot be renewed before the renew deadline (fencing), which is strictly before any
 * replica can see it expire; the keeper, which runs postgres, stops it at that deadline too if
 * this agent is stalled or dead (keeper/keeper.ts). A restarted agent adopts the postgres its
 * keeper kept running when that is safe (roles/adopt.ts). API errors are logged and retried,
 * never fatal. On stop, the primary stops postgres before it releases the Lease.
 */
import { mkdir, rmdir } from 'node:fs/promises';
import type { KubeClient } from '@kanri/client';
import { Wakeup } from '@kanri/timing';
import {
  EVENT_REASON,
  type FailsafeAnswer,
  type FailsafeRequest,
  type LiveStatus,
  names,
  ROLE,
  readPodReport,
} from '../contract/index.js';
import { BackupsState } from './backups/backups-state.js';
import { startControlServer } from './backups/control-server.js';
import { PgBackRest } from './backups/pgbackrest.js';
import { PgBackRestServerProcess } from './backups/pgbackrest-server.js';
import { runInstanceTlsServer } from './backups/tls-server.js';
import { ClusterView } from './cluster-view.js';
import type { AgentConfig } from './config.js';
import { ConfigFollower } from './config-follower.js';
import type { AgentContext, Transition } from './context.js';
import { KeeperLink } from './keeper/keeper-link.js';
import type { WatchdogStatus } from './keeper/protocol.js';
import type { Logger } from './log/logger.js';
import type { Redactor } from './log/redactor.js';
import { type HealthSource, peerApiHandler } from './peers/http-server.js';
import { PeerClient } from './peers/peer-client.js';
import { PeerIdentity } from './peers/peer-identity.js';
import { decideArchivePermit } from './plan/archive-plan.js';
import { QuickRetry } from './plan/leadership/quick-retry.js';
import { buildReport } from './plan/report.js';
import { WalRemovedWatch } from './plan/wal-removed-watch.js';
import { DiskWatch } from './postgres/disk-watch.js';
import { InstanceFiles } from './postgres/instance-files.js';
import { LocalDb } from './postgres/local-db.js';
import { PostgresProcess } from './postgres/postgres-process.js';
import { readControlData } from './postgres/rewind.js';
import { AgentEvents } from './reporting/agent-events.js';
import type { AgentMetrics } from './reporting/metrics.js';
import { StatusReporter } from './reporting/status-reporter.js';
import { PostgresRequests } from './requests/postgres-requests.js';
import { followRestartRequests } from './requests/restart-follower.js';
import { boot } from './roles/boot.js';
import { answerVouch } from './roles/failsafe.js';
import { runPrimary } from './roles/primary.js';
import { runRejoin } from './roles/rejoin.js';
import { runReplica } from './roles/replica.js';
import { waitForMaterial } from './start-gate.js';
import { AgentStateStore } from './state.js';
import { TlsFollower } from './tls-follower.js';

export interface AgentOptions {
  readonly config: AgentConfig;
  /** Resolved directory of postgres's programs. */
  readonly pgBin: string;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly redactor: Redactor;
  readonly metrics: AgentMetrics;
  /** The channel to the keeper that runs postgres; by default this process's IPC channel. */
  readonly keeper?: KeeperLink;
}

/** What a standby logs when its WAL went further than the primary's history: it must be rewound. */
const DIVERGED =
  /forked off current database system timeline \d+ before current recovery point|is ahead of the WAL flush position of this server|is not a child of this server's history/;

/** How long after a refusal that lasts only moments the agent makes postgres ask again (plan/leadership/quick-retry.ts). */
const WAL_RETRY_SOON_MS = 100;

/** A line of postgres saying it gives up (a recovery target it cannot reach, say). */
const FATAL = /\b(FATAL|PANIC): /;
const CONFIG_ERRORS = /FATAL: +configuration file .* contains errors/;
/** The timestamp, PID and severity postgres puts before a message. */
const LINE_PREFIX = /^.*?\b(LOG|WARNING|ERROR|FATAL|PANIC): +/;
/** postgres's routine progress: never the reason it exited. */
const LOG_LINE = /\b(LOG|DEBUG\d?|INFO|NOTICE|DETAIL|HINT|CONTEXT): /;
/** What postgres tells clients that connect too early: not a failure of the server. */
const CONNECTION_REFUSAL =
  /the database system is (starting up|not yet accepting connections|shutting down|in recovery mode)/;

/** How long a start waits for its caches (configuration, Pods, Lease) before booting without them. */
const CONFIG_WAIT_MS = 10_000;

/**
 * @example
 * ```ts
 * const agent = new InstanceAgent({ config, pgBin, client, log, redactor, metrics });
 * await startHttpServer(config.podIP, PORT.agent, agent, metrics.registry);
 * await agent.run(stop.signal);
 * ```
 */
export class InstanceAgent implements HealthSource {
  readonly #ctx: AgentContext;
  readonly #status: StatusReporter;
  readonly #tls: TlsFollower;

  constructor(options: AgentOptions) {
    const { config, client, log } = options;
    const state = new AgentStateStore(() => this.#status.wake());
    const identity = PeerIdentity.kept(config.runDir);
    const divergence: { line: string | undefined } = { line: undefined };
    const walRemoved = new WalRemovedWatch();
    const quickRetry = new QuickRetry();
    const lastFatal: { line: string | undefined } = { line: undefined };
    let previous: string | undefined;
    const disk = new DiskWatch({
      path: config.dataDir,
      log,
      onChange: (full) =>
        this.#ctx.events.record(
          full ? 'Warning' : 'Normal',
          EVENT_REASON.diskFull,
          `${config.podName}: ${full ?? 'the data volume has room again'}`,
        ),
    });
    const postgres = new PostgresProcess({
      keeper: options.keeper ?? new KeeperLink(),
      pgBin: options.pgBin,
      pgdata: config.pgdata,
      log: log.child({ component: 'postgres' }),
      onCrash: (lastLines) => {
        options.metrics.crashes.inc();
        // Without a FATAL line, the last line that is not routine progress says why it exited.
        lastFatal.line ??= lastLines.findLast((l) => !LOG_LINE.test(l));
      },
      onLine: (line) => {
        disk.seeLine(line);
        // "configuration file … contains errors" names no setting: the line before it does.
        if (FATAL.test(line) && !CONNECTION_REFUSAL.test(line))
          lastFatal.line =
            CONFIG_ERRORS.test(line) && previous ? `${line}: ${previous.replace(LINE_PREFIX, '')}` : line;
        previous = line;
        if (state.snapshot().mode === 'follow' && DIVERGED.test(line)) divergence.line ??= line;
        const now = performance.now();
        // Not a request to the cycle (postgres-requests.ts): it changes no configuration, only
        // wakes the WAL receiver, and is worth it only within moments of the line, not a lap later.
        if (state.snapshot().mode === 'follow' && quickRetry.wanted(line, walRemoved.see(line, now), now))
          setTimeout(() => void db.query('SELECT pg_reload_conf()').catch(() => undefined), WAL_RETRY_SOON_MS);
      },
    });
    const db = new LocalDb(config.socketDir, log);
    const view = new ClusterView(client, config, log);
    const backups = new BackupsState();
    const primaryWakeup = new Wakeup();
    // Whichever role runs: the primary's tasks wait on primaryWakeup, the replica's laps on the
    // Lease's changes (a lap more costs it nothing). A wake-up nobody waits for is kept for the
    // next wait, so the other role's first lap may come at once: harmless too.
    const requests = new PostgresRequests(() => {
      primaryWakeup.wake();
      view.lease.changed.wake();
    });
    this.#ctx = {
      config,
      pgBin: options.pgBin,
      client,
      log,
      redactor: options.redactor,
      postgres,
      db,
      files: new InstanceFiles(config, log),
      view,
      state,
      events: new AgentEvents(client, config, log, () => view.cluster),
      leaseRef: { client, namespace: config.namespace, name: names.leaderLease(config.cluster) },
      requests,
      primaryWakeup,
      divergence,
      walRemoved,
      lastFatal,
      pgbackrest: new PgBackRest(config, log.child({ component: 'pgbackrest' }), options.redactor),
      backups,
      peers: new PeerClient(),
      liveStatus: () => this.liveStatus(),
      diskFull: () => disk.check(),
    };
    this.#tls = new TlsFollower(this.#ctx, peerApiHandler(this), identity);
    this.#status = new StatusReporter({
      config,
      client,
      db,
      postgres,
      metrics: options.metrics,
      log,
      state: () => state.snapshot(),
      backups: () => backups,
      controlLimits: async () => (await readControlData(options.pgBin, config.pgdata, options.redactor)).limits,
      diskFull: this.#ctx.diskFull,
      dataVolume: () => disk.volume,
      peerKey: identity.publicKeyPem,
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
    const { postgres, db, state, config } = this.#ctx;
    const observation = postgres.running ? await db.observe() : { connected: false };
    const now = state.snapshot();
    const report = buildReport({
      role: now.role ?? ROLE.replica,
      leading: now.leading,
      observation,
      primaryLsn: now.primaryLsn,
      phaseMessage: now.stopping ? 'shutting down' : now.phase,
      now: new Date(),
    });
    let why: string | undefined;
    if (now.stopping) why = 'shutting down';
    else if (now.mode !== 'follow') why = `not following (${now.mode ?? 'starting'})`;
    else if (!observation.connected) why = 'postgres is not accepting connections';
    else if (!observation.inRecovery) why = 'postgres is not in recovery';
    state.seePrimaryLsn(observation.senderEndLsn);
    const primaryLsnSeen = state.snapshot().primaryLsnSeen;
    return {
      ...report,
      name: config.podName,
      candidate: why === undefined,
      ...(why ? { candidateWhy: why } : {}),
      ...(primaryLsnSeen ? { primaryLsnSeen } : {}),
      receiverStatus: observation.receiverStatus ?? null,
    };
  }

  /** A primary that cannot reach the API server asks this member to vouch for it (POST /failsafe). */
  vouch(request: FailsafeRequest): FailsafeAnswer {
    return answerVouch(this.#ctx, request);
  }

  /** Runs until `signal` aborts; then stops postgres (and releases the Lease if it held it). */
  async run(signal: AbortSignal): Promise<void> {
    const { config, view, postgres, db, state, log } = this.#ctx;
    // A postgres still running was kept by the keeper across a restart of this agent: boot decides
    // whether to adopt it (roles/adopt.ts).
    const kept = await postgres.attach();
    log.info({ postgresPid: postgres.pid ?? null, watchdog: kept.watchdog }, 'attached to the keeper');
    await mkdir(config.runDir, { recursive: true, mode: 0o700 });
    await mkdir(config.socketDir, { recursive: true, mode: 0o700 });
    view.start();
    const control = await startControlServer(config.agentSocket, {
      archivePermit: () => {
        const { backups } = this.#ctx;
        return decideArchivePermit({
          specKnown: view.spec !== undefined,
          // Declared but unusable repos keep WAL (refused, postgres retries), never dropped unseen.
          archiving: (view.spec?.backups?.pgbackrest?.repos.length ?? 0) > 0,
          leading: state.snapshot().leading,
          stanzaReady: backups.stanzaReady,
          bin: config.pgbackrestBin,
          args: backups.target?.args,
        });
      },
      archiveResult: (outcome) => {
        const droppedBefore = this.#ctx.backups.walDropped;
        this.#ctx.backups.seeArchiveOutcome(outcome);
        if (outcome.dropped && !droppedBefore) {
          const note = `pgBackRest dropped WAL from ${outcome.wal} on (archive-push-queue-max exceeded): point-in-time recovery cannot cross this gap; take a new full backup`;
          this.#ctx.log.error({ wal: outcome.wal, reason: outcome.dropped }, note);
          this.#ctx.events.record('Warning', 'WALDropped', note);
        }
        if (!outcome.ok) this.#ctx.log.warn({ wal: outcome.wal, reason: outcome.reason }, 'WAL archiving failed');
      },
    });
    const configFollower = new ConfigFollower(this.#ctx);
    const unfollow = await configFollower.follow();
    const unfollowRestarts = followRestartRequests(this.#ctx);
    let unfollowTls = () => {};
    const status = this.#status.run(signal);
    // For the agent's whole life, whatever the role: a volume repo's backups reach the primary
    // through it, and a replica promoted later serves at once.
    const tlsStop = new AbortController();
    const tlsServer = runInstanceTlsServer(
      this.#ctx,
      new PgBackRestServerProcess(config.pgbackrestBin, this.#ctx.log, this.#ctx.redactor),
      AbortSignal.any([signal, tlsStop.signal]),
    );
    try {
      // A slow cache of the Pods or the Lease delays the start by at most this much; the
      // configuration and the TLS material are waited for without a limit (start-gate.ts).
      await Promise.race([
        Promise.all([view.waitForConfig(signal), view.waitForMembers(signal)]),
        new Promise((resolve) => setTimeout(resolve, CONFIG_WAIT_MS).unref()),
      ]);
      // Nothing is reported before boot: the last agent's report on this Pod is still there.
      state.recallServed(readPodReport(view.pod(config.podName)));
      unfollowTls = await this.#tls.follow();
      await waitForMaterial(this.#ctx, { config: () => configFollower.missing, tls: () => this.#tls.missing }, signal);
      if (!signal.aborted) await this.#cycle(signal, kept.watchdog);
    } finally {
      state.stopped();
      await postgres.stop('fast');
      postgres.disarmWatchdog();
      await status;
      tlsStop.abort();
      await tlsServer;
      this.#tls.close();
      unfollowTls();
      unfollow();
      unfollowRestarts();
      control.close();
      await view.stop();
      await this.#status.report(true).catch(() => undefined);
      await db.close().catch(() => undefined);
      // A fallback socket directory under /tmp outlives the Pod otherwise; rmdir leaves it if not empty.
      if (config.socketDir !== config.runDir) await rmdir(config.socketDir).catch(() => undefined);
    }
  }

  /** False once the peer API is served over mutual TLS: plain HTTP then answers only probes and metrics. */
  peerApiOverPlainHttp(): boolean {
    return this.#tls.peerApiOverPlainHttp;
  }

  /** Marks the instance not ready at once (before postgres is stopped). */
  beginShutdown(): void {
    this.#ctx.state.beginStopping();
  }

  /** Boot, then one role after another, each naming the next. */
  async #cycle(signal: AbortSignal, watchdog: WatchdogStatus): Promise<void> {
    const ctx = this.#ctx;
    let next: Transition | undefined = await boot(ctx, signal, watchdog);
    while (next && !signal.aborted) {
      const current: Transition = next;
      switch (current.mode) {
        case 'lead':
          next = await runPrimary(ctx, signal, current);
          break;
        case 'follow':
          next = await runReplica(ctx, signal);
          break;
        case 'rejoin':
          next = await runRejoin(ctx, signal, current);
          break;
      }
    }
  }
}
