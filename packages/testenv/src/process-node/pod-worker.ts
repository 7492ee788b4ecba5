/**
 * Everything a kubelet does for one Pod, with processes instead of containers: an address,
 * volumes and credentials (the "sandbox"), init containers in order, then the containers with
 * restarts, probes and status, and on deletion a graceful stop and the final delete.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container, ContainerStatus, Pod } from 'kubernetes-types/core/v1.js';
import { ApiError, encode, kubeTime } from './api.js';
import { ContainerRunner, type RestartPolicy } from './container-runner.js';
import { findImageMapping } from './image.js';
import { HOST_IP, type NodeContext, type PodHost, type ProcessContainer } from './node-context.js';
import { buildPodStatus } from './pod-status.js';
import { buildPodKubeconfig, requestPodToken, writeSecretFile } from './service-account.js';
import { type RunAs, resolveRunAs } from './users.js';
import {
  type PreparedVolumes,
  prepareVolumes,
  type ServiceAccountTokenFile,
  VolumeNotReady,
} from './volumes/volumes.js';

export class PodWorker implements PodHost {
  readonly context: NodeContext;
  pod: Pod;
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly key: string;
  readonly podDir: string;
  readonly logDir: string;
  podIP: string | undefined;
  volumes: PreparedVolumes | undefined;
  kubeconfigPath: string | undefined;
  readonly #initRunners: ContainerRunner[];
  readonly #runners: ContainerRunner[];
  readonly #abort = new AbortController();
  readonly #startTime: string;
  #sandboxReady = false;
  #sandboxMessage: string | undefined;
  #initialized = false;
  #initFailed = false;
  #terminating: Promise<void> | undefined;
  #finalDeleteDone = false;
  #statusTimer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #lastWritten = '';
  #stopWriting = false;
  #tokenTimer: NodeJS.Timeout | undefined;
  readonly #tokenRefreshAt = new Map<string, { file: ServiceAccountTokenFile; at: number }>();
  #running: Promise<void> = Promise.resolve();

  constructor(context: NodeContext, pod: Pod) {
    this.context = context;
    this.pod = pod;
    this.uid = pod.metadata?.uid ?? '';
    this.namespace = pod.metadata?.namespace ?? 'default';
    this.name = pod.metadata?.name ?? '';
    this.key = `${this.namespace}/${this.name}`;
    this.podDir = join(context.nodeDir, 'pods', this.uid);
    this.logDir = join(context.nodeDir, 'logs', `${this.namespace}_${this.name}_${this.uid}`);
    this.#startTime = pod.status?.startTime ?? kubeTime();
    // An adopted Pod (the node restarted) keeps counting restarts where the last status left off.
    const previous = (list: ContainerStatus[] | undefined, name: string) =>
      list?.find((s) => s.name === name) !== undefined ? (list.find((s) => s.name === name)?.restartCount ?? 0) + 1 : 0;
    this.#initRunners = (pod.spec?.initContainers ?? []).map(
      (c) => new ContainerRunner(this, c, true, previous(pod.status?.initContainerStatuses, c.name)),
    );
    this.#runners = (pod.spec?.containers ?? []).map(
      (c) => new ContainerRunner(this, c, false, previous(pod.status?.containerStatuses, c.name)),
    );
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get terminating(): boolean {
    return this.#terminating !== undefined;
  }

  runAsOf(container: Container) {
    return resolveRunAs({
      mappingUser: findImageMapping(this.context.images, container.image ?? '')?.user,
      pod: this.pod.spec?.securityContext,
      container: container.securityContext,
      passwd: this.context.passwd,
      self: this.context.self,
    });
  }

  envContext() {
    return { podIP: this.podIP ?? HOST_IP, hostIP: HOST_IP, allocatable: this.context.allocatable };
  }

  /** The grace period for stopping containers: the Pod's, capped. */
  graceMs(): number {
    const seconds = this.pod.metadata?.deletionGracePeriodSeconds ?? this.pod.spec?.terminationGracePeriodSeconds ?? 30;
    return Math.min(seconds, this.context.maxGracePeriodSeconds) * 1000;
  }

  containers(): ProcessContainer[] {
    return [...this.#initRunners, ...this.#runners].map((r) => r.snapshot(this));
  }

  /** Takes the latest version of the Pod from the API. */
  update(pod: Pod): void {
    this.pod = pod;
    if (pod.metadata?.deletionTimestamp) void this.terminate(true);
  }

  start(): void {
    this.#running = this.#run().catch((error: unknown) =>
      this.context.log(`${this.key}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
    );
  }

  /** The user that owns a volume: the first container (init containers first) that mounts it. */
  #volumeUsers(volume: string): RunAs[] {
    const users: RunAs[] = [];
    for (const container of [...(this.pod.spec?.initContainers ?? []), ...(this.pod.spec?.containers ?? [])]) {
      if (!container.volumeMounts?.some((m) => m.name === volume)) continue;
      const runAs = this.runAsOf(container);
      if (runAs.ok) users.push(runAs.runAs);
    }
    return users;
  }

  async #writeToken(file: ServiceAccountTokenFile): Promise<void> {
    const issued = await requestPodToken(this.context.api, this.pod, file.audience, file.expirationSeconds);
    await writeSecretFile(file.path, issued.token, file.mode, file.owner);
    // Refresh at 80% of the lifetime, as the kubelet does.
    const lifetime = issued.expiresAt.getTime() - Date.now();
    this.#tokenRefreshAt.set(file.path, { file, at: Date.now() + lifetime * 0.8 });
  }

  async #refreshTokens(): Promise<void> {
    for (const { file, at } of [...this.#tokenRefreshAt.values()]) {
      if (Date.now() < at || this.signal.aborted) continue;
      await this.#writeToken(file).catch((error: unknown) =>
        this.context.log(`${this.key}: token refresh: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
  }

  /** Address, credentials and volumes. Throws while something is not there yet. */
  async #prepareSandbox(): Promise<void> {
    await mkdir(this.podDir, { recursive: true, mode: 0o711 });
    await mkdir(this.logDir, { recursive: true });
    const first = this.pod.spec?.containers[0];
    const firstRunAs = first ? this.runAsOf(first) : undefined;
    const owner = firstRunAs?.ok ? firstRunAs.runAs : undefined;
    if (this.pod.spec?.automountServiceAccountToken !== false) {
      const dir = join(this.podDir, 'serviceaccount');
      await mkdir(dir, { recursive: true, mode: 0o711 });
      const tokenFile = { path: join(dir, 'token'), audience: undefined, expirationSeconds: 3600, mode: 0o600, owner };
      await this.#writeToken(tokenFile);
      const kubeconfigPath = join(dir, 'kubeconfig');
      await writeSecretFile(
        kubeconfigPath,
        buildPodKubeconfig({
          server: this.context.server,
          caPem: this.context.caPem,
          tokenFile: tokenFile.path,
          namespace: this.namespace,
          serviceAccount: this.pod.spec?.serviceAccountName ?? 'default',
        }),
        0o600,
        owner,
      );
      this.kubeconfigPath = kubeconfigPath;
    }
    this.volumes = await prepareVolumes({
      api: this.context.api,
      pod: this.pod,
      podDir: this.podDir,
      env: this.envContext(),
      usersOf: (volume) => this.#volumeUsers(volume),
      writeToken: (file) => this.#writeToken(file),
    });
    this.#tokenTimer = setInterval(() => void this.#refreshTokens(), 30_000);
    this.#tokenTimer.unref();
  }

  async #run(): Promise<void> {
    const signal = this.signal;
    const spec = this.pod.spec;
    this.podIP = spec?.hostNetwork ? HOST_IP : this.context.network.allocate(this.uid, this.pod.status?.podIP);
    this.markDirty();
    while (!signal.aborted) {
      try {
        await this.#prepareSandbox();
        break;
      } catch (error) {
        this.#sandboxMessage = error instanceof Error ? error.message : String(error);
        if (!(error instanceof ApiError) && !(error instanceof VolumeNotReady)) {
          this.context.log(`${this.key}: preparing: ${error instanceof Error ? error.message : String(error)}`);
        }
        this.markDirty();
        await sleep(2_000, undefined, { signal }).catch(() => {});
      }
    }
    if (signal.aborted) return;
    this.#sandboxReady = true;
    this.#sandboxMessage = undefined;
    this.markDirty();
    const policy: RestartPolicy = (spec?.restartPolicy as RestartPolicy | undefined) ?? 'Always';
    const sidecars: Promise<boolean>[] = [];
    for (const runner of this.#initRunners) {
      if (runner.spec.restartPolicy === 'Always') {
        // A sidecar: started in order, kept running alongside the containers.
        sidecars.push(runner.run('Always'));
        await Promise.race([runner.whenStarted(), sleep(60_000, undefined, { signal }).catch(() => {})]);
        continue;
      }
      const ok = await runner.run(policy === 'Never' ? 'Never' : 'OnFailure');
      if (signal.aborted) return;
      if (!ok) {
        this.#initFailed = true;
        this.markDirty();
        return;
      }
    }
    this.#initialized = true;
    this.markDirty();
    await Promise.all(this.#runners.map((runner) => runner.run(policy)));
    if (signal.aborted) return;
    // Every container has ended for good: the Pod is terminal, so its sidecars stop too.
    this.#abort.abort();
    await Promise.all(this.#initRunners.map((runner) => runner.stop(this.graceMs())));
    await Promise.all(sidecars);
    this.markDirty();
  }

  /**
   * Stops every container (SIGTERM to each process group, SIGKILL after the grace period) and,
   * if the Pod is being deleted, deletes it for good as the kubelet does.
   */
  terminate(deleting: boolean, graceMs = this.graceMs()): Promise<void> {
    this.#terminating ??= (async () => {
      this.#abort.abort();
      if (this.#tokenTimer) clearInterval(this.#tokenTimer);
      await Promise.all([...this.#runners, ...this.#initRunners].map((runner) => runner.stop(graceMs)));
      // The run loop may be waiting on the API (preparing volumes); after the abort it starts no
      // process, so there is no need to wait for an unreachable API server to time out.
      await Promise.race([this.#running, sleep(graceMs + 1_000, undefined, { ref: false })]);
      if (!deleting) {
        this.#stopWriting = true;
        return;
      }
      this.markDirty();
      await this.flushStatus();
      this.#stopWriting = true;
      const deleted = await this.context.api
        .delete(`/api/v1/namespaces/${encode(this.namespace)}/pods/${encode(this.name)}`, {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: this.uid },
        })
        .catch((error: unknown) => {
          this.context.log(`${this.key}: final delete: ${error instanceof Error ? error.message : String(error)}`);
          return false;
        });
      this.#finalDeleteDone = deleted;
    })();
    return this.#terminating;
  }

  /**
   * The node lost power: every container's process group is SIGKILLed at once, nothing is written
   * to the API (the Pod keeps its last status), and the worker is done. A new worker adopts the Pod.
   */
  async crash(): Promise<void> {
    this.#stopWriting = true;
    if (this.#statusTimer) clearTimeout(this.#statusTimer);
    if (this.#tokenTimer) clearInterval(this.#tokenTimer);
    this.#abort.abort();
    await Promise.all([...this.#runners, ...this.#initRunners].map((runner) => runner.crash()));
    await Promise.race([this.#running, sleep(2_000, undefined, { ref: false })]);
  }

  /** Stops at once without touching the API (control plane shutdown, or the Pod vanished). */
  kill(graceMs: number): Promise<void> {
    return this.terminate(false, graceMs);
  }

  get finalDeleteDone(): boolean {
    return this.#finalDeleteDone;
  }

  /** Frees the address. The Pod's directory stays until the control plane's data directory goes, so logs outlive it. */
  release(): void {
    this.context.network.release(this.uid);
    if (this.#tokenTimer) clearInterval(this.#tokenTimer);
    if (this.#statusTimer) clearTimeout(this.#statusTimer);
    this.#stopWriting = true;
  }

  markDirty(): void {
    if (this.#stopWriting || this.#statusTimer) return;
    this.#statusTimer = setTimeout(() => {
      this.#statusTimer = undefined;
      void this.flushStatus();
    }, 20);
  }

  #buildStatus() {
    const waitingMessage = this.#sandboxMessage;
    const statuses = (runners: ContainerRunner[]) =>
      runners.map((runner) => {
        const status = runner.status();
        if (!this.#sandboxReady && waitingMessage && status.state?.waiting?.reason === 'ContainerCreating') {
          return { ...status, state: { waiting: { reason: 'ContainerCreating', message: waitingMessage } } };
        }
        return status;
      });
    return buildPodStatus({
      pod: this.pod,
      podIP: this.podIP,
      hostIP: HOST_IP,
      startTime: this.#startTime,
      sandboxReady: this.#sandboxReady,
      initialized: this.#initialized,
      initFailed: this.#initFailed,
      initContainerStatuses: statuses(this.#initRunners),
      containerStatuses: statuses(this.#runners),
      previousPhase: this.pod.status?.phase,
      now: kubeTime(),
    });
  }

  /** Writes the current status through pods/status if it changed; one write at a time. */
  flushStatus(): Promise<void> {
    this.#writing = this.#writing.then(async () => {
      if (this.#stopWriting) return;
      const status = this.#buildStatus();
      const body = JSON.stringify(status);
      if (body === this.#lastWritten) return;
      try {
        const updated = await this.context.api.patch<Pod>(
          `/api/v1/namespaces/${encode(this.namespace)}/pods/${encode(this.name)}/status`,
          // The UID makes the patch fail rather than touch a new Pod that reuses the name.
          { metadata: { uid: this.uid }, status },
          'strategic',
        );
        this.#lastWritten = body;
        if (updated.status?.phase) this.pod = { ...this.pod, status: updated.status };
      } catch (error) {
        if (error instanceof ApiError && (error.status === 404 || error.status === 409 || error.status === 422)) {
          this.#stopWriting = error.status === 404;
          if (error.status !== 404) this.context.log(`${this.key}: status: ${error.message}`);
          return;
        }
        this.context.log(`${this.key}: status: ${error instanceof Error ? error.message : String(error)}`);
        setTimeout(() => this.markDirty(), 1_000).unref();
      }
    });
    return this.#writing;
  }
}
