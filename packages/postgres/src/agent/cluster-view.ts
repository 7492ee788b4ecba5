/**
 * The agent's typed, cached view of its cluster: the PostgresCluster (decoded with the operator's
 * own zod schema, defaults applied), its ConfigMap, its Pods and its leader Lease, each followed
 * through a @kanri/cache informer (the Lease through the runtime's LeaseFollower). Every lap of
 * the agent reads from here instead of asking the API server.
 *
 * Guarantees: `spec` is the last version of the spec that passed the schema (a spec the API server
 * admitted always does; one that does not is logged and ignored). Caveat: the caches lag the API
 * server by one watch event; decisions that must not act on a stale Lease re-read it (`lease.refresh`).
 */

import { Informer } from '@kanri/cache';
import type { KubeClient, KubeObject } from '@kanri/client';
import { LeaseFollower } from '@kanri/runtime';
import type { ConfigMap, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { type PostgresClusterSpec, postgresClusterSpec } from '../api/postgres-cluster.js';
import {
  API_VERSION,
  type HaSettings,
  haSettings,
  KIND,
  LABEL,
  names,
  REPO_HOST_LABEL,
  readPodReport,
} from '../contract/index.js';
import type { AgentConfig } from './config.js';
import type { Logger } from './log/logger.js';

/** Who the primary is: the holder of the leader Lease, and what its Pod says. */
/** The PostgresCluster as stored: its spec is decoded by the schema, never trusted as typed. */
type StoredCluster = KubeObject & { readonly spec?: unknown };

export interface LeaderInfo {
  /** The holder's Pod name; undefined when there is no Lease or nobody holds it. */
  readonly holder: string | undefined;
  /** The holder Pod's IP, when it has one. */
  readonly podIP: string | undefined;
  /** The holder's last reported LSN (from its report), for the replicas' lag. */
  readonly lsn: string | undefined;
  /** The holder last reported itself ready. */
  readonly ready: boolean;
}

export class ClusterView {
  readonly #config: Pick<AgentConfig, 'namespace' | 'cluster'>;
  readonly #log: Logger;
  readonly #cluster: Informer<StoredCluster>;
  readonly #configMap: Informer<ConfigMap>;
  /** Absent for a view that must not read PostgreSQL's keys (the repo host's). */
  readonly #tls: Informer<Secret> | undefined;
  readonly #pods: Informer<Pod>;
  readonly lease: LeaseFollower;
  #spec: PostgresClusterSpec | undefined;
  #specVersion: string | undefined;

  constructor(
    client: KubeClient,
    config: Pick<AgentConfig, 'namespace' | 'cluster'>,
    log: Logger,
    options: { readonly postgresTls?: boolean } = {},
  ) {
    this.#config = config;
    this.#log = log;
    const { namespace, cluster } = config;
    const onError = (what: string) => (error: unknown, retryInMs: number) =>
      log.warn({ err: error, retryInMs }, `cannot follow ${what}; retrying`);
    this.#cluster = new Informer(client.resource<StoredCluster>(API_VERSION, KIND), {
      namespace,
      fieldSelector: `metadata.name=${cluster}`,
      onError: onError('the PostgresCluster'),
    });
    this.#configMap = new Informer(client.resource<ConfigMap>('v1', 'ConfigMap'), {
      namespace,
      fieldSelector: `metadata.name=${names.config(cluster)}`,
      onError: onError('the configuration'),
    });
    this.#tls =
      options.postgresTls === false
        ? undefined
        : new Informer(client.resource<Secret>('v1', 'Secret'), {
            namespace,
            fieldSelector: `metadata.name=${names.postgresTls(cluster)}`,
            onError: onError("PostgreSQL's TLS Secret"),
          });
    this.#pods = new Informer(client.resource<Pod>('v1', 'Pod'), {
      namespace,
      labelSelector: { [LABEL.cluster]: cluster },
      // Our own label and report patches show at once in reads.
      client,
      onError: onError("the cluster's Pods"),
    });
    this.lease = new LeaseFollower({
      client,
      namespace,
      name: names.leaderLease(cluster),
      onError: onError('the leader Lease'),
    });
  }

  start(): this {
    this.#cluster.start();
    this.#configMap.start();
    this.#tls?.start();
    this.#pods.start();
    this.lease.start();
    return this;
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.#cluster.stop(),
      this.#configMap.stop(),
      this.#tls?.stop(),
      this.#pods.stop(),
      this.lease.stop(),
    ]);
  }

  /** Resolves once the cluster object, the ConfigMap and the TLS Secret are known (present or not), or on abort. */
  async waitForConfig(signal: AbortSignal): Promise<void> {
    await Promise.all([
      this.#cluster.waitForSync(signal),
      this.#configMap.waitForSync(signal),
      this.#tls?.waitForSync(signal),
    ]).catch(() => undefined);
  }

  /** Resolves once the Pods and the Lease are known, or on abort. */
  async waitForMembers(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#pods.waitForSync(signal), this.lease.waitForSync(signal)]).catch(() => undefined);
  }

  /** Runs `handler` on every change of the PostgresCluster object; returns the unsubscribe function. */
  onClusterChange(handler: () => void): () => void {
    return this.#cluster.onChange(() => handler());
  }

  /** Runs `handler` with the ConfigMap's data on every change; returns the unsubscribe function. */
  onConfigChange(handler: (data: Readonly<Record<string, string>> | undefined) => void): () => void {
    return this.#configMap.onChange((delta) =>
      handler(delta.type === 'deleted' ? undefined : (delta.object.data as Readonly<Record<string, string>>)),
    );
  }

  /** Runs `handler` on every change of PostgreSQL's TLS Secret; returns the unsubscribe function. */
  onTlsChange(handler: () => void): () => void {
    return this.#tls?.onChange(() => handler()) ?? (() => undefined);
  }

  /**
   * The TLS Secret's and the ConfigMap's caches have listed once: absent from them now means
   * deleted, not "not known yet". A view that follows no TLS Secret (the repo host's) never knows
   * it, so it never takes it for deleted.
   */
  get materialKnown(): { readonly tls: boolean; readonly config: boolean } {
    return { tls: this.#tls?.status.synced ?? false, config: this.#configMap.status.synced };
  }

  /** PostgreSQL's TLS Secret's data (base64, as stored); undefined while it does not exist. */
  get tlsData(): Readonly<Record<string, string>> | undefined {
    const secret = this.#tls?.getByName(this.#config.namespace, names.postgresTls(this.#config.cluster));
    return secret?.data as Readonly<Record<string, string>> | undefined;
  }

  /** The PostgresCluster as stored (annotations included); undefined when it does not exist. */
  get cluster(): StoredCluster | undefined {
    return this.#cluster.getByName(this.#config.namespace, this.#config.cluster) as StoredCluster | undefined;
  }

  /** The spec, decoded and defaulted by the API's own schema; undefined until one decodes. */
  get spec(): PostgresClusterSpec | undefined {
    const object = this.cluster;
    const version = object?.metadata?.resourceVersion;
    if (object && version !== this.#specVersion) {
      this.#specVersion = version;
      const parsed = postgresClusterSpec.safeParse(object.spec);
      if (parsed.success) this.#spec = parsed.data;
      else
        this.#log.error(
          { problems: parsed.error.issues.slice(0, 5).map((issue) => `${fieldPath(issue.path)}: ${issue.message}`) },
          `the PostgresCluster spec does not decode (${fieldPath(parsed.error.issues[0]?.path ?? [])}); keeping the last one that did`,
        );
    }
    return this.#spec;
  }

  /** The HA settings, defaults filled in (contract/ha-defaults.ts). */
  get ha(): HaSettings {
    return haSettings(this.spec);
  }

  /** An annotation on the PostgresCluster (`switchover-force` and the like). */
  clusterAnnotation(key: string): string | undefined {
    return this.cluster?.metadata?.annotations?.[key];
  }

  /** The ConfigMap's data, undefined while it does not exist. */
  get configData(): Readonly<Record<string, string>> | undefined {
    const configMap = this.#configMap.getByName(this.#config.namespace, names.config(this.#config.cluster));
    return configMap?.data as Readonly<Record<string, string>> | undefined;
  }

  /** Runs `handler` on every change of the cluster's Pods; returns the unsubscribe function. */
  onPodsChange(handler: () => void): () => void {
    return this.#pods.onChange(() => handler());
  }

  /** The cluster's instance Pods, as the cache has them: the repo host is no instance (no slot, no candidate). */
  pods(): Pod[] {
    return (this.#pods.list() as Pod[]).filter((pod) => pod.metadata?.labels?.[REPO_HOST_LABEL] === undefined);
  }

  /** The Pods' cache holds a complete list (it may lag, never miss a member it has listed once). */
  get podsSynced(): boolean {
    return this.#pods.status.synced;
  }

  pod(name: string): Pod | undefined {
    return this.#pods.getByName(this.#config.namespace, name) as Pod | undefined;
  }

  /** The Lease's holder and its Pod, from the caches. */
  leader(holder: string | undefined): LeaderInfo {
    if (!holder) return { holder: undefined, podIP: undefined, lsn: undefined, ready: false };
    const pod = this.pod(holder);
    const report = readPodReport(pod);
    return { holder, podIP: pod?.status?.podIP || undefined, lsn: report?.receivedLsn, ready: report?.ready === true };
  }
}

/** `spec.users[2].options`, as kubectl and the API server name fields. */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) => (typeof key === 'number' ? `${text}[${key}]` : `${text}.${String(key)}`),
    'spec',
  );
}
