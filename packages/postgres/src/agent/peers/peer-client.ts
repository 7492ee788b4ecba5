/**
 * How this agent calls its peers' API. With its own peer certificate (agent/peers/peer-identity.ts) it
 * goes over mutual TLS to PORT.peer and believes only a server presenting, from the cluster's CA,
 * the certificate of the very instance it dialled (peerCommonName); before the agent has one,
 * plain HTTP to PORT.agent, as peers without one serve it. One keep-alive pool per certificate: a
 * failover's ranking does not pay a handshake per peer once they have talked.
 */
import { Agent, request } from 'node:https';
import type { PeerCertificate } from 'node:tls';
import { PORT, peerCommonName } from '../../contract/index.js';

/** This instance's peer certificate and key, and what peers must meet, as PEM text. */
export interface PeerTls {
  readonly cert: string;
  readonly key: string;
  /** The cluster's CA: peers' certificates must come from it. */
  readonly ca: string;
  /** The cluster whose instances are peers (peerCommonName). */
  readonly cluster: string;
}

/** A peer to call: its Pod's name, which its certificate must carry, and its address. */
export interface PeerAddress {
  readonly name: string;
  readonly ip: string;
}

export interface PeerResponse {
  readonly status: number;
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown;
}

const MAX_BODY_BYTES = 64 * 1024;

export class PeerClient {
  #tls: { readonly agent: Agent; readonly cluster: string } | undefined;

  /** Switches to mutual TLS with `tls` (or back to plain HTTP); connections of the old certificate close. */
  setTls(tls: PeerTls | undefined): void {
    this.#tls?.agent.destroy();
    this.#tls = tls && {
      cluster: tls.cluster,
      agent: new Agent({ keepAlive: true, cert: tls.cert, key: tls.key, ca: tls.ca }),
    };
  }

  /**
   * Calls `path` on `peer`. Rejects when the peer cannot be reached or is not that peer (its
   * certificate), or when `signal` aborts.
   *
   * @example
   * ```ts
   * const { status, json } = await peers.call({ name: 'hippo-i-1', ip: '10.0.0.7' }, '/status', { signal: AbortSignal.timeout(1_000) });
   * ```
   */
  async call(
    peer: PeerAddress,
    path: string,
    options: { readonly method?: 'GET' | 'POST'; readonly body?: unknown; readonly signal: AbortSignal },
  ): Promise<PeerResponse> {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    const tls = this.#tls;
    const { ip } = peer;
    if (!tls) {
      const response = await fetch(`http://${ip}:${PORT.agent}${path}`, {
        method: options.method ?? 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
        signal: options.signal,
      });
      return { status: response.status, json: await response.json().catch(() => undefined) };
    }
    return new Promise<PeerResponse>((resolve, reject) => {
      const outgoing = request(
        {
          host: ip,
          port: PORT.peer,
          path,
          method: options.method ?? 'GET',
          headers,
          agent: tls.agent,
          // Peers are dialled by Pod IP, which the certificate does not carry: it names the
          // instance, and the one at this address must be the one meant. The check runs per
          // connection; the name as SNI keys the pool by it, so a connection checked for one
          // instance never serves a call meant for another at the same address.
          servername: peer.name,
          checkServerIdentity: (_host: string, certificate: PeerCertificate) => {
            const wanted = peerCommonName(tls.cluster, peer.name);
            return certificate.subject?.CN === wanted
              ? undefined
              : new Error(`the peer at ${ip} presented ${certificate.subject?.CN ?? 'no name'}, not ${wanted}`);
          },
          signal: options.signal,
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
            if (text.length > MAX_BODY_BYTES) response.destroy(new Error('the peer answered too much'));
          });
          response.on('error', reject);
          response.on('end', () => {
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: response.statusCode ?? 0, json });
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  /** Closes the pooled connections. */
  close(): void {
    this.#tls?.agent.destroy();
  }
}
