/**
 * Everything a kubelet does for one Pod, with processes instead of containers: an address,
 * volumes and credentials (the "sandbox"), init containers in order, then the containers with
 * restarts, probes and status, and on deletion a graceful stop and the final delete.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConfigMap, Container, ContainerState, ContainerStatus, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { type Api, ApiError, encode, kubeTime } from './api.js';
import { ContainerProcess } from './container-process.js';
import { buildContainerEnv, envReferences } from './env.js';
import type { GroupReaper } from './group-reaper.js';
import { containerArgv, findImageMapping, type ImageMapping, type ImageMappings, resolveCommand } from './image.js';
import { resolveMountPath, VOLUME_MOUNTS_ENV } from './mount-path.js';
import type { PodNetwork } from './pod-network.js';
import { buildPodStatus } from './pod-status.js';
import { type ProbeResult, type ProbeTarget, runProber } from './probe.js';
import { buildPodKubeconfig, requestPodToken, writeSecretFile } from './service-account.js';
import { type PasswdEntry, type RunAs, resolveRunAs } from './users.js';
import {
  containerMounts,
  type PreparedVolumes,
  prepareVolumes,
  type ServiceAccountTokenFile,
  VolumeNotReady,
} from './volumes.js';

export const HOST_IP = '127.0.0.1';

/** What every Pod worker of one node shares. */
export interface NodeContext {
  readonly api: Api;
  readonly nodeName: string;
  readonly network: PodNetwork;
  readonly reaper: GroupReaper;
  readonly images: ImageMappings;
  /** This node's directory: pods/<uid> (volumes, credentials) and logs/. */
  readonly nodeDir: string;
  readonly server: string;
  readonly caPem: string;
  readonly allocatable: Readonly<Record<string, string>>;
  readonly maxGracePeriodSeconds: number;
  readonly passwd: readonly PasswdEntry[];
  readonly self: { readonly uid: number; readonly gid: number };
  readonly log: (message: string) => void;
}

/** A snapshot of one container, for tests (PIDs to check or kill, logs to read). */
export interface ProcessContainer {
  readonly namespace: string;
  readonly pod: string;
  readonly podUid: string;
  readonly podIP: string | undefined;
  readonly node: string;
  readonly container: string;
  readonly init: boolean;
  /** The running process (also its process group), or undefined while not running. */
  readonly pid: number | undefined;
  /** Every PID this container has had, oldest first. */
  readonly pids: readonly number[];
  /** stdout and stderr of every run, appended. */
  readonly logFile: string;
  readonly restartCount: number;
  readonly state: 'waiting' | 'running' | 'terminated';
}

type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

const SIGNALS: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGKILL: 9,
  SIGTERM: 15,
  SIGABRT: 6,
  SIGSEGV: 11,
};

/** Restart back-off: 1 s doubling to 10 s (the kubelet's 10 s to 5 min is too slow for tests). */
export function restartDelayMs(consecutiveCrashes: number): number {
  return Math.min(1000 * 2 ** consecutiveCrashes, 10_000);
}

class ContainerRunner {
  readonly spec: Container;
  readonly init: boolean;
  readonly logFile: string;
  restartCount = 0;
  state: ContainerState = { waiting: { reason: 'ContainerCreating' } };
  lastState: ContainerState = {};
  ready = false;
  started = false;
  process: ContainerProcess | undefined;
  readonly pids: number[] = [];
  #env: Record<string, string> = {};
  #runAs: RunAs | undefined;
  #mapping: ImageMapping | undefined;
  readonly #worker: PodWorker;
  #startedWaiters: (() => void)[] = [];
  #killedByProbe = false;

  constructor(worker: PodWorker, spec: Container, init: boolean, restartCount: number) {
    this.#worker = worker;
    this.spec = spec;
    this.init = init;
    this.restartCount = restartCount;
    this.logFile = join(worker.logDir, `${spec.name}.log`);
  }

  status(): ContainerStatus {
    const image = this.spec.image ?? '';
    const id = this.process ? `process://${this.process.pid}` : undefined;
    return {
      name: this.spec.name,
      image,
      imageID: image,
      ...(id && !this.state.waiting ? { containerID: id } : {}),
      ready: this.ready,
      started: this.started,
      restartCount: this.restartCount,
      state: this.state,
      lastState: this.lastState,
    };
  }

  /** Resolves once the container has started (for sidecar init containers). */
  whenStarted(): Promise<void> {
    if (this.started) return Promise.resolve();
    return new Promise((resolve) => this.#startedWaiters.push(resolve));
  }

  #setStarted(started: boolean) {
    this.started = started;
    if (started) for (const resolve of this.#startedWaiters.splice(0)) resolve();
  }

  /** Everything needed to start the process, or why it cannot start (the kubelet's waiting reasons). */
  async #prepare(): Promise<{ ok: true; argv: readonly string[] } | { ok: false; reason: string; message: string }> {
    const worker = this.#worker;
    const { context, pod } = worker;
    const image = this.spec.image ?? '';
    const mapping = findImageMapping(context.images, image);
    if (!mapping) {
      return {
        ok: false,
        reason: 'ErrImagePull',
        message: `image "${image}" is not mapped on process node ${context.nodeName}: declare it in processNodes.images`,
      };
    }
    this.#mapping = mapping;
    const runAs = worker.runAsOf(this.spec);
    if (!runAs.ok) return { ok: false, reason: 'CreateContainerConfigError', message: runAs.message };
    this.#runAs = runAs.runAs;
    const refs = envReferences(this.spec);
    const namespace = worker.namespace;
    const configMaps = new Map<string, ConfigMap>();
    const secrets = new Map<string, Secret>();
    for (const name of refs.configMaps) {
      const cm = await context.api.get<ConfigMap>(`/api/v1/namespaces/${encode(namespace)}/configmaps/${encode(name)}`);
      if (cm) configMaps.set(name, cm);
    }
    for (const name of refs.secrets) {
      const secret = await context.api.get<Secret>(`/api/v1/namespaces/${encode(namespace)}/secrets/${encode(name)}`);
      if (secret) secrets.set(name, secret);
    }
    const built = buildContainerEnv(pod, this.spec, { configMaps, secrets }, worker.envContext());
    if (!built.ok) return built;
    const argv = containerArgv(mapping, this.spec, built.env, { namespace, name: worker.name });
    if (!argv.ok) return argv;
    const mounts = containerMounts(this.spec, worker.volumes?.dirs ?? new Map());
    const mountsJson = JSON.stringify(mounts);
    this.#env = {
      PATH: process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: runAs.runAs.home,
      HOSTNAME: pod.spec?.hostname ?? worker.name,
      ...(worker.kubeconfigPath ? { KUBECONFIG: worker.kubeconfigPath } : {}),
      ...mapping.env,
      ...Object.fromEntries(built.env),
      [VOLUME_MOUNTS_ENV]: mountsJson,
    };
    await mkdir(worker.logDir, { recursive: true });
    return { ok: true, argv: argv.argv };
  }

  #cwd(): string {
    const env = this.#env;
    if (this.spec.workingDir) {
      const resolved = resolveMountPath(this.spec.workingDir, env);
      if (resolved !== this.spec.workingDir) return resolved;
    }
    // A path of the image's filesystem does not exist here; the image mapping names a local one.
    return this.#mapping?.workingDir ?? '/';
  }

  /** Runs an exec probe's command with the container's environment and user. */
  async #exec(command: readonly string[], timeoutMs: number): Promise<ProbeResult> {
    const argv = this.#mapping ? resolveCommand(this.#mapping, command) : undefined;
    if (!argv || !this.#runAs) {
      return {
        ok: false,
        message: `exec probe command ${JSON.stringify(command[0])} is not in the image mapping's "commands"`,
      };
    }
    const probe = new ContainerProcess(
      { argv, env: this.#env, cwd: this.#cwd(), runAs: this.#runAs, logFile: '/dev/null' },
      this.#worker.context.reaper,
    );
    const timer = setTimeout(() => probe.signal('SIGKILL'), timeoutMs);
    const exit = await probe.exited;
    clearTimeout(timer);
    return exit.code === 0 ? { ok: true } : { ok: false, message: `command exited with ${exit.code ?? exit.signal}` };
  }

  #probeTarget(): ProbeTarget {
    return {
      podIP: this.#worker.podIP ?? HOST_IP,
      container: this.spec,
      exec: (command, timeoutMs) => this.#exec(command, timeoutMs),
    };
  }

  /** Starts the probes of one run; a failed liveness or startup probe ends the run. */
  #startProbes(run: ContainerProcess, signal: AbortSignal): void {
    const worker = this.#worker;
    const target = this.#probeTarget();
    const kill = (kind: string, result: ProbeResult) => {
      this.#killedByProbe = true;
      worker.context.log(`${worker.key}/${this.spec.name}: ${kind} probe failed (${result.message ?? ''}); killing`);
      void run.stop(worker.graceMs());
    };
    const readinessAndLiveness = () => {
      const { readinessProbe, livenessProbe } = this.spec;
      if (readinessProbe) {
        void runProber(
          readinessProbe,
          'readiness',
          target,
          (ok) => {
            this.ready = ok;
            worker.markDirty();
          },
          signal,
        );
      } else {
        this.ready = true;
      }
      if (livenessProbe) {
        void runProber(
          livenessProbe,
          'liveness',
          target,
          (ok, result) => {
            if (!ok) kill('liveness', result);
          },
          signal,
        );
      }
    };
    if (this.spec.startupProbe) {
      void runProber(
        this.spec.startupProbe,
        'startup',
        target,
        (ok, result) => {
          if (!ok) {
            kill('startup', result);
            return;
          }
          this.#setStarted(true);
          readinessAndLiveness();
          worker.markDirty();
        },
        signal,
      );
    } else {
      this.#setStarted(true);
      // Init containers are never "ready"; they run to completion.
      if (!this.init || this.spec.restartPolicy === 'Always') readinessAndLiveness();
    }
  }

  /**
   * Runs the container until it ends for good under `policy`, restarting it with back-off.
   * Resolves true if its last run exited 0. Stops when the Pod is being torn down.
   */
  async run(policy: RestartPolicy): Promise<boolean> {
    const worker = this.#worker;
    const signal = worker.signal;
    let crashes = 0;
    let configFailures = 0;
    while (!signal.aborted) {
      const prepared = await this.#prepare().catch(
        (error: Error) => ({ ok: false, reason: 'CreateContainerConfigError', message: error.message }) as const,
      );
      if (signal.aborted) break;
      if (!prepared.ok) {
        this.state = { waiting: { reason: prepared.reason, message: prepared.message } };
        worker.markDirty();
        await sleep(restartDelayMs(configFailures++), undefined, { signal }).catch(() => {});
        continue;
      }
      configFailures = 0;
      let run: ContainerProcess;
      try {
        run = new ContainerProcess(
          { argv: prepared.argv, env: this.#env, cwd: this.#cwd(), runAs: this.#runAs as RunAs, logFile: this.logFile },
          worker.context.reaper,
        );
      } catch (error) {
        this.state = { waiting: { reason: 'RunContainerError', message: (error as Error).message } };
        worker.markDirty();
        await sleep(restartDelayMs(crashes++), undefined, { signal }).catch(() => {});
        continue;
      }
      this.process = run;
      this.#killedByProbe = false;
      if (run.pid > 0) this.pids.push(run.pid);
      const startedAt = kubeTime(run.startedAt);
      this.state = { running: { startedAt } };
      const probes = new AbortController();
      const onAbort = () => probes.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#startProbes(run, probes.signal);
      worker.markDirty();
      const exit = await run.exited;
      probes.abort();
      signal.removeEventListener('abort', onAbort);
      this.ready = false;
      this.#setStarted(false);
      const exitCode = exit.code ?? 128 + (SIGNALS[exit.signal ?? 'SIGKILL'] ?? 9);
      const terminated: ContainerState = {
        terminated: {
          exitCode,
          ...(exit.signal ? { signal: SIGNALS[exit.signal] ?? 0 } : {}),
          reason: exitCode === 0 ? 'Completed' : 'Error',
          ...(exit.spawnError ? { message: exit.spawnError } : {}),
          startedAt,
          finishedAt: kubeTime(),
          containerID: `process://${run.pid}`,
        },
      };
      // The kubelet restarts a container its liveness or startup probe killed unless the policy is Never.
      const failed = exitCode !== 0 || this.#killedByProbe;
      const restart = !signal.aborted && (policy === 'Always' || (policy === 'OnFailure' && failed));
      if (!restart) {
        this.state = terminated;
        worker.markDirty();
        return exitCode === 0;
      }
      // A run that lasted a while was not a crash loop; start the back-off over.
      if (Date.now() - run.startedAt.getTime() > 20_000) crashes = 0;
      const delay = restartDelayMs(crashes++);
      this.restartCount++;
      this.lastState = terminated;
      this.state = {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off ${delay / 1000}s restarting failed container=${this.spec.name} pod=${worker.name}_${worker.namespace}(${worker.uid})`,
        },
      };
      worker.markDirty();
      await sleep(delay, undefined, { signal }).catch(() => {});
      if (signal.aborted) {
        this.state = terminated;
        return exitCode === 0;
      }
    }
    return false;
  }

  async stop(graceMs: number): Promise<void> {
    await this.process?.stop(graceMs);
  }

  snapshot(worker: PodWorker): ProcessContainer {
    const running = this.process?.running === true;
    return {
      namespace: worker.namespace,
      pod: worker.name,
      podUid: worker.uid,
      podIP: worker.podIP,
      node: worker.context.nodeName,
      container: this.spec.name,
      init: this.init,
      pid: running ? this.process?.pid : undefined,
      pids: [...this.pids],
      logFile: this.logFile,
      restartCount: this.restartCount,
      state: running ? 'running' : this.state.terminated ? 'terminated' : 'waiting',
    };
  }
}

export class PodWorker {
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
    this.#running = this.#run().catch((error: Error) =>
      this.context.log(`${this.key}: ${error.stack ?? error.message}`),
    );
  }

  /** The user that owns a volume: the first container (init containers first) that mounts it. */
  #volumeOwner(volume: string): RunAs | undefined {
    for (const container of [...(this.pod.spec?.initContainers ?? []), ...(this.pod.spec?.containers ?? [])]) {
      if (!container.volumeMounts?.some((m) => m.name === volume)) continue;
      const runAs = this.runAsOf(container);
      return runAs.ok ? runAs.runAs : undefined;
    }
    return undefined;
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
      await this.#writeToken(file).catch((error: Error) =>
        this.context.log(`${this.key}: token refresh: ${error.message}`),
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
      ownerOf: (volume) => this.#volumeOwner(volume),
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
        this.#sandboxMessage = (error as Error).message;
        if (!(error instanceof ApiError) && !(error instanceof VolumeNotReady)) {
          this.context.log(`${this.key}: preparing: ${(error as Error).message}`);
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
        .catch((error: Error) => {
          this.context.log(`${this.key}: final delete: ${error.message}`);
          return false;
        });
      this.#finalDeleteDone = deleted;
    })();
    return this.#terminating;
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
        this.context.log(`${this.key}: status: ${(error as Error).message}`);
        setTimeout(() => this.markDirty(), 1_000).unref();
      }
    });
    return this.#writing;
  }
}
