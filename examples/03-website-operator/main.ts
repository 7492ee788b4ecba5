/** Example 03: run the Website operator against a local control plane with simulated nodes. */
import { pathToFileURL } from 'node:url';
import { KubeClient, type KubeObject } from '@kanri/client';
import { Manager } from '@kanri/runtime';
import { startControlPlane } from '@kanri/testenv';
import { type Website, websiteController } from './operator.js';
import { websiteCrd } from './website-crd.js';

/** Creates a Website and returns its status once Ready (then stops everything). */
export async function main(): Promise<Website['status']> {
  const cp = await startControlPlane({ nodes: 2 });
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  const manager = new Manager(client, { name: 'website-operator', bindAddress: '127.0.0.1:0', handleSignals: false });
  const running = manager.add(websiteController).start();
  try {
    await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(websiteCrd);
    const websites = client.resource<Website>('example.kanri.dev/v1', 'Website');
    for (;;) {
      try {
        await websites.create({
          metadata: { name: 'hello', namespace: 'default' },
          spec: { html: '<h1>Hello, Kanri</h1>' },
        });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200)); // the CRD is not served yet
      }
    }
    for (;;) {
      const site = await websites.get('hello', { namespace: 'default' });
      if (site.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return site.status;
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    manager.stop();
    await running;
    await client.close();
    await cp.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await main(), null, 2));
}
