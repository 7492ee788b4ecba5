/**
 * How this agent calls its peers' API. With the cluster's peer certificate (contract/postgres-tls.ts)
 * it goes over mutual TLS to PORT.peer and believes only a server presenting the cluster's peer
 * certificate from the cluster's CA; before the agent has one, plain HTTP to PORT.agent, as peers
 * without one serve it. One keep-alive pool per certificate: a failover's ranking does not pay a
 * handshake per peer once they have talked.
 */
import { Agent, request } from 'node:https';
import type { PeerCertificate } from 'node:tls';
import { PORT } from '../../contract/index.js';

/** The peer certificate and what it must meet, as PEM text. */
export interface PeerTls {
  readonly cert: string;
  readonly key: string;
  /** The cluster's CA: peers' certificates must come from it. */
  readonly ca: string;
  /** peerCommonName(cluster): what a peer's certificate must say it is. */
  readonly commonName: string;
}

export interface PeerResponse {
  readonly status: number;
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown;
}

const MAX_BODY_BYTES = 64 * 1024;

export class PeerClient {
  #tls: { readonly agent: Agent; readonly commonName: string } | undefined;

  /** Switches to mutual TLS with `tls` (or back to plain HTTP); connections of the old certificate close. */
  setTls(tls: PeerTls | undefined): void {
    this.#tls?.agent.destroy();
    this.#tls = tls && {
      commonName: tls.commonName,
      agent: new Agent({
        keepAlive: true,
        cert: tls.cert,
        key: tls.key,
        ca: tls.ca,
        // Peers are dialled by Pod IP, which the certificate does not carry: it names the cluster.
        checkServerIdentity: (_host: string, certificate: PeerCertificate) =>
          certificate.subject?.CN === tls.commonName
            ? undefined
            : new Error(`the peer presented ${certificate.subject?.CN ?? 'no name'}, not ${tls.commonName}`),
      }),
    };
  }

  /**
   * Calls `path` on the peer at `ip`. Rejects when the peer cannot be reached or is not a peer
   * (its certificate), or when `signal` aborts.
   *
   * @example
   * ```ts
   * const { status, json } = await peers.call('10.0.0.7', '/status', { signal: AbortSignal.timeout(1_000) });
   * ```
   */
  async call(
    ip: string,
    path: string,
    options: { readonly method?: 'GET' | 'POST'; readonly body?: unknown; readonly signal: AbortSignal },
  ): Promise<PeerResponse> {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    const tls = this.#tls;
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
