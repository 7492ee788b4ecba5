/**
 * The peer API over mutual TLS on POD_IP:PORT.peer. A caller must present an instance's peer
 * certificate from the cluster's CA (contract/postgres-tls.ts, peerCommonName): each agent holds
 * only its own key, so a Pod labelled into the cluster, or anything else that reaches the port,
 * can neither forge a position for failover ranking nor ask for a failsafe vouch, and a member can
 * speak only as itself (peer-caller.ts). A renewed certificate is swapped in without closing
 * the server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { peerInstanceOf } from '../../contract/index.js';
import { listen } from './http-server.js';
import { setPeerCaller } from './peer-caller.js';
import type { PeerTls } from './peer-client.js';

/** How long an idle peer connection stays open. */
const PEER_KEEP_ALIVE_MS = 30_000;

export class PeerServer {
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  /**
   * Starts serving `handler` to callers that present a peer certificate of `tls.cluster`; resolves once bound.
   *
   * @example
   * ```ts
   * const server = await PeerServer.start(config.podIP, PORT.peer, tls, peerApiHandler(agent));
   * ```
   */
  static async start(
    host: string,
    port: number,
    tls: PeerTls,
    handler: (request: IncomingMessage, response: ServerResponse) => boolean,
  ): Promise<PeerServer> {
    const server = createServer(
      { cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        // The chain is verified before any request; the name says which of the cluster's instances calls.
        const cn = (request.socket as TLSSocket).getPeerCertificate().subject?.CN;
        const name = typeof cn === 'string' ? cn : undefined;
        const caller = peerInstanceOf(tls.cluster, name);
        if (caller === undefined) {
          response.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' });
          response.end(`${name ?? 'a caller without a name'} is not a peer of this cluster\n`);
          return;
        }
        setPeerCaller(request, caller);
        if (!handler(request, response)) {
          response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
          response.end('not found\n');
        }
      },
    );
    // Node's 5 s default would close the connections a replica opens seconds before a ranking
    // (roles/failover.ts, warmRankingConnections).
    server.keepAliveTimeout = PEER_KEEP_ALIVE_MS;
    await listen(server, host, port);
    return new PeerServer(server);
  }

  /** Serves (and requires) a renewed certificate from now on; established connections keep theirs. */
  update(tls: PeerTls): void {
    this.#server.setSecureContext({ cert: tls.cert, key: tls.key, ca: tls.ca });
  }

  close(): void {
    this.#server.close();
    this.#server.closeAllConnections();
  }
}
