/**
 * The peer API over mutual TLS on POD_IP:PORT.peer. A caller must present a certificate from the
 * cluster's CA with the cluster's peer common name (contract/postgres-tls.ts), which only the
 * cluster's agents hold: a Pod labelled into the cluster, or anything else that reaches the port,
 * can neither forge a position for failover ranking nor ask for a failsafe vouch. A renewed
 * certificate is swapped in without closing the server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { listen } from './http-server.js';
import type { PeerTls } from './peer-client.js';

export class PeerServer {
  readonly #server: Server;
  #commonName: string;

  private constructor(server: Server, commonName: string) {
    this.#server = server;
    this.#commonName = commonName;
  }

  /**
   * Starts serving `handler` to callers that present the cluster's peer certificate; resolves once bound.
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
    let peer: PeerServer | undefined;
    const server = createServer(
      { cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        // The chain is verified before any request; the name says the caller is this cluster's.
        const name = (request.socket as TLSSocket).getPeerCertificate().subject?.CN;
        if (!peer || name !== peer.commonName) {
          response.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' });
          response.end(`${name ?? 'a caller without a name'} is not a peer of this cluster\n`);
          return;
        }
        if (!handler(request, response)) {
          response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
          response.end('not found\n');
        }
      },
    );
    peer = new PeerServer(server, tls.commonName);
    await listen(server, host, port);
    return peer;
  }

  /** Serves (and requires) a renewed certificate from now on; established connections keep theirs. */
  /** The common name a caller must present. */
  get commonName(): string {
    return this.#commonName;
  }

  update(tls: PeerTls): void {
    this.#server.setSecureContext({ cert: tls.cert, key: tls.key, ca: tls.ca });
    this.#commonName = tls.commonName;
  }

  close(): void {
    this.#server.close();
    this.#server.closeAllConnections();
  }
}
