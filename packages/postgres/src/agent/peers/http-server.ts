/**
 * The agent's HTTP endpoints on POD_IP:8000: `/healthz` (liveness), `/readyz` (readiness) and
 * `/metrics`, plus the peer API's `GET /status` until the agent serves the peer API over mutual
 * TLS on its own port (peer-server.ts); `POST /failsafe` is answered only there, to a certified
 * caller: here it is refused, certificate or not. Probes answer from the state the agent already
 * holds, so a slow postgres never makes a probe hang. The peer API is rate-limited per caller
 * (plan/peer-rate-limit.ts) and reads one live status at a time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Registry } from 'prom-client';
import {
  type FailsafeAnswer,
  type FailsafeRequest,
  failsafeRequest,
  PEER_FAILSAFE_PATH,
  PEER_STATUS_PATH,
} from '../../contract/index.js';
import { PeerRateLimiter } from '../plan/peer-rate-limit.js';
import { peerCaller } from './peer-caller.js';

/** A failsafe request is a name: anything longer is not one. */
const MAX_BODY_BYTES = 4096;

export interface HealthSource {
  /** Null when healthy, else why not. */
  health(): string | null;
  /** Null when ready, else why not. */
  readiness(): string | null;
  /** The live status served on `/status` (see peer-status.ts). */
  liveStatus?(): Promise<unknown>;
  /** Answers a primary that asks this member to vouch for it (`POST /failsafe`, failsafe mode). */
  vouch?(request: FailsafeRequest): FailsafeAnswer;
  /** False once the peer API is served over mutual TLS (peer-server.ts) instead; default true. */
  peerApiOverPlainHttp?(): boolean;
}

/**
 * Starts listening; resolves once bound.
 *
 * @example
 * ```ts
 * const server = await startHttpServer('127.1.0.1', 8000, agent, metrics.registry);
 * ```
 */
export async function startHttpServer(
  host: string,
  port: number,
  source: HealthSource,
  registry: Registry,
): Promise<Server> {
  const peerApi = peerApiHandler(source);
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const answer = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      response.writeHead(code, { 'content-type': type });
      response.end(body);
    };
    // Once the agent serves the peer API over mutual TLS, plain HTTP no longer answers it.
    if ((source.peerApiOverPlainHttp?.() ?? true) && peerApi(request, response)) return;
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(405, 'method not allowed\n');
    if (path === '/healthz' || path === '/readyz') {
      const problem = path === '/healthz' ? source.health() : source.readiness();
      return problem === null ? answer(200, 'ok\n') : answer(503, `${problem}\n`);
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => answer(200, text, registry.contentType),
        (error: Error) => answer(500, `${error.message}\n`),
      );
      return;
    }
    answer(404, 'not found\n');
  });
  await listen(server, host, port);
  return server;
}

/**
 * The peer API (`GET /status`, `POST /failsafe`) as a request handler: true when it answered the
 * request. Rate-limited per caller (plan/peer-rate-limit.ts); one live status read at a time,
 * shared by every request that asks meanwhile, so however many peers (or a flood) ask, the peer
 * API holds at most one of the agent's few postgres connections.
 *
 * @example
 * ```ts
 * const peerApi = peerApiHandler(agent);
 * createServer((request, response) => peerApi(request, response) || response.end());
 * ```
 */
export function peerApiHandler(source: HealthSource): (request: IncomingMessage, response: ServerResponse) => boolean {
  const limiter = new PeerRateLimiter();
  let inFlight: Promise<unknown> | undefined;
  const liveStatus = (read: () => Promise<unknown>) => {
    inFlight ??= read().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  return (request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== PEER_STATUS_PATH && path !== PEER_FAILSAFE_PATH) return false;
    const answer = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      response.writeHead(code, { 'content-type': type });
      response.end(body);
    };
    if (!limiter.take(request.socket.remoteAddress ?? '', performance.now())) {
      answer(429, 'too many requests\n');
      return true;
    }
    if (path === PEER_FAILSAFE_PATH && request.method === 'POST' && source.vouch) {
      // A vouch keeps this instance from taking over: only a certified peer, proven by mutual TLS,
      // may ask for one. Over plain HTTP (an agent not yet certified) anyone could.
      const caller = peerCaller(request);
      if (caller === undefined) {
        answer(403, 'a vouch is given only to a certified peer over mutual TLS (the peer port)\n');
        return true;
      }
      const vouch = source.vouch.bind(source);
      readJson(request).then(
        (body) => {
          const parsed = failsafeRequest.safeParse(body);
          if (!parsed.success) return answer(400, 'expected {"leader": "<pod>"}\n');
          // Only the primary itself may ask to be vouched for.
          if (caller !== parsed.data.leader)
            return answer(403, `${caller} cannot ask to be vouched for as ${parsed.data.leader}\n`);
          const given = vouch(parsed.data);
          answer(given.accepted ? 200 : 409, JSON.stringify(given), 'application/json');
        },
        (error: Error) => answer(400, `${error.message}\n`),
      );
      return true;
    }
    if (path === PEER_STATUS_PATH && (request.method === 'GET' || request.method === 'HEAD') && source.liveStatus) {
      liveStatus(source.liveStatus.bind(source)).then(
        (status) => answer(200, JSON.stringify(status), 'application/json'),
        (error: Error) => answer(500, `${error.message}\n`),
      );
      return true;
    }
    answer(path === PEER_FAILSAFE_PATH ? 405 : 404, 'not served here\n');
    return true;
  };
}

/** Listens on `host:port`; resolves once bound, rejects if it cannot bind. */
export async function listen(server: Server | HttpsServer, host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of request) {
    text += chunk;
    if (text.length > MAX_BODY_BYTES) throw new Error('request body too large');
  }
  return JSON.parse(text);
}
