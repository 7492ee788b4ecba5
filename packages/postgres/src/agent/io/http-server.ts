/**
 * The agent's HTTP endpoints on POD_IP:8000: `/healthz` (liveness), `/readyz` (readiness) and
 * `/metrics`. Probes answer from the state the agent already holds, so a slow postgres never
 * makes a probe hang.
 */
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface HealthSource {
  /** Null when healthy, else why not. */
  health(): string | null;
  /** Null when ready, else why not. */
  readiness(): string | null;
  /** The live status served on `/status` (see peer-status.ts). */
  liveStatus?(): Promise<unknown>;
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
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const answer = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      response.writeHead(code, { 'content-type': type });
      response.end(body);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(405, 'method not allowed\n');
    if (path === '/healthz' || path === '/readyz') {
      const problem = path === '/healthz' ? source.health() : source.readiness();
      return problem === null ? answer(200, 'ok\n') : answer(503, `${problem}\n`);
    }
    if (path === '/status' && source.liveStatus) {
      source.liveStatus().then(
        (status) => answer(200, JSON.stringify(status), 'application/json'),
        (error: Error) => answer(500, `${error.message}\n`),
      );
      return;
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
