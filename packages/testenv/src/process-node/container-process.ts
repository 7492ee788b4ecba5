/**
 * One run of a container: a process started in its own process group through
 * `setpriv --pdeathsig KILL` (and, when running as root, a user switch), logging to a file.
 * When the first process exits the rest of the group is killed, as a container runtime does
 * when a container's PID 1 exits.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import type { ExitStatus } from '../managed-process.js';
import { type GroupReaper, killGroup } from './group-reaper.js';
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

export class ContainerProcess {
  /** The process ID, which is also the process group ID. -1 if the spawn failed. */
  readonly pid: number;
  readonly startedAt: Date;
  /** Resolves when the first process has exited and the rest of its group has been killed. */
  readonly exited: Promise<ExitStatus & { readonly spawnError?: string }>;
  #running = true;

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
        env: spec.env,
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
          killGroup(this.pid, 'SIGKILL');
          reaper.remove(this.pid);
        }
        resolve({ code, signal, spawnError });
      });
    });
  }

  get running(): boolean {
    return this.#running;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.#running && this.pid > 0) killGroup(this.pid, signal);
  }

  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the first process has exited. */
  async stop(graceMs: number): Promise<ExitStatus> {
    if (!this.#running) return this.exited;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
