/**
 * The few raw API calls testenv itself needs (create nodes, wait for them), over one pooled
 * undici agent per credential. Not a general client: the runtime's client package is that.
 */
import { Agent, request } from 'undici';
import type { Kubeconfig } from './credentials/kubeconfig.js';

export interface RestTarget {
  readonly server: string;
  readonly dispatcher: Agent;
}

export interface RestResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
}

const decode = (data: string | undefined) => (data ? Buffer.from(data, 'base64').toString('utf8') : undefined);

/** An agent presenting the current context's client certificate and trusting its CA. */
export function restTargetFromKubeconfig(kubeconfig: Kubeconfig): RestTarget {
  const context = kubeconfig.contexts.find((c) => c.name === kubeconfig['current-context'])?.context;
  const cluster = kubeconfig.clusters.find((c) => c.name === context?.cluster)?.cluster;
  const user = kubeconfig.users.find((u) => u.name === context?.user)?.user;
  if (!cluster || !user)
    throw new Error(`kubeconfig: current context "${kubeconfig['current-context']}" is incomplete`);
  return {
    server: cluster.server,
    dispatcher: new Agent({
      connect: {
        ca: decode(cluster['certificate-authority-data']),
        cert: decode(user['client-certificate-data']),
        key: decode(user['client-key-data']),
      },
    }),
  };
}

/** Sends one JSON request and returns the status and the parsed body (or the raw text if it is not JSON). */
export async function restRequest<T = unknown>(
  target: RestTarget,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<RestResponse<T>> {
  const response = await request(`${target.server}${path}`, {
    method,
    dispatcher: target.dispatcher,
    headers:
      body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Non-JSON bodies (plain "ok" from health endpoints) are returned as text.
  }
  return { status: response.statusCode, body: parsed as T };
}
