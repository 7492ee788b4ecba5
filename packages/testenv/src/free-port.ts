/** Asks the kernel for unused loopback ports, so parallel control planes never collide on fixed ports. */
import { createServer } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/**
 * One free TCP port on `host` (default 127.0.0.1). Another process may still take it before use;
 * callers start components that fail loudly if so.
 */
export function freePort(host: string = LOOPBACK): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** `count` distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** One distinct free port per name, e.g. `reservePorts(['etcd', 'api'])` → `{ etcd: 40123, api: 40125 }`. */
export async function reservePorts<const Name extends string>(names: readonly Name[]): Promise<Record<Name, number>> {
  const ports = await freePorts(names.length);
  return Object.fromEntries(names.map((name, i) => [name, ports[i]])) as Record<Name, number>;
}

/** True when nothing listens on `port` of 127.0.0.1 (it can be bound). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: LOOPBACK, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
