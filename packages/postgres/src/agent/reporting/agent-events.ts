/** Events the agent records about its cluster (about its own Pod until the cluster is known). Best effort. */
import type { KubeClient, KubeObject } from '@kanri/client';
import { EventRecorder } from '@kanri/runtime';
import type { AgentConfig } from '../config.js';
import type { Logger } from '../log/logger.js';

export class AgentEvents {
  readonly #recorder: EventRecorder;
  readonly #config: Pick<AgentConfig, 'podName' | 'namespace'>;
  readonly #cluster: () => KubeObject | undefined;

  constructor(
    client: KubeClient,
    config: Pick<AgentConfig, 'podName' | 'namespace'>,
    log: Logger,
    cluster: () => KubeObject | undefined,
  ) {
    this.#config = config;
    this.#cluster = cluster;
    this.#recorder = new EventRecorder({
      client,
      controller: 'postgres.kanri.dev/instance-agent',
      instance: config.podName,
      logger: log,
    });
  }

  /** Records an Event; never throws, never waits for the API (the callers are on failover paths). */
  record(type: 'Normal' | 'Warning', reason: string, note: string): void {
    const regarding: KubeObject = this.#cluster() ?? {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: this.#config.podName, namespace: this.#config.namespace },
    };
    void this.#recorder.record(regarding, type, reason, note).catch(() => undefined);
  }
}
