/** Example 04: a real node (containerd, kubelet, kube-proxy) runs a real image behind a Service. */
import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ensureTestImages, realNodesUnsupportedReason, startControlPlane } from '@kanri/testenv';

const run = promisify(execFile);

/**
 * Runs two replicas of the echo image on one real node, exposes them with a Service, and returns
 * what the Service answered from the host (through kube-proxy) and `kubectl get pods -o wide`.
 */
export async function main(): Promise<{ answer: string; pods: string }> {
  const reason = await realNodesUnsupportedReason();
  if (reason) throw new Error(`this machine cannot run real nodes: ${reason}`);
  const images = await ensureTestImages();
  const cp = await startControlPlane({ realNodes: { count: 1, imageArchives: [images.echo.archive] } });
  try {
    const kubectl = async (...args: string[]) =>
      (await run(cp.binaries.kubectl ?? 'kubectl', args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } }))
        .stdout;
    // No registry is reachable: the image was imported when the node started. Its tag is not
    // `latest`, so the default pull policy (IfNotPresent) never tries to pull it. (Patching the
    // policy in afterwards would roll the Deployment a second time.)
    await kubectl('create', 'deployment', 'echo', `--image=${images.echo.ref}`, '--replicas=2', '--port=8080');
    await kubectl('expose', 'deployment', 'echo', '--port=80', '--target-port=8080');
    await kubectl('rollout', 'status', 'deployment/echo', '--timeout=60s');
    const clusterIp = await kubectl('get', 'service', 'echo', '-o', 'jsonpath={.spec.clusterIP}');
    // kube-proxy may need a moment after the rollout to program the Service.
    let answer = '';
    for (let attempt = 0; !answer; attempt++) {
      try {
        answer = await (await fetch(`http://${clusterIp}/`, { signal: AbortSignal.timeout(2_000) })).text();
      } catch (error) {
        if (attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    return { answer, pods: await kubectl('get', 'pods', '-o', 'wide') };
  } finally {
    await cp.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { answer, pods } = await main();
  console.log(pods);
  console.log(answer);
}
