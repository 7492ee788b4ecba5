/** Shared pieces of the runtime's integration tests: a Widget CRD and polling. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '@kanri/client';

export interface Widget extends KubeObject {
  spec?: { color?: string; size?: number };
  status?: { color?: string; observedGeneration?: number; reconciledBy?: string };
}

export const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.test.kanri.dev' },
  spec: {
    group: 'test.kanri.dev',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { color: { type: 'string' }, size: { type: 'integer' } } },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      last = await probe();
      if (last) return last as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${String(last).slice(0, 300)}`);
}

/** Installs the Widget CRD and waits until it is served. */
export async function installWidgetCrd(client: KubeClient): Promise<void> {
  await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(widgetCrd);
  await waitFor('the Widget CRD to be served', async () => {
    await client.resource('test.kanri.dev/v1', 'Widget').list({ namespace: 'default', limit: 1 });
    return true;
  });
}
