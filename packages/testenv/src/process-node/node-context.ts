/** What the parts of a process node share, and what a container runner needs from its Pod. */
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import type { Api } from './api.js';
import type { EnvContext } from './env.js';
import type { GroupReaper } from './group-reaper.js';
import type { ImageMappings } from './image.js';
import type { PodNetwork } from './pod-network.js';
import type { PasswdEntry, RunAsResult } from './users.js';
import type { PreparedVolumes } from './volumes/volumes.js';

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

/** The Pod a container runs in, as its runner sees it. */
export interface PodHost {
  readonly context: NodeContext;
  readonly pod: Pod;
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`, for log lines. */
  readonly key: string;
  readonly logDir: string;
  readonly podIP: string | undefined;
  readonly volumes: PreparedVolumes | undefined;
  readonly kubeconfigPath: string | undefined;
  /** Aborted when the Pod is torn down (deleted, gone, terminal, or the node stops). */
  readonly signal: AbortSignal;
  markDirty(): void;
  graceMs(): number;
  envContext(): EnvContext;
  runAsOf(container: Container): RunAsResult;
}
