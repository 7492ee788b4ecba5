/**
 * A TCP proxy on loopback for failure tests: it forwards bytes untouched (TLS passes through),
 * counts connections, and can stall every open connection silently, the way a dead network
 * path or a hung load balancer does, or refuse new ones.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { LOOPBACK } from './free-port.js';

export interface FaultProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** The target URL with its port replaced by the proxy's (e.g. the API server URL). */
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Stops moving bytes on every open connection without closing it; new connections still work. */
  stallOpenConnections(): void;
  /** New connections are accepted and closed at once (existing ones are untouched). */
  refuseNew(refuse: boolean): void;
  /** Destroys every open connection. */
  dropAll(): void;
  close(): Promise<void>;
}

/** Starts a proxy in front of `target` (an `https://127.0.0.1:port` URL). */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const url = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  let connections = 0;
  let refusing = false;
  const server: Server = createServer((client) => {
    connections++;
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: url.hostname, port: Number(url.port) });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen({ host: LOOPBACK, port: 0 }, resolve));
  const dropAll = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    url: `${url.protocol}//${LOOPBACK}:${port}`,
    get connections() {
      return connections;
    },
    stallOpenConnections() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    refuseNew(refuse) {
      refusing = refuse;
    },
    dropAll,
    close() {
      dropAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
