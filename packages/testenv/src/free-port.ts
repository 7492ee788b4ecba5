/**
 * Free loopback ports, so parallel control planes never collide on fixed ports. They are taken
 * below the kernel's ephemeral range: a port the kernel hands out for `listen(0)` comes from the
 * range it also gives outgoing connections as their source port, so between the check and the
 * component's own bind, any client connection on the machine could take it (CI, 2026-12-04:
 * kube-controller-manager failed with "bind: address already in use" on 127.0.0.1:39029).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** The lowest port tried: above the registered services most machines run. */
const FIRST_PORT = 10_000;

let ephemeralStart: number | undefined;

/**
 * The first port of Linux's ephemeral range (`ip_local_port_range`); its default elsewhere. Read
 * once per process: a control plane reserves a dozen ports.
 */
export function ephemeralPortStart(): number {
  ephemeralStart ??= readEphemeralPortStart();
  return ephemeralStart;
}

function readEphemeralPortStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > FIRST_PORT) return first;
  } catch {
    // Not Linux: Linux's default, below the IANA range macOS and Windows use.
  }
  return 32_768;
}

/** Whether `port` of `host` can be bound now. */
function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * One free TCP port on `host` (default 127.0.0.1), below the ephemeral range. Another test process
 * may still pick the same one before use (1 in ~22,000 per pair); callers start components that
 * fail loudly if so.
 */
export async function freePort(host: string = LOOPBACK): Promise<number> {
  const end = ephemeralPortStart();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FIRST_PORT + Math.floor(Math.random() * (end - FIRST_PORT));
    if (await canBind(host, port)) return port;
  }
  throw new Error(`no free port on ${host} between ${FIRST_PORT} and ${end - 1} after 200 tries`);
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
  return canBind(LOOPBACK, port);
}
