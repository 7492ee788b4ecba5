/**
 * One container of a Pod: prepares its argv, environment and user, runs it as a process, probes
 * it, and restarts it under the Pod's restart policy with back-off, keeping a kubelet-like status.
 */
import { existsSync } from 'node:fs';
import { chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCeiling } from '@kanri/timing';
import type { ConfigMap, Container, ContainerState, ContainerStatus, Secret } from 'kubernetes-types/core/v1.js';
import { encode, kubeTime } from './api.js';
import { ContainerProcess } from './container-process.js';
import { buildContainerEnv, envReferences } from './env.js';
import { containerArgv, findImageMapping, type ImageMapping, resolveCommand } from './image.js';
import { resolveMountPath, VOLUME_MOUNTS_ENV } from './mount-path.js';
import { HOST_IP, type PodHost, type ProcessContainer } from './node-context.js';
import { type ProbeResult, type ProbeTarget, runProber } from './probe.js';
import type { RunAs } from './users.js';
import { containerMounts } from './volumes/volumes.js';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

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
  return backoffCeiling(consecutiveCrashes, { initialMs: 1_000, maxMs: 10_000 });
}

export class ContainerRunner {
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
  readonly #worker: PodHost;
  #startedWaiters: (() => void)[] = [];
  #killedByProbe = false;

  constructor(worker: PodHost, spec: Container, init: boolean, restartCount: number) {
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
    for (const mount of this.spec.volumeMounts ?? []) {
      const local = mounts[mount.mountPath];
      // As the kubelet does, a missing subPath is created (an existing one may be a file: a configMap key).
      if (mount.subPath && local && !existsSync(local)) {
        await mkdir(local, { recursive: true });
        if (runAs.runAs.switch) await chown(local, runAs.runAs.uid, runAs.runAs.gid);
      }
    }
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
        (error: unknown) =>
          ({
            ok: false,
            reason: 'CreateContainerConfigError',
            message: error instanceof Error ? error.message : String(error),
          }) as const,
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
        this.state = {
          waiting: { reason: 'RunContainerError', message: error instanceof Error ? error.message : String(error) },
        };
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

  /** SIGKILL to the process group at once, no SIGTERM first (the host lost power). */
  async crash(): Promise<void> {
    const run = this.process;
    if (!run?.running) return;
    run.signal('SIGKILL');
    await run.exited;
  }

  snapshot(worker: PodHost): ProcessContainer {
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
