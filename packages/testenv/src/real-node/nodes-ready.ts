/** Waits until every real node's kubelet has registered its Node and reports it Ready. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kubeconfig } from '../credentials/kubeconfig.js';
import { ComponentStartError } from '../errors.js';
import { restRequest, restTargetFromKubeconfig } from '../rest.js';
import type { RealNode } from './real-node.js';

interface NodeList {
  items?: {
    metadata: { name: string };
    status?: { conditions?: { type: string; status: string; message?: string }[] };
  }[];
}

/** Fails at once, with the kubelet's log, when a kubelet exits; after `timeoutMs`, names the nodes still not Ready and why. */
export async function waitForNodesReady(
  context: { readonly adminKubeconfig: Kubeconfig },
  nodes: readonly RealNode[],
  timeoutMs: number,
): Promise<void> {
  const target = restTargetFromKubeconfig(context.adminKubeconfig);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      for (const node of nodes) {
        const kubelet = node.kubelet;
        if (kubelet && !kubelet.running) {
          throw new ComponentStartError(kubelet.name, 'exited before its Node was Ready', await kubelet.logTail());
        }
      }
      const list = await restRequest<NodeList>(
        target,
        'GET',
        '/api/v1/nodes?labelSelector=kanri.dev%2Freal-node%3Dtrue',
      );
      const ready = (name: string) =>
        list.body.items?.find((n) => n.metadata.name === name)?.status?.conditions?.find((c) => c.type === 'Ready');
      const waiting = nodes.filter((n) => ready(n.name)?.status !== 'True');
      const first = waiting[0];
      if (!first) return;
      if (Date.now() > deadline) {
        throw new ComponentStartError(
          first.kubelet?.name ?? first.name,
          `not Ready after ${timeoutMs} ms: ${waiting.map((n) => `${n.name} (${ready(n.name)?.message ?? 'no Node yet'})`).join(', ')}`,
          (await first.kubelet?.logTail()) ?? '',
        );
      }
      await sleep(200);
    }
  } finally {
    await target.dispatcher.close();
  }
}
