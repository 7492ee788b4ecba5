/**
 * The Pod's side of a volume repo's TLS mesh, for the life of the agent (instance or repo host):
 * publish this Pod's own pgBackRest key on its Pod (always: a clone's instance needs it to read its
 * source too), and while the spec declares a volume repo, once the operator has certified that key
 * for this Pod's IP, run pgBackRest's TLS server with it and publish on the Pod where the server's
 * configuration and data are (contract/repo-host.ts), which the other Pods' pgBackRest passes to
 * it. Without a volume repo the server is stopped.
 *
 * Guarantees: the server only ever presents a certificate issued for this Pod's own key and IP,
 * and serves only clients holding one of this cluster's certificates.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeClient } from '@kanri/client';
import { Wakeup } from '@kanri/timing';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_KEY,
  ANNOTATION_PGBACKREST_SERVER,
  buildPgBackRestServerConf,
  hasVolumeRepo,
  type PgBackRestServerInfo,
  type PgBackRestSpec,
  type PgBackRestTlsFiles,
  PORT,
} from '../../contract/index.js';
import type { ClusterView } from '../cluster-view.js';
import type { AgentContext } from '../context.js';
import { readIfExists, writeFileIfChanged } from '../files.js';
import type { Logger } from '../log/logger.js';
import { PgBackRestKey } from './pgbackrest-key.js';
import type { PgBackRestServerProcess } from './pgbackrest-server.js';

const PERIOD_MS = 5_000;
/** While the certificate is not issued yet: the operator issues it within a reconcile. */
const WAIT_MS = 1_000;

/** Who this Pod is, for its certificate. */
export interface TlsIdentity {
  readonly namespace: string;
  readonly cluster: string;
  readonly podName: string;
  readonly podIP: string;
}

/** This Pod's pgBackRest key, kept in its run volume (`pgbackrest-tls/`). */
export function podKey(runDir: string): PgBackRestKey {
  return PgBackRestKey.kept(join(runDir, 'pgbackrest-tls'));
}

export interface TlsServerDeps {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly identity: TlsIdentity;
  readonly runDir: string;
  readonly view: ClusterView;
  readonly server: PgBackRestServerProcess;
  /** The server's configuration for these files and this spec, and what to publish besides its path. */
  readonly serverConf: (
    tls: PgBackRestTlsFiles,
    spec: PgBackRestSpec,
  ) => { text: string; info: Omit<PgBackRestServerInfo, 'config'> };
  /** Told the certificate's files once known, and undefined once the spec has no volume repo. */
  readonly onTls: (tls: PgBackRestTlsFiles | undefined) => void;
}

export async function runTlsServer(deps: TlsServerDeps, signal: AbortSignal): Promise<void> {
  const { log, view, server, identity } = deps;
  const wakeup = new Wakeup();
  const offCluster = view.onClusterChange(() => wakeup.wake());
  // The operator's certificate arrives on this Pod.
  const offPods = view.onPodsChange(() => wakeup.wake());
  const confFile = join(deps.runDir, 'pgbackrest-server.conf');
  const key = podKey(deps.runDir);
  const patchOwnPod = (annotations: Record<string, string>) =>
    deps.client
      .resource('v1', 'Pod')
      .patch(
        identity.podName,
        { metadata: { annotations } },
        { namespace: identity.namespace, type: 'merge', signal: AbortSignal.timeout(10_000) },
      );
  let tls: PgBackRestTlsFiles | undefined;
  let published: string | undefined;
  let waitingSince: number | undefined;
  try {
    while (!signal.aborted) {
      try {
        const own = view.pod(identity.podName);
        const annotations = own?.metadata?.annotations ?? {};
        if (own && annotations[ANNOTATION_PGBACKREST_KEY] !== key.publicKeyPem) {
          await patchOwnPod({ [ANNOTATION_PGBACKREST_KEY]: key.publicKeyPem });
          log.info('pgBackRest key published for the operator to certify');
        }
        const spec = view.spec?.backups?.pgbackrest;
        if (!spec || !hasVolumeRepo(spec)) {
          if (tls) deps.onTls(undefined);
          tls = undefined;
          await server.stop();
        } else {
          const certificate = annotations[ANNOTATION_PGBACKREST_CERTIFICATE];
          // Renewals replace the annotation: what the Pod carries now is what is served.
          tls = (await key.files(certificate, identity.cluster, identity.podIP)) ?? tls;
          if (!tls) {
            waitingSince ??= performance.now();
            // Said once a while, not every lap: the operator may simply not have reconciled yet.
            if (performance.now() - waitingSince > 30_000) {
              log.warn(
                { why: key.problem(certificate, identity.cluster, identity.podIP) },
                'no pgBackRest certificate for this Pod yet; waiting for the operator to issue it',
              );
              waitingSince = performance.now();
            }
          } else {
            waitingSince = undefined;
            deps.onTls(tls);
            const { text, info } = deps.serverConf(tls, spec);
            const dirs = serverDirs(deps.runDir);
            await Promise.all([dirs.logPath, dirs.lockPath].map((d) => mkdir(d, { recursive: true, mode: 0o700 })));
            await writeFileIfChanged(confFile, text, 0o600);
            const material = await Promise.all([tls.cert, tls.key, tls.ca].map((f) => readIfExists(f)));
            const digest = createHash('sha256')
              .update([text, ...material].join('\0'))
              .digest('hex');
            await server.ensure(confFile, digest);
            const annotation = JSON.stringify({ config: confFile, ...info } satisfies PgBackRestServerInfo);
            if (annotation !== published) {
              await patchOwnPod({ [ANNOTATION_PGBACKREST_SERVER]: annotation });
              published = annotation;
              log.info({ server: JSON.parse(annotation) }, 'pgBackRest TLS server published');
            }
          }
        }
      } catch (error) {
        if (!signal.aborted) log.warn({ err: error }, 'pgBackRest TLS server work failed; retrying');
      }
      await wakeup.wait(tls || !view.spec?.backups?.pgbackrest ? PERIOD_MS : WAIT_MS, signal);
    }
  } finally {
    offCluster();
    offPods();
    await server.stop();
  }
}

/**
 * An instance's server: it serves its PGDATA to the repo host's backups, and its certificate is
 * also the one its own pgBackRest presents to the repo host.
 */
export function runInstanceTlsServer(ctx: AgentContext, server: PgBackRestServerProcess, signal: AbortSignal) {
  const { config } = ctx;
  const pg = { path: config.pgdata, socketPath: config.socketDir, port: PORT.postgres };
  return runTlsServer(
    {
      client: ctx.client,
      log: ctx.log.child({ component: 'pgbackrest-server' }),
      identity: config,
      runDir: config.runDir,
      view: ctx.view,
      server,
      serverConf: (tls) => ({
        text: buildPgBackRestServerConf({
          cluster: config.cluster,
          address: config.podIP,
          tls,
          ...serverDirs(config.runDir),
          pg,
        }),
        info: { pgPath: pg.path, socketPath: pg.socketPath, port: pg.port },
      }),
      onTls: (tls) => {
        ctx.pgbackrest.tls = tls;
      },
    },
    signal,
  );
}

/** Where a server's commands keep their log and locks (the run volume: nothing of it must survive). */
export function serverDirs(runDir: string): { logPath: string; lockPath: string } {
  return { logPath: join(runDir, 'pgbackrest', 'log'), lockPath: join(runDir, 'pgbackrest', 'server-lock') };
}
