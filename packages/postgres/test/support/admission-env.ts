/**
 * The admission tests' world: a control plane with no controllers or nodes, and the CRDs of the
 * given resources, served. The API server's schema and CEL rules are all that runs.
 */
import { KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';

export interface AdmissionEnv {
  readonly cp: ControlPlane;
  readonly client: KubeClient;
  stop(): Promise<void>;
}

/** Starts the control plane and waits until every CRD is served (a list in `default` answers). */
export async function startAdmissionEnv(
  resources: readonly { readonly crd: unknown; readonly apiVersion: string; readonly kind: string }[],
): Promise<AdmissionEnv> {
  const cp = await startControlPlane();
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  try {
    const crds = client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
    for (const resource of resources) await crds.create(resource.crd as KubeObject);
    await waitFor(`the CRDs of ${resources.map((r) => r.kind).join(', ')} to be served`, async () => {
      for (const resource of resources)
        await client.resource(resource.apiVersion, resource.kind).list({ namespace: 'default' });
      return true;
    });
  } catch (error) {
    // A CRD the API server refuses: the control plane must not outlive the failed start.
    await client.close();
    await cp.stop();
    throw error;
  }
  return {
    cp,
    client,
    async stop() {
      await client.close();
      await cp.stop();
    },
  };
}
