/**
 * Reaching a Service without kube-proxy: the addresses the EndpointSlice controller would list,
 * computed from the Service's selector and its Pods.
 *
 * Why not read the EndpointSlices: process-node Pods have loopback addresses (127.x.y.z), and the
 * API server refuses loopback endpoint addresses ("may not be in the loopback range"), so the
 * EndpointSlice controller cannot publish them. The rules applied here are the controller's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pod, Service, ServicePort } from 'kubernetes-types/core/v1.js';
import type { Kubeconfig } from '../credentials/kubeconfig.js';
import { TestenvError } from '../errors.js';
import { Api, encode } from './api.js';

export interface ServiceEndpoint {
  readonly pod: string;
  readonly ip: string;
  readonly port: number;
  /** `ip:port` */
  readonly address: string;
  readonly ready: boolean;
  readonly terminating: boolean;
}

function selects(selector: Readonly<Record<string, string>>, pod: Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** The Service port that `port` names: its number, its name, or (omitted) the only one. Pure. */
export function pickServicePort(service: Service, port?: number | string): ServicePort {
  const ports = service.spec?.ports ?? [];
  const name = service.metadata?.name;
  const found =
    port === undefined
      ? ports.length === 1
        ? ports[0]
        : undefined
      : ports.find((p) => (typeof port === 'number' ? p.port === port : p.name === port));
  if (!found) {
    const choices = ports.map((p) => `${p.name ?? '(unnamed)'}=${p.port}`).join(', ');
    throw new TestenvError(
      port === undefined
        ? `Service ${name} has ${ports.length} ports (${choices}); say which one`
        : `Service ${name} has no port ${port} (ports: ${choices})`,
    );
  }
  return found;
}

/** The endpoints of `servicePort` among `pods`, following the EndpointSlice controller's rules. Pure. */
export function computeServiceEndpoints(
  service: Service,
  servicePort: ServicePort,
  pods: readonly Pod[],
): ServiceEndpoint[] {
  const selector = service.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return [];
  const endpoints: ServiceEndpoint[] = [];
  for (const pod of pods) {
    if (!selects(selector, pod)) continue;
    const ip = pod.status?.podIP;
    const phase = pod.status?.phase;
    if (!ip || phase === 'Succeeded' || phase === 'Failed') continue;
    let port: number | undefined;
    const target = servicePort.targetPort ?? servicePort.port;
    if (typeof target === 'number') port = target;
    else if (/^\d+$/.test(target)) port = Number(target);
    else {
      for (const container of pod.spec?.containers ?? []) {
        port ??= container.ports?.find(
          (p) => p.name === target && (p.protocol ?? 'TCP') === (servicePort.protocol ?? 'TCP'),
        )?.containerPort;
      }
    }
    if (port === undefined) continue;
    const terminating = pod.metadata?.deletionTimestamp !== undefined;
    const podReady = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    const ready = !terminating && (podReady || service.spec?.publishNotReadyAddresses === true);
    endpoints.push({ pod: pod.metadata?.name ?? '', ip, port, address: `${ip}:${port}`, ready, terminating });
  }
  return endpoints.sort((a, b) => a.pod.localeCompare(b.pod));
}

/**
 * Reads Service endpoints over one kept-alive connection to the API server, as kube-proxy keeps
 * its watch connection: a client that looks its Service up again and again (a database client
 * finding the new primary during a failover) pays a TLS handshake once, not per lookup. Close it
 * when done.
 *
 * @example
 * ```ts
 * const reader = new ServiceEndpointReader(cp);
 * try {
 *   const ready = (await reader.endpoints('default', 'db-primary', 5432)).filter((e) => e.ready);
 * } finally {
 *   await reader.close();
 * }
 * ```
 */
export interface ServiceEndpointReaderOptions {
  /**
   * Read from the API server's watch cache (`resourceVersion=0`) instead of a consistent read: as
   * kube-proxy's view comes from a watch, it may trail a write by a few ms, but it never waits
   * for etcd, so it stays fast while the API server is busy. Default false: a test that has just
   * changed a Pod sees its change.
   */
  readonly watchCache?: boolean;
}

export class ServiceEndpointReader {
  readonly #api: Api;
  readonly #query: string;

  constructor(cluster: { readonly kubeconfig: Kubeconfig }, options: ServiceEndpointReaderOptions = {}) {
    this.#api = new Api(cluster.kubeconfig);
    this.#query = options.watchCache ? 'resourceVersion=0' : '';
  }

  /** Every endpoint of the Service's port, ready or not, as the EndpointSlice controller would list them. */
  async endpoints(namespace: string, serviceName: string, port?: number | string): Promise<ServiceEndpoint[]> {
    const service = await this.#api.get<Service>(
      `/api/v1/namespaces/${encode(namespace)}/services/${encode(serviceName)}${this.#query ? `?${this.#query}` : ''}`,
    );
    if (!service) throw new TestenvError(`Service ${namespace}/${serviceName} does not exist`);
    const servicePort = pickServicePort(service, port);
    const selector = service.spec?.selector ?? {};
    if (Object.keys(selector).length === 0) {
      throw new TestenvError(
        `Service ${namespace}/${serviceName} has no selector; its endpoints are not derived from Pods`,
      );
    }
    const labelSelector = Object.entries(selector)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = await this.#api.list<Pod>(
      `/api/v1/namespaces/${encode(namespace)}/pods?${this.#query ? `${this.#query}&` : ''}labelSelector=${encode(labelSelector)}`,
    );
    return computeServiceEndpoints(service, servicePort, pods);
  }

  async close(): Promise<void> {
    await this.#api.close();
  }
}

/**
 * Every endpoint of a Service's port, ready or not, as the EndpointSlice controller would list them.
 * One lookup on its own connection; {@link ServiceEndpointReader} for many.
 *
 * @example
 * ```ts
 * const endpoints = await serviceEndpoints(cp, 'default', 'web', 80);
 * assert.deepEqual(endpoints.map((e) => e.ready), [true, true]);
 * ```
 */
export async function serviceEndpoints(
  cluster: { readonly kubeconfig: Kubeconfig },
  namespace: string,
  serviceName: string,
  port?: number | string,
): Promise<ServiceEndpoint[]> {
  const reader = new ServiceEndpointReader(cluster);
  try {
    return await reader.endpoints(namespace, serviceName, port);
  } finally {
    await reader.close();
  }
}

export interface ServiceAddressOptions {
  /** How long to wait for a ready endpoint. Default 30 s; 0 looks once. */
  readonly timeoutMs?: number;
}

/**
 * `host:port` of a ready endpoint of a Service, which is how tests reach a Service: there is no
 * kube-proxy and no cluster DNS. Waits for one to be ready (`timeoutMs`); with several, returns
 * the first by Pod name. `port` is the Service port's number or name; it may be omitted when the
 * Service has one port.
 *
 * @example
 * ```ts
 * import { serviceAddress } from '@kanri/testenv';
 *
 * const address = await serviceAddress(cp, 'default', 'db-primary', 5432); // '127.1.0.7:5432'
 * const [host, port] = address.split(':');
 * ```
 */
export async function serviceAddress(
  cluster: { readonly kubeconfig: Kubeconfig },
  namespace: string,
  serviceName: string,
  port?: number | string,
  options: ServiceAddressOptions = {},
): Promise<string> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const reader = new ServiceEndpointReader(cluster);
  try {
    for (;;) {
      const endpoints = await reader.endpoints(namespace, serviceName, port);
      const ready = endpoints.find((e) => e.ready);
      if (ready) return ready.address;
      if (Date.now() >= deadline) {
        throw new TestenvError(
          `Service ${namespace}/${serviceName} has no ready endpoint (${endpoints.length} not ready: ${endpoints.map((e) => e.pod).join(', ') || 'no Pods selected'})`,
        );
      }
      await sleep(200);
    }
  } finally {
    await reader.close();
  }
}
