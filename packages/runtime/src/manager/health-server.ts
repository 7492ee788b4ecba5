/** The manager's HTTP endpoints: /healthz (the process is alive), /readyz (caches synced) and /metrics (Prometheus). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { parseBindAddress } from '../net/bind-address.js';

export interface HealthServerOptions {
  /** `host:port`; `:8080` binds every interface, `127.0.0.1:0` a free loopback port. */
  readonly bindAddress: string;
  readonly ready: () => boolean;
  readonly registry: Registry;
}

export async function startHealthServer(options: HealthServerOptions): Promise<{ server: Server; port: number }> {
  const { host, port } = parseBindAddress(options.bindAddress);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/livez') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    } else if (path === '/readyz') {
      const ready = options.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ok' : 'caches not synced');
    } else if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        (error: unknown) => res.writeHead(500).end(error instanceof Error ? error.message : String(error)),
      );
    } else {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
