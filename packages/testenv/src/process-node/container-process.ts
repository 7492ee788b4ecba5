/**
 * One run of a container: a process started in its own process group through
 * `setpriv --pdeathsig KILL` (and, when running as root, a user switch), logging to a file.
 * When the first process exits the rest of the group is killed, with every descendant of it that
 * left for a session of its own, as a container runtime kills the cgroup when PID 1 exits.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import type { ExitStatus } from '../managed-process.js';
import { type GroupReaper, killGroup } from './group-reaper.js';
import {
  CONTAINER_RUN_VARIABLE,
  escapedProcesses,
  killMarked,
  killProcessTrees,
  type ProcessEntry,
  stillRunning,
} from './process-tree.js';
import { type RunAs, setprivUserArgs } from './users.js';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

export interface ContainerSpawn {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly runAs: RunAs;
  /** stdout and stderr are appended here. */
  readonly logFile: string;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export class ContainerProcess {
  /** The process ID, which is also the process group ID. -1 if the spawn failed. */
  readonly pid: number;
  readonly startedAt: Date;
  /** Resolves when the first process has exited and the rest of its tree has been killed. */
  readonly exited: Promise<ExitStatus & { readonly spawnError?: string }>;
  #running = true;
  /** Descendants outside the group when a stop began, killed when the first process exits. */
  #escaped: readonly ProcessEntry[] = [];
  /**
   * In every process's environment: daemons that double-forked out of the tree (pgBackRest's
   * asynchronous archiver, say) are found by it and ended with the container, as its cgroup would.
   */
  readonly #marker = randomUUID();

  constructor(spec: ContainerSpawn, reaper: GroupReaper) {
    this.startedAt = new Date();
    const [program, ...args] = spec.argv;
    if (!program) throw new Error('empty argv');
    const userArgs = setprivUserArgs(spec.runAs);
    if (userArgs.length > 0 && !SETPRIV) throw new Error('switching user needs util-linux setpriv');
    const [command, commandArgs] = SETPRIV
      ? [SETPRIV, [...userArgs, '--pdeathsig', 'KILL', '--', program, ...args]]
      : [program, args];
    const log = openSync(spec.logFile, 'a');
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, commandArgs, {
        cwd: spec.cwd,
        env: { ...spec.env, [CONTAINER_RUN_VARIABLE]: this.#marker },
        stdio: ['ignore', log, log],
        detached: true,
      });
    } finally {
      closeSync(log);
    }
    this.pid = child.pid ?? -1;
    if (this.pid > 0) reaper.add(this.pid);
    this.exited = new Promise((resolve) => {
      let spawnError: string | undefined;
      child.once('error', (error) => {
        spawnError = error.message;
        if (this.pid <= 0) {
          this.#running = false;
          resolve({ code: 127, signal: null, spawnError });
        }
      });
      child.once('exit', (code, signal) => {
        this.#running = false;
        if (this.pid > 0) {
          // The first process is gone, so only what is left of its group (and what a stop saw
          // outside it) leads to the rest. Its PID is a root only while the group holds it.
          const roots = [...(groupAlive(this.pid) ? [this.pid] : []), ...stillRunning(this.#escaped)];
          if (roots.length > 0) killProcessTrees(roots);
          killMarked(this.#marker);
          reaper.remove(this.pid);
        }
        resolve({ code, signal, spawnError });
      });
    });
  }

  get running(): boolean {
    return this.#running;
  }

  /** `signal` to the process group; SIGKILL goes to every process of the tree. */
  signal(signal: NodeJS.Signals): void {
    if (!this.#running || this.pid <= 0) return;
    if (signal === 'SIGKILL') {
      killProcessTrees([this.pid]);
      killMarked(this.#marker);
    } else killGroup(this.pid, signal);
  }

  /**
   * SIGTERM to the group, SIGKILL (to the tree) after `graceMs`; resolves once the first process
   * has exited and the rest of its tree has been killed.
   */
  async stop(graceMs: number): Promise<ExitStatus> {
    if (!this.#running) return this.exited;
    // The group may end on SIGTERM before its first process does, orphaning what left the group.
    this.#escaped = escapedProcesses(this.pid);
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
