/**
 * pgBackRest's TLS server as a child of the agent (`pgbackrest --config=<file> server`): started
 * when wanted, restarted when its certificate or configuration changes or when it died, and
 * stopped with the agent (it also dies with it: parent-death signal).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { forEachLine, withParentDeathSignal } from '../commands.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';

export class PgBackRestServerProcess {
  readonly #bin: string;
  readonly #log: Logger;
  readonly #redactor: Redactor;
  #child: ChildProcess | undefined;
  #key: string | undefined;

  constructor(bin: string, log: Logger, redactor: Redactor) {
    this.#bin = bin;
    this.#log = log;
    this.#redactor = redactor;
  }

  /** The server is running. */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /**
   * Runs the server on `confFile`; `key` names what it started from (certificate and
   * configuration): a different key restarts it, since the server reads both only at start.
   */
  async ensure(confFile: string, key: string): Promise<void> {
    if (this.#child && this.#key === key) return;
    if (this.#child) {
      this.#log.info('pgBackRest TLS server: configuration or certificate changed; restarting');
      await this.stop();
    }
    const [file, argv] = withParentDeathSignal(this.#bin, [`--config=${confFile}`, 'server'], 'TERM');
    const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    this.#key = key;
    forEachLine(child.stderr, (line) => {
      if (line.trim()) this.#log.warn({ tool: 'pgbackrest', command: 'server' }, this.#redactor.redact(line));
    });
    child.once('error', (error) => this.#log.error({ err: error }, 'cannot start the pgBackRest TLS server'));
    child.once('exit', (code, signal) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      this.#log.warn({ code, signal }, 'the pgBackRest TLS server exited; it starts again on the next lap');
    });
    this.#log.info({ pid: child.pid }, 'pgBackRest TLS server started');
  }

  /** Stops the server (TERM) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    this.#key = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}
