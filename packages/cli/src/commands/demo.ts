/** `kanri dev demo` (the README's `npm start`): shows the local control plane doing real work, step by step. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startControlPlane } from '@kanri/testenv';
import { stringify } from 'yaml';
import { waitForShutdownSignal } from '../options.js';

const run = promisify(execFile);
const NAMESPACE = 'kanri-demo';

/** A Deployment whose Pods kwok reports Running and Ready; no image is ever pulled. */
function buildDemoManifests(): string {
  const labels = { app: 'hello' };
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'hello', namespace: NAMESPACE },
      spec: {
        replicas: 3,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'hello', image: 'registry.k8s.io/pause:3.10' }] },
        },
      },
    },
  ];
  return objects.map((o) => stringify(o)).join('---\n');
}

export async function runDemo(options: { once: boolean }): Promise<void> {
  const step = (n: number, text: string) => console.log(`[${n}/4] ${text}`);
  let started = Date.now();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

  step(1, 'Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with 2 nodes…');
  const cp = await startControlPlane({ controllers: true, nodes: 2 });
  try {
    console.log(`      ready at ${cp.server} in ${seconds()}`);
    const kubectl = async (args: string[], input?: string) => {
      const child = run(cp.binaries.kubectl ?? 'kubectl', args, {
        env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
      });
      if (input !== undefined) {
        child.child.stdin?.end(input);
      }
      return (await child).stdout;
    };

    started = Date.now();
    step(2, `Applying a 3-replica Deployment in namespace ${NAMESPACE} with kubectl…`);
    process.stdout.write(await kubectl(['apply', '-f', '-'], buildDemoManifests()));

    step(3, 'Waiting for the scheduler to place the Pods and the nodes to report them Ready…');
    await kubectl(['rollout', 'status', 'deployment/hello', '-n', NAMESPACE, '--timeout=120s']);
    console.log(`      3/3 Pods Ready in ${seconds()}`);
    process.stdout.write(await kubectl(['get', 'nodes']));
    process.stdout.write(await kubectl(['get', 'pods', '-n', NAMESPACE, '-o', 'wide']));

    if (options.once) {
      step(4, 'It works (--once): stopping the control plane.');
      return;
    }
    step(4, 'The control plane is yours. In another shell:');
    console.log(`export KUBECONFIG=${cp.kubeconfigPath}`);
    console.log(`${cp.binaries.kubectl ?? 'kubectl'} get pods -n ${NAMESPACE}`);
    console.log('Press Ctrl-C to stop it.');
    await waitForShutdownSignal();
    console.log('Stopping…');
  } finally {
    await cp.stop();
  }
}
