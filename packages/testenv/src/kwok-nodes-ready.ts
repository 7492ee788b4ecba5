/** Registers kwok's nodes and waits until each reports Ready, failing fast (with kwok's log) if kwok exits. */
import { setTimeout as sleep } from 'node:timers/promises';
import { buildKwokNode } from './components/kwok.js';
import { ComponentStartError } from './errors.js';
import type { Kubeconfig } from './kubeconfig.js';
import type { ManagedProcess } from './managed-process.js';
import { restRequest, restTargetFromKubeconfig } from './rest.js';

/** Waits until every named node reports the Ready condition True. */
export async function waitNodesReady(
  kubeconfig: Kubeconfig,
  names: readonly string[],
  kwok: ManagedProcess,
  timeoutMs: number,
) {
  const target = restTargetFromKubeconfig(kubeconfig);
  const deadline = Date.now() + timeoutMs;
  try {
    for (const name of names) {
      const created = await restRequest(target, 'POST', '/api/v1/nodes', buildKwokNode(name));
      if (created.status !== 201 && created.status !== 409) {
        throw new ComponentStartError('kwok', `creating node ${name} failed with ${created.status}`, '', {
          cause: created.body,
        });
      }
    }
    let notReady = [...names];
    while (notReady.length > 0) {
      if (!kwok.running)
        throw new ComponentStartError('kwok', 'exited before its nodes became Ready', await kwok.logTail());
      if (Date.now() > deadline) {
        throw new ComponentStartError(
          'kwok',
          `nodes not Ready after ${timeoutMs} ms: ${notReady.join(', ')}`,
          await kwok.logTail(),
        );
      }
      const list = await restRequest<{
        items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
      }>(target, 'GET', '/api/v1/nodes');
      const ready = new Set(
        (list.body.items ?? [])
          .filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          .map((n) => n.metadata.name),
      );
      notReady = notReady.filter((n) => !ready.has(n));
      if (notReady.length > 0) await sleep(100);
    }
  } finally {
    await target.dispatcher.close();
  }
}
