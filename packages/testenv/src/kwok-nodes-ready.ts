/** Registers kwok's nodes and waits until each reports Ready, failing fast (with kwok's log) if kwok exits. */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildKwokNode } from './components/kwok.js';
import type { Kubeconfig } from './credentials/kubeconfig.js';
import { ComponentStartError } from './errors.js';
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

/**
 * Starts kwok and waits for its nodes, starting it again when it crashed before they were Ready.
 * kwok v0.8.0 can crash at start: its CEL library (easycel) fills a global map from more than one
 * goroutine, and Go ends such a process ("concurrent map writes"). One CI run in about twenty
 * met it. A kwok that is still running, or a third crash, fails the start with its log.
 *
 * @example
 * ```ts
 * await startKwok(() => start('kwok', 'kwok', args), (kwok) => waitNodesReady(kubeconfig, ['kwok-node-0'], kwok, 60_000));
 * ```
 */
export async function startKwok(
  launch: () => ManagedProcess,
  ready: (kwok: ManagedProcess) => Promise<void>,
  attempts = 3,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const kwok = launch();
    try {
      await ready(kwok);
      return;
    } catch (error) {
      if (kwok.running || attempt >= attempts) throw error;
      const log = await readFile(kwok.logFile, 'utf8').catch(() => '');
      const why = [...log.matchAll(/^(?:fatal error|panic): .*$/gm)].at(-1)?.[0] ?? `exit ${(await kwok.exited).code}`;
      process.stderr.write(
        `kanri testenv: kwok crashed at start (${why}); starting it again (${attempt + 1}/${attempts})\n`,
      );
    }
  }
}
