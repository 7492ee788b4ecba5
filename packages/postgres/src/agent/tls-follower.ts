/**
 * Follows the cluster's TLS Secret (contract/postgres-tls.ts) for the agent: PostgreSQL's
 * certificate files and settings, whose changes become a reload request that the role cycle serves
 * (agent/requests/postgres-requests.ts: a renewed certificate is served without a restart or a dropped
 * connection); and the agent's own Pod, for the peer API's mutual TLS, server and client, once
 * the operator has certified the agent's key there (agent/peers/peer-identity.ts). One update at a time, in the order of the changes.
 * Fail closed: a Secret deleted or not whole leaves the files served until then in place
 * (postgres/postgres-tls-files.ts); the agent never goes from TLS back to none.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { ANNOTATION, names, PORT } from '../contract/index.js';
import type { AgentContext } from './context.js';
import type { PeerIdentity } from './peers/peer-identity.js';
import { PeerServer } from './peers/peer-server.js';
import { decodeTlsSecret, readPostgresTls } from './plan/material-plan.js';
import { writePostgresTlsFiles } from './postgres/postgres-tls-files.js';

type PeerApi = (request: IncomingMessage, response: ServerResponse) => boolean;

export class TlsFollower {
  readonly #ctx: AgentContext;
  readonly #peerApi: PeerApi;
  #required = false;
  #queue: Promise<void> = Promise.resolve();
  #peerServer: PeerServer | undefined;
  readonly #identity: PeerIdentity;
  #peerCert: string | undefined;
  #peerAnnotation: string | undefined;
  #secretUnusable: string | undefined;

  constructor(ctx: AgentContext, peerApi: PeerApi, identity: PeerIdentity) {
    this.#ctx = ctx;
    this.#peerApi = peerApi;
    this.#identity = identity;
  }

  /**
   * Follows the Secret and spec.tls.required; resolves the unsubscribe function once the current
   * state is applied (before the first write of the configuration, so postgres starts with TLS
   * when the Secret is there).
   *
   * @example
   * ```ts
   * const unfollow = await new TlsFollower(ctx, peerApiHandler(agent), new PeerIdentity()).follow();
   * ```
   */
  async follow(): Promise<() => void> {
    const { view } = this.#ctx;
    const offTls = view.onTlsChange(() => void this.#next());
    const offCluster = view.onClusterChange(() => {
      if ((view.spec?.tls?.required ?? false) !== this.#required) void this.#next();
    });
    // Every member's report moves its Pod: only this Pod's certificate matters here.
    const offPods = view.onPodsChange(() => {
      if (this.#ownPeerAnnotation() !== this.#peerAnnotation) void this.#next();
    });
    await this.#next();
    return () => {
      offTls();
      offCluster();
      offPods();
    };
  }

  /** Why the agent has no TLS material at all (postgres must not start on the network: plan/material-plan.ts); undefined once it has. */
  get missing(): string | undefined {
    const { files, view } = this.#ctx;
    if (files.tls) return undefined;
    // Read now: a first list that finds nothing delivers no change, and "not known yet" would stay.
    const read = readPostgresTls(view.tlsData && decodeTlsSecret(view.tlsData), this.#source());
    return 'missing' in read ? read.missing : 'the TLS files are being written';
  }

  #source() {
    const { view, config } = this.#ctx;
    return { what: `Secret ${names.postgresTls(config.cluster)}`, known: view.materialKnown.tls };
  }

  /** False once the peer API is served over mutual TLS: plain HTTP then answers only probes and metrics. */
  get peerApiOverPlainHttp(): boolean {
    return this.#peerServer === undefined;
  }

  close(): void {
    this.#peerServer?.close();
    this.#ctx.peers.close();
  }

  #next(): Promise<void> {
    this.#queue = this.#queue.then(() => this.#apply());
    return this.#queue;
  }

  async #apply(): Promise<void> {
    const { view, files, requests, log, config } = this.#ctx;
    try {
      const source = this.#source();
      const tls = await writePostgresTlsFiles(view.tlsData, join(config.runDir, 'postgres-tls'), source);
      const before = { files: JSON.stringify(files.tls), required: this.#required };
      this.#required = view.spec?.tls?.required ?? false;
      const was = files.tls !== undefined;
      // Never back to no TLS: without a usable Secret the files served so far stay.
      files.setTls(tls.files ?? files.tls, this.#required);
      if (tls.secretUnusable !== this.#secretUnusable) {
        if (tls.secretUnusable && (tls.files ?? files.tls))
          log.warn(
            { problem: tls.secretUnusable },
            `keeping the TLS certificates served so far until ${source.what} is whole again (the operator re-issues it)`,
          );
        else if (tls.secretUnusable) log.info({ problem: tls.secretUnusable }, 'no TLS material yet');
        else if (this.#secretUnusable) log.info(`${source.what} is whole again; serving it`);
        this.#secretUnusable = tls.secretUnusable;
      }
      if (files.tls && !was) log.info('serving TLS with the cluster certificates');
      // Certificates served for the first time change the settings too (ssl = on).
      if (was && tls.changed) requests.requestReload('the TLS certificates changed');
      if (before.files !== JSON.stringify(files.tls) || before.required !== this.#required)
        requests.requestReload('the TLS settings changed');
      await this.#followPeerTls();
    } catch (error) {
      log.warn({ err: error }, "cannot apply the cluster's TLS Secret; the next change tries again");
    }
  }

  #ownPeerAnnotation(): string | undefined {
    const { view, config } = this.#ctx;
    return view.pod(config.podName)?.metadata?.annotations?.[ANNOTATION.peerCertificate];
  }

  /**
   * The peer API over mutual TLS once the operator has certified this agent's key on its Pod: the
   * server starts (or takes the renewed certificate) and calls to peers switch to it.
   */
  async #followPeerTls(): Promise<void> {
    const { config, peers, log } = this.#ctx;
    this.#peerAnnotation = this.#ownPeerAnnotation();
    const tls = this.#identity.tlsFrom(this.#peerAnnotation, config.cluster, config.podName);
    if (!tls || tls.cert === this.#peerCert) return;
    peers.setTls(tls);
    if (this.#peerServer) this.#peerServer.update(tls);
    else {
      this.#peerServer = await PeerServer.start(config.podIP, PORT.peer, tls, this.#peerApi);
      log.info({ port: PORT.peer }, 'serving the peer API over mutual TLS');
    }
    this.#peerCert = tls.cert;
  }
}
