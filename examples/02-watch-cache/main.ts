/** Example 02: a client, server-side apply, and an informer that sees every change. */
import { pathToFileURL } from 'node:url';
import { Informer } from '@kanri/cache';
import { KubeClient } from '@kanri/client';
import { startControlPlane, waitFor } from '@kanri/testenv';

/** Applies three ConfigMaps, changes one, deletes one, and returns what the informer saw. */
export async function main(): Promise<string[]> {
  const cp = await startControlPlane();
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  const configMaps = client.resource('v1', 'ConfigMap');
  const informer = new Informer(configMaps, { namespace: 'default', client }).start();
  const seen: string[] = [];
  informer.onChange((delta) => seen.push(`${delta.type} ${delta.object.metadata?.name}`));
  try {
    await informer.waitForSync(AbortSignal.timeout(30_000));
    for (const name of ['red', 'green', 'blue']) {
      await configMaps.apply(
        { metadata: { name, namespace: 'default', labels: { palette: 'rgb' } }, data: { hex: name } },
        { fieldManager: 'example-02' },
      );
    }
    // Reads reflect our own writes at once, even before the watch has delivered them.
    seen.push(`cached with palette=rgb: ${informer.byIndex('label', 'palette=rgb').length}`);
    await configMaps.delete('green', { namespace: 'default' });
    seen.push(`after delete: ${informer.byIndex('label', 'palette=rgb').length}`);
    // Wait until the watch itself has delivered everything before stopping.
    await waitFor('the watch to deliver the deletion of green', () => seen.includes('deleted green'), 30_000, 50);
    return seen;
  } finally {
    await informer.stop();
    await client.close();
    await cp.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const line of await main()) console.log(line);
}
