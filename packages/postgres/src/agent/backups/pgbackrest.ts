/**
 * pgBackRest on this instance: writes `pgbackrest.conf` from the followed spec (mode 0600, in the
 * run volume: it names the repo, and the credentials come from the mounted `conf.d`), and runs its
 * commands as children that die with the agent, returning their output (redacted) and exit code.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildPgBackRestConf,
  PGBACKREST_CONF_DIR,
  PGBACKREST_STANZA,
  type PgBackRestSpec,
  type PgBackRestTlsFiles,
  PORT,
  type RemotePg,
  repoOptionsHash,
  repoReachable,
  type VolumeRepoAccess,
} from '../../contract/index.js';
import { forEachLine, withParentDeathSignal } from '../commands.js';
import type { AgentConfig } from '../config.js';
import { writeFileIfChanged } from '../files.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import { resolveMountPath } from '../mounts.js';

/** What the archive command needs to push (see pgbackrest-archive-push.ts), served by the agent. */
export interface ArchiveTarget {
  readonly bin: string;
  readonly args: readonly string[];
}

/**
 * How long `archive-push` waits for the asynchronous process to push a segment before it fails.
 * pgBackRest's default (60 s) meets its own S3 retries (also 60 s): with the repo unreachable, the
 * first failure reached postgres, and so WALArchiving, only a minute after the outage began. A
 * segment still pushing is not lost by failing early: postgres retries it, and the next call finds
 * it pushed.
 */
export const ARCHIVE_PUSH_TIMEOUT_S = 10;

export interface PgBackRestResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The last lines of stderr (redacted): pgBackRest's reason when it fails. */
  readonly errorTail: string;
}

/** What pgBackRest on this Pod needs of the agent's configuration (the repo host has no PGDATA of its own). */
export type PgBackRestHostConfig = Pick<
  AgentConfig,
  'namespace' | 'cluster' | 'runDir' | 'dataDir' | 'pgdata' | 'socketDir' | 'pgbackrestBin'
>;

export class PgBackRest {
  readonly #config: PgBackRestHostConfig;
  readonly #log: Logger;
  readonly #redactor: Redactor;
  #written: { hash: string; spec: PgBackRestSpec } | undefined;
  /** This Pod's pgBackRest certificate, once issued (volume repos only; see backups/tls-server.ts). */
  tls: PgBackRestTlsFiles | undefined;

  constructor(config: PgBackRestHostConfig, log: Logger, redactor: Redactor) {
    this.#config = config;
    this.#log = log;
    this.#redactor = redactor;
  }

  get confFile(): string {
    return join(this.#config.runDir, 'pgbackrest.conf');
  }

  /** The stanza's repo options hash as last written; undefined before the first write. */
  get repoHash(): string | undefined {
    return this.#written?.hash;
  }

  /** The options every command starts with: this file, and the mounted credentials. */
  baseArgs(confFile = this.confFile, includeDir = PGBACKREST_CONF_DIR, stanza = PGBACKREST_STANZA): string[] {
    // pgBackRest fails (PathMissingError, before it logs anything) on an include path it was given
    // that does not exist: a cluster without `configuration` (a volume repo needs no keys) has no
    // mount there, so it gets an empty directory instead.
    const local = resolveMountPath(includeDir);
    const include = existsSync(local) ? local : this.#emptyIncludeDir();
    return [`--config=${confFile}`, `--config-include-path=${include}`, `--stanza=${stanza}`];
  }

  #emptyIncludeDir(): string {
    const dir = join(this.#config.runDir, 'pgbackrest', 'conf.d-none');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /**
   * Writes the file for `spec`; resolves the repo options hash (what decides where the stanza is)
   * and the repos it cannot reach yet (a volume repo before the repo host serves, a repo whose path
   * the operator has not recorded). `storedAt` is where each repo keeps its stanza: this cluster's
   * recorded paths, or a restore's source. `volume` says how volume repos are reached and, on the
   * repo host, `pgHost` which primary is backed up.
   */
  async write(
    spec: PgBackRestSpec,
    where: {
      readonly storedAt: Readonly<Record<string, string>>;
      readonly file?: string;
      readonly stanza?: string;
      readonly volume?: VolumeRepoAccess;
      readonly pgHost?: RemotePg;
    },
  ): Promise<{ hash: string; unreachable: string[] }> {
    const file = where.file ?? this.confFile;
    const config = this.#config;
    const pgbackrestDir = join(config.runDir, 'pgbackrest');
    const paths = {
      pgPath: config.pgdata,
      socketPath: config.socketDir,
      port: PORT.postgres,
      spoolPath: join(config.dataDir, 'pgbackrest-spool'),
      logPath: join(pgbackrestDir, 'log'),
      lockPath: join(pgbackrestDir, 'lock'),
    };
    await Promise.all(
      [paths.spoolPath, paths.logPath, paths.lockPath].map((dir) => mkdir(dir, { recursive: true, mode: 0o700 })),
    );
    const { text, options } = buildPgBackRestConf({
      storedAt: where.storedAt,
      ...(where.stanza ? { stanza: where.stanza } : {}),
      spec,
      paths,
      resolvePath: (path) => resolveMountPath(path),
      ...(where.volume ? { volume: where.volume } : {}),
      ...(where.pgHost ? { pgHost: where.pgHost } : {}),
    });
    await writeFileIfChanged(file, text, 0o600);
    const hash = repoOptionsHash(options);
    const unreachable = spec.repos.filter((repo) => !repoReachable(repo, options)).map((repo) => repo.name);
    if (file === this.confFile && unreachable.length === 0) this.#written = { hash, spec };
    return { hash, unreachable };
  }

  /** What archive-push runs, or undefined before the file was written. */
  archiveTarget(): ArchiveTarget | undefined {
    if (!this.#written) return undefined;
    // Unless the user chose one: a short wait for the asynchronous push, for this command only
    // (a backup's wait for its last segment keeps pgBackRest's 60 s).
    const timeout =
      this.#written.spec.global?.['archive-timeout'] === undefined
        ? [`--archive-timeout=${ARCHIVE_PUSH_TIMEOUT_S}`]
        : [];
    return { bin: this.#config.pgbackrestBin, args: [...this.baseArgs(), ...timeout] };
  }

  /** Runs `pgbackrest <args>` (after the base options); never rejects for a non-zero exit. */
  run(
    args: readonly string[],
    options: { signal?: AbortSignal; base?: readonly string[]; onLine?: (line: string) => void } = {},
  ): Promise<PgBackRestResult> {
    const argv = [...(options.base ?? this.baseArgs()), ...args];
    const [file, fullArgv] = withParentDeathSignal(this.#config.pgbackrestBin, argv, 'TERM');
    const command = args.find((a) => !a.startsWith('--')) ?? 'pgbackrest';
    return new Promise((resolve) => {
      const child = spawn(file, fullArgv, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      const tail: string[] = [];
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        stdout += chunk;
      });
      forEachLine(child.stderr, (line) => {
        if (!line.trim()) return;
        const redacted = this.#redactor.redact(line);
        tail.push(redacted);
        if (tail.length > 8) tail.shift();
        this.#log.warn({ tool: 'pgbackrest', command }, redacted);
        options.onLine?.(redacted);
      });
      const abort = () => child.kill('SIGTERM');
      options.signal?.addEventListener('abort', abort, { once: true });
      child.once('error', (error) => {
        options.signal?.removeEventListener('abort', abort);
        resolve({ code: null, signal: null, stdout, errorTail: this.#redactor.describe(error) });
      });
      child.once('close', (code, signal) => {
        options.signal?.removeEventListener('abort', abort);
        // An error raised while pgBackRest loads its options comes out on stdout, before the
        // logging options that send errors to stderr apply.
        const early = code !== 0 && tail.length === 0 ? stdout.split('\n').filter((l) => /ERROR: \[\d+\]/.test(l)) : [];
        const errorTail = [...tail, ...early.map((l) => this.#redactor.redact(l.trim()))].join(' | ');
        resolve({ code, signal, stdout, errorTail });
      });
    });
  }
}

/** A one-line reason from a failed run: pgBackRest's error line when there is one. */
export function failureReason(result: PgBackRestResult, what: string): string {
  if (result.signal) return `${what} was stopped (${result.signal})`;
  const error = /ERROR: \[\d+\]: .*/.exec(result.errorTail)?.[0];
  return `${what} failed (exit ${result.code ?? 'none'}): ${error ?? (result.errorTail || 'no output')}`;
}
