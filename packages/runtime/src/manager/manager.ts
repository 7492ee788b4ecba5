/**
 * The manager: runs many controllers on shared caches, elects a leader on a Lease, serves
 * /healthz, /readyz and /metrics, and shuts down gracefully.
 *
 * Start-up: health server → webhook server (optional) → caches (all replicas keep warm caches, so a new leader starts at
 * once) → leader election → controllers. On SIGTERM or SIGINT (or `stop()`): controllers take no
 * new work and finish the reconciles in flight, the Lease is released so another replica takes
 * over within moments, the caches and the server close, and `start()` resolves, letting the
 * process exit 0. Losing the Lease stops the controllers, which resume if it is won back.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { KubeClient as Client, type KubeClient, type KubeObject } from '@kanri/client';
import type { Registry } from 'prom-client';
import { ControllerRunner } from '../controller/controller-runner.js';
import type { ControllerDefinition } from '../controller/definition.js';
import { EventRecorder } from '../helpers/event-recorder.js';
import { type CacheOptions, InformerPool } from '../informers/informer-pool.js';
import { LeaderElector } from '../leader/leader-election.js';
import { createLogger, type Logger } from '../logger.js';
import { RuntimeMetrics } from '../metrics/runtime-metrics.js';
import { type WebhookOptions, WebhookRunner } from '../webhook/webhook-runner.js';
import { startHealthServer } from './health-server.js';

export interface LeaderElectionConfig {
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Lease name. Default: `<manager name>-leader`. */
  readonly name?: string;
  readonly identity?: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

export interface ManagerOptions {
  /** Default: `KubeClient.load()` (KUBECONFIG, ~/.kube/config or in-cluster). */
  readonly client?: KubeClient;
  /** Names the operator in field managers, Events and the default Lease. Default `kanri`. */
  readonly name?: string;
  /** Watch only this namespace (namespace-scoped operators); default all namespaces. */
  readonly namespace?: string;
  /** What the informers hold per kind (a label selector for Secrets, say); default everything. */
  readonly cache?: CacheOptions;
  /** Off unless given: a single replica needs no election. */
  readonly leaderElection?: LeaderElectionConfig;
  /** Where /healthz, /readyz and /metrics listen; `host:port`. Default `:8080`. `false` disables. */
  readonly bindAddress?: string | false;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** Stop gracefully on SIGTERM and SIGINT. Default true. */
  readonly handleSignals?: boolean;
  /** How long shutdown waits for reconciles in flight before aborting their signals. Default 30 s. */
  readonly gracefulShutdownMs?: number;
  /**
   * Serve admission webhooks (today the CRD deletion guard) over HTTPS on every replica, with a
   * generated certificate whose CA the manager sets in its ValidatingWebhookConfiguration. Off unless given.
   */
  readonly webhook?: WebhookOptions;
}

export class Manager {
  readonly client: KubeClient;
  readonly name: string;
  readonly metrics: RuntimeMetrics;
  readonly logger: Logger;
  readonly informers: InformerPool;
  readonly identity: string;
  /** The admission webhook server, when `webhook` is configured. */
  readonly webhooks: WebhookRunner | undefined;
  readonly #options: ManagerOptions;
  readonly #runners: ControllerRunner<KubeObject>[] = [];
  readonly #recorder: EventRecorder;
  readonly #stopping = new AbortController();
  #server: Server | undefined;
  #port: number | undefined;
  #leading = false;

  constructor(client: KubeClient, options: ManagerOptions = {}) {
    this.client = client;
    this.#options = options;
    this.name = options.name ?? 'kanri';
    this.logger = options.logger ?? createLogger(this.name);
    this.metrics = new RuntimeMetrics(options.registry);
    this.informers = new InformerPool(client, options.namespace, this.metrics, this.logger, options.cache);
    this.identity =
      options.leaderElection?.identity ?? `${hostname()}_${process.pid}_${randomBytes(4).toString('hex')}`;
    this.webhooks = options.webhook ? new WebhookRunner(client, options.webhook, this.name, this.logger) : undefined;
    this.#recorder = new EventRecorder({
      client,
      controller: `kanri.dev/${this.name}`,
      instance: this.identity,
      logger: this.logger,
    });
  }

  /** Creates a manager, loading the kubeconfig unless a client is given. */
  static async create(options: ManagerOptions = {}): Promise<Manager> {
    return new Manager(options.client ?? (await Client.load()), options);
  }

  /** Adds a controller built with `controller(…)…reconcile(…)`. */
  add<T extends KubeObject>(definition: ControllerDefinition<T>): this {
    this.#runners.push(
      new ControllerRunner(definition, {
        client: this.client,
        informers: this.informers,
        metrics: this.metrics,
        logger: this.logger,
        recorder: this.#recorder,
        fieldManagerPrefix: `${this.name}/`,
      }) as unknown as ControllerRunner<KubeObject>,
    );
    return this;
  }

  /** True once every cache holds a complete list. */
  get ready(): boolean {
    return this.informers.synced;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** The port of the health and metrics server, once started. */
  get port(): number | undefined {
    return this.#port;
  }

  /** Runs until `stop()` or a signal; resolves after a graceful shutdown. Never rejects on watch or reconcile errors. */
  async start(): Promise<void> {
    const signal = this.#stopping.signal;
    const onSignal = (name: NodeJS.Signals) => {
      this.logger.info({ signal: name }, 'shutting down');
      this.#stopping.abort();
    };
    if (this.#options.handleSignals ?? true) {
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    }
    try {
      if (this.#options.bindAddress !== false) {
        const started = await startHealthServer({
          bindAddress: this.#options.bindAddress ?? ':8080',
          ready: () => this.ready,
          registry: this.metrics.registry,
        });
        this.#server = started.server;
        this.#port = started.port;
        this.logger.info({ port: started.port }, 'serving /healthz, /readyz and /metrics');
      }
      // Every replica serves webhooks, leader or not: the API server may call any of them.
      await this.webhooks?.start(signal).catch((error: unknown) => {
        if (!signal.aborted) throw error;
      });
      this.informers.start();
      await this.informers.waitForSync(signal).catch(() => {});
      if (signal.aborted) return;
      this.logger.info({ controllers: this.#runners.map((r) => r.definition.name) }, 'caches synced');
      const election = this.#options.leaderElection;
      if (!election) {
        this.#lead();
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        await this.#follow();
        return;
      }
      const elector = new LeaderElector({
        client: this.client,
        namespace: election.namespace,
        name: election.name ?? `${this.name}-leader`,
        identity: this.identity,
        leaseDurationMs: election.leaseDurationMs,
        renewDeadlineMs: election.renewDeadlineMs,
        retryPeriodMs: election.retryPeriodMs,
        logger: this.logger,
        onStartedLeading: async (lost) => {
          this.#lead();
          // Releasing the Lease (shutdown) lets the reconciles in flight finish first: the elector
          // releases only once they drained, so a successor never reconciles alongside our last laps.
          // Losing it means a successor may already lead: everything stops at once (the reconciles'
          // signals abort, their writes fail, nothing waiting starts). They restart if it is won again.
          await new Promise<void>((resolve) => lost.addEventListener('abort', () => resolve(), { once: true }));
          await this.#follow({ abandon: !signal.aborted });
        },
        onNewLeader: (leader) => this.logger.info({ leader }, 'leader observed'),
      });
      // On `signal` the elector aborts `lost`, waits for the drain above, then releases the Lease.
      await elector.run(signal);
      await this.#follow();
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      await this.informers.stop();
      await this.webhooks?.stop();
      await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
      this.#server?.closeAllConnections();
      this.logger.info('stopped');
    }
  }

  #lead(): void {
    this.#leading = true;
    this.logger.info({ identity: this.identity }, 'leading: starting controllers');
    for (const runner of this.#runners) runner.start();
  }

  async #follow(options: { abandon?: boolean } = {}): Promise<void> {
    if (!this.#leading) return;
    this.#leading = false;
    if (options.abandon) this.logger.warn('lost the leader Lease: stopping every reconcile at once');
    await Promise.all(this.#runners.map((r) => r.stop(this.#options.gracefulShutdownMs, options)));
  }

  /** Begins a graceful shutdown; `start()` resolves when it is done. */
  stop(): void {
    this.#stopping.abort();
  }
}
