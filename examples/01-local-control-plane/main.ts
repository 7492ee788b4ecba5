/** Example 01: start a real control plane, talk to it with kubectl, stop it. */
import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { startControlPlane } from '@kanri/testenv';

const run = promisify(execFile);

/** Creates a namespace with kubectl and returns what `kubectl get namespaces` printed. */
export async function main(): Promise<string> {
  const cp = await startControlPlane();
  try {
    const kubectl = cp.binaries.kubectl ?? 'kubectl';
    const env = { ...process.env, KUBECONFIG: cp.kubeconfigPath };
    await run(kubectl, ['create', 'namespace', 'hello-kanri'], { env });
    const { stdout } = await run(kubectl, ['get', 'namespaces'], { env });
    return stdout;
  } finally {
    await cp.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await main());
}
