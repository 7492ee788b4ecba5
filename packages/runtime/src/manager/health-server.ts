/** The manager's HTTP endpoints: /healthz (the process is alive), /readyz (caches synced) and /metrics (Prometheus). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  /** `host:port`; `:8080` binds every interface, `127.0.0.1:0` a free loopback port. */
  readonly bindAddress: string;
  readonly ready: () => boolean;
  readonly registry: Registry;
}

export function parseBindAddress(bindAddress: string): { host: string | undefined; port: number } {
  const colon = bindAddress.lastIndexOf(':');
  const host = colon > 0 ? bindAddress.slice(0, colon) : undefined;
  const port = Number(bindAddress.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new RangeError(`bindAddress "${bindAddress}" must be host:port or :port with a port from 0 to 65535`);
  }
  return { host, port };
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
        (error: Error) => res.writeHead(500).end(error.message),
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
