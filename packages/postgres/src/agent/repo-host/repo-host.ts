/**
 * The repo host (contract/repo-host.ts): serves the cluster's volume repos over pgBackRest's TLS
 * server, and runs the cluster's PostgresBackups against the primary (the Lease holder), reaching
 * its PGDATA through the primary's own TLS server.
 *
 * Guarantees: it backs up only a primary that holds the Lease, has published its server and has
 * created the stanza; a backup cut short (the agent stopping) ends Failed (backup-runner.ts); one
 * that runs while the primary reports every push failing for 60 s is stopped, as on the primary.
 */
import { mkdir, readFile } from 'node:fs/promises';
import type { KubeClient } from '@kanri/client';
import { holderOf } from '@kanri/runtime';
import { Wakeup } from '@kanri/timing';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  archiveStalled,
  buildPgBackRestServerConf,
  hasVolumeRepo,
  PGBACKREST_CLONE_PORT,
  type PgBackRestSpec,
  type PgBackRestTlsFiles,
  type RemotePg,
  readCloneGrants,
  readPodReport,
  readServerInfo,
  recordedRepoPaths,
  repoVolumePath,
  splitPeerCertificate,
} from '../../contract/index.js';
import { BackupQueue } from '../backups/backup-runner.js';
import { PgBackRest } from '../backups/pgbackrest.js';
import { PgBackRestServerProcess } from '../backups/pgbackrest-server.js';
import { usableSpec } from '../backups/primary-backups.js';
import { podKey, runTlsServer, serverDirs } from '../backups/tls-server.js';
import { ClusterView } from '../cluster-view.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import { resolveMountPath } from '../mounts.js';
import type { HealthSource } from '../peers/http-server.js';
import { AgentEvents } from '../reporting/agent-events.js';
import { CloneGateway } from './clone-gateway.js';
import type { RepoHostConfig } from './repo-host-config.js';

const PERIOD_MS = 5_000;

/** Each volume repo's path on this host: its PVC's mount. */
export function volumeRepoPaths(spec: PgBackRestSpec): Record<string, string> {
  const paths: Record<string, string> = {};
  for (const repo of spec.repos)
    if (repo.volume !== undefined) paths[repo.name] = resolveMountPath(repoVolumePath(repo.name));
  return paths;
}

export interface RepoHostOptions {
  readonly config: RepoHostConfig;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly redactor: Redactor;
}

/**
 * @example
 * ```ts
 * const host = new RepoHost({ config: loadRepoHostConfig(process.env), client, log, redactor });
 * await startHttpServer(config.podIP, PORT.agent, host, registry);
 * await host.run(stop.signal);
 * ```
 */
export class RepoHost implements HealthSource {
  readonly #options: RepoHostOptions;
  readonly #view: ClusterView;
  readonly #server: PgBackRestServerProcess;
  readonly #pgbackrest: PgBackRest;
  #gateway: CloneGateway | undefined;
  #clonePort: Promise<void> = Promise.resolve();
  #waiting: string | undefined = 'starting';

  constructor(options: RepoHostOptions) {
    this.#options = options;
    // No PostgreSQL TLS Secret: the repo host holds no database, and its Role reads no Secret.
    this.#view = new ClusterView(options.client, options.config, options.log, { postgresTls: false });
    this.#server = new PgBackRestServerProcess(options.config.pgbackrestBin, options.log, options.redactor);
    this.#pgbackrest = new PgBackRest(options.config, options.log.child({ component: 'pgbackrest' }), options.redactor);
  }

  /** The clone port serves with this Pod's certificate while it has one (a volume repo declared). */
  async #serveClones(tls: PgBackRestTlsFiles | undefined): Promise<void> {
    if (!tls) return this.#gateway?.stop();
    const { config, log } = this.#options;
    const own = () => this.#view.pod(config.podName)?.metadata?.annotations;
    this.#gateway ??= new CloneGateway(
      {
        repoPaths: () => {
          const spec = this.#view.spec?.backups?.pgbackrest;
          return spec ? volumeRepoPaths(spec) : {};
        },
        grants: () => readCloneGrants(own()),
        ca: () => splitPeerCertificate(own()?.[ANNOTATION_PGBACKREST_CERTIFICATE]).ca,
      },
      podKey(config.runDir),
      log.child({ component: 'clone-port' }),
    );
    const [cert, key] = await Promise.all([readFile(tls.cert, 'utf8'), readFile(tls.key, 'utf8')]);
    await this.#gateway.ensure(config.podIP, PGBACKREST_CLONE_PORT, { cert, key });
  }

  health(): string | null {
    return null;
  }

  /** Ready once its server serves the repos. */
  readiness(): string | null {
    return this.#server.running ? null : (this.#waiting ?? 'the pgBackRest TLS server is not running');
  }

  async run(signal: AbortSignal): Promise<void> {
    const { config, client, log } = this.#options;
    await mkdir(config.runDir, { recursive: true, mode: 0o700 });
    this.#view.start();
    try {
      await this.#view.waitForConfig(signal);
      await Promise.all([
        runTlsServer(
          {
            client,
            log: log.child({ component: 'pgbackrest-server' }),
            identity: config,
            runDir: config.runDir,
            view: this.#view,
            server: this.#server,
            serverConf: (tls, spec) => {
              const repoPaths = volumeRepoPaths(spec);
              return {
                text: buildPgBackRestServerConf({
                  cluster: config.cluster,
                  address: config.podIP,
                  tls,
                  ...serverDirs(config.runDir),
                  repoPaths,
                }),
                info: { repoPaths },
              };
            },
            onTls: (tls) => {
              this.#pgbackrest.tls = tls;
              // One change at a time: a server still starting is never started twice.
              this.#clonePort = this.#clonePort
                .then(() => this.#serveClones(tls))
                .catch((error: unknown) => log.warn({ err: error }, 'cannot serve the clone port; retrying'));
            },
          },
          signal,
        ),
        this.#runBackups(signal),
      ]);
    } finally {
      await this.#clonePort;
      await this.#gateway?.stop();
      await this.#view.stop();
    }
  }

  /** The primary to back up, once it can be: why not otherwise. */
  #primary(): RemotePg | string {
    const holder = holderOf(this.#view.lease.view);
    if (!holder) return 'no primary holds the leader Lease';
    const pod = this.#view.pod(holder);
    const info = readServerInfo(pod);
    const address = pod?.status?.podIP;
    if (!address || !info?.pgPath || !info.socketPath || info.port === undefined)
      return `the primary ${holder} has not published its pgBackRest TLS server yet`;
    if (readPodReport(pod)?.backups?.stanza !== 'created')
      return `the primary ${holder} has not created the stanza yet`;
    return { address, config: info.config, pgPath: info.pgPath, socketPath: info.socketPath, port: info.port };
  }

  async #runBackups(signal: AbortSignal): Promise<void> {
    const { config, client, log } = this.#options;
    const view = this.#view;
    const wakeup = new Wakeup();
    const offCluster = view.onClusterChange(() => wakeup.wake());
    const offPods = view.onPodsChange(() => wakeup.wake());
    const queue = new BackupQueue({
      client,
      namespace: config.namespace,
      cluster: config.cluster,
      podName: config.podName,
      log,
      events: new AgentEvents(client, config, log, () => view.cluster),
      pgbackrest: this.#pgbackrest,
      // The primary reports its archive on its Pod (every ~10 s): a backup stalls on the same rule there.
      archiveStalled: (startedAt, ms) =>
        archiveStalled(readPodReport(view.pod(holderOf(view.lease.view) ?? ''))?.backups?.archive, startedAt, ms),
      wakeup,
    });
    let said: string | undefined;
    try {
      while (!signal.aborted) {
        let busy = false;
        try {
          const { usable } = usableSpec(view.spec?.backups?.pgbackrest);
          const tls = this.#pgbackrest.tls;
          const primary = this.#primary();
          this.#waiting = !usable || !hasVolumeRepo(usable) ? 'the spec declares no volume repo' : undefined;
          const why =
            this.#waiting ??
            (!tls ? 'no certificate for this Pod yet' : typeof primary === 'string' ? primary : undefined);
          if (why !== said) log.info({ waiting: why ?? null }, why ? 'backups wait' : 'backups can run');
          said = why;
          if (usable && tls && typeof primary !== 'string' && why === undefined) {
            const { unreachable } = await this.#pgbackrest.write(usable, {
              storedAt: recordedRepoPaths(view.cluster) ?? {},
              volume: { repoPaths: volumeRepoPaths(usable), tls },
              pgHost: primary,
            });
            // A cloud repo whose path the operator has not recorded yet: no backup until it has.
            if (unreachable.length > 0) log.info({ repos: unreachable }, 'backups wait for the repos’ recorded paths');
            else busy = await queue.runNext(usable, signal);
          }
        } catch (error) {
          if (!signal.aborted) log.warn({ err: error }, 'backup work failed; retrying');
        }
        if (!busy) await wakeup.wait(PERIOD_MS, signal);
      }
    } finally {
      offCluster();
      offPods();
      await queue.stop().catch(() => undefined);
    }
  }
}
