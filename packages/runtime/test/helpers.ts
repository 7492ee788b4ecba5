/** Shared pieces of the runtime's integration tests: a Widget CRD and polling. */
import { after, before } from 'node:test';
import { KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';

export { waitFor };

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

/** Installs the Widget CRD and waits until it is served. */
export async function installWidgetCrd(client: KubeClient): Promise<void> {
  await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(widgetCrd);
  await waitFor('the Widget CRD to be served', async () => {
    await client.resource('test.kanri.dev/v1', 'Widget').list({ namespace: 'default', limit: 1 });
    return true;
  });
}

/**
 * Registers a suite's `before`/`after`: a control plane with the Widget CRD served, and an admin
 * client, handed to `use` once started; both are stopped after the suite.
 */
export function useWidgetControlPlane(use: (env: { cp: ControlPlane; client: KubeClient }) => void): void {
  let cp: ControlPlane | undefined;
  let client: KubeClient | undefined;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await installWidgetCrd(client);
    use({ cp, client });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });
}
