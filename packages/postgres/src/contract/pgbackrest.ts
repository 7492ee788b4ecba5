/**
 * pgBackRest as both sides see it: the stanza, where the `configuration` projections are mounted,
 * the trigger annotations (with PGO's spellings as aliases), and the pure
 * builder of `pgbackrest.conf` from `spec.backups.pgbackrest`. The operator renders nothing of it;
 * the agent writes the file from the spec it follows, so a spec change reaches it without a restart.
 */
import { createHash } from 'node:crypto';
import { type CloneGatewayAccess, cloneGatewayOptions } from './clone-gateway.js';
import { GROUP } from './names.js';
import { PGBACKREST_SERVER_PORT, pgbackrestClientName } from './repo-host.js';
import { repoIndex } from './repo-paths.js';

/** The one stanza of every Kanri cluster (PGO names it `db` too, so PGO repos restore as they are). */
export const PGBACKREST_STANZA = 'db';

/** Where the Pod mounts `spec.backups.pgbackrest.configuration` (PGO's path). */
export const PGBACKREST_CONF_DIR = '/etc/pgbackrest/conf.d';
/** Where a clone's Pod mounts its data source's `configuration`. */
export const PGBACKREST_SOURCE_CONF_DIR = '/etc/pgbackrest/source-conf.d';

const PGO_GROUP = 'postgres-operator.crunchydata.com';

/** Trigger annotations on the PostgresCluster; each also accepted with PGO's group. */
export const BACKUP_ANNOTATION = {
  backup: `${GROUP}/pgbackrest-backup`,
  restore: `${GROUP}/pgbackrest-restore`,
} as const;

/**
 * The annotation's value under Kanri's spelling, else PGO's (`postgres-operator.crunchydata.com/…`).
 *
 * @example
 * ```ts
 * triggerValue({ 'postgres-operator.crunchydata.com/pgbackrest-backup': '1' }, 'backup'); // '1'
 * ```
 */
export function triggerValue(
  annotations: Readonly<Record<string, string>> | undefined,
  kind: keyof typeof BACKUP_ANNOTATION,
): string | undefined {
  const kanri = annotations?.[BACKUP_ANNOTATION[kind]];
  if (kanri !== undefined && kanri !== '') return kanri;
  const pgo = annotations?.[`${PGO_GROUP}/pgbackrest-${kind}`];
  return pgo === undefined || pgo === '' ? undefined : pgo;
}

/** A repo as `spec.backups.pgbackrest.repos[]` declares it (the fields the builder reads). */
export interface RepoSpec {
  readonly name: string;
  readonly s3?: { readonly bucket: string; readonly endpoint: string; readonly region: string };
  readonly gcs?: { readonly bucket: string };
  readonly azure?: { readonly container: string };
  readonly volume?: unknown;
  readonly schedules?: { readonly full?: string; readonly differential?: string; readonly incremental?: string };
}

/** `spec.backups.pgbackrest` (the fields the builder reads). */
export interface PgBackRestSpec {
  readonly global?: Readonly<Record<string, string>>;
  readonly repos: readonly RepoSpec[];
}

/** Why a repo cannot be used yet; undefined when it can. */
export function unsupportedRepo(repo: RepoSpec): string | undefined {
  if (repo.gcs) return `${repo.name}: gcs repos are not supported yet`;
  if (repo.azure) return `${repo.name}: azure repos are not supported yet`;
  return undefined;
}

/** This Pod's pgBackRest certificate, CA and key (paths as this host sees them). */
export interface PgBackRestTlsFiles {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Another Pod's pgBackRest TLS server: its address and the configuration file it reads. */
export interface RemoteServer {
  readonly address: string;
  readonly config: string;
}

/** The primary as the repo host backs it up: its server, and where its PGDATA and socket are. */
export interface RemotePg extends RemoteServer {
  readonly pgPath: string;
  readonly socketPath: string;
  readonly port: number;
}

/**
 * Where a volume repo is reached: the repo host's local path (on the repo host), else its own
 * cluster's repo host, else (a clone) the source's repo host's read-only clone port.
 */
export interface VolumeRepoAccess {
  /** On the repo host: each volume repo's path there. */
  readonly repoPaths?: Readonly<Record<string, string>>;
  /** On an instance: the repo host, with this Pod's certificate. */
  readonly repoHost?: RemoteServer;
  readonly tls?: PgBackRestTlsFiles;
  /** On a clone's instance: the source's repo host's clone port (contract/clone-gateway.ts). */
  readonly gateway?: CloneGatewayAccess;
}

/** The options that make pgBackRest reach a TLS server with this Pod's certificate. */
function tlsClientOptions(prefix: string, server: RemoteServer, tls: PgBackRestTlsFiles): Record<string, string> {
  return {
    [`${prefix}-host`]: server.address,
    [`${prefix}-host-type`]: 'tls',
    [`${prefix}-host-port`]: String(PGBACKREST_SERVER_PORT),
    [`${prefix}-host-ca-file`]: tls.ca,
    [`${prefix}-host-cert-file`]: tls.cert,
    [`${prefix}-host-key-file`]: tls.key,
    // The remote reads this file (pgBackRest passes it); its repo path comes from there.
    [`${prefix}-host-config`]: server.config,
  };
}

/**
 * The `repoN-…` options one repo contributes (its storage, and the path the operator decided for
 * it, `path`: without one, none, and the repo cannot be used yet). A volume repo is a path on the
 * repo host, or on an instance the repo host itself (no path: pgBackRest would pass the client's
 * to the remote), or on a clone the source's clone port; with none known it contributes nothing.
 */
export function repoOptions(
  repo: RepoSpec,
  path: string | undefined,
  access: VolumeRepoAccess = {},
): Record<string, string> {
  const n = repoIndex(repo.name);
  const options: Record<string, string> = {};
  if (repo.volume !== undefined) {
    const local = access.repoPaths?.[repo.name];
    if (local) options[`repo${n}-path`] = local;
    else if (access.gateway) Object.assign(options, cloneGatewayOptions(n, repo.name, access.gateway));
    else if (access.repoHost && access.tls)
      Object.assign(options, tlsClientOptions(`repo${n}`, access.repoHost, access.tls));
    return options;
  }
  if (!path) return options;
  if (repo.s3) {
    options[`repo${n}-type`] = 's3';
    options[`repo${n}-s3-bucket`] = repo.s3.bucket;
    options[`repo${n}-s3-endpoint`] = repo.s3.endpoint;
    options[`repo${n}-s3-region`] = repo.s3.region;
  }
  options[`repo${n}-path`] = path;
  return options;
}

/**
 * Whether the conf can reach `repo`: a volume repo needs its path (repo host), the repo host's
 * address (instance) or the clone port (clone); any other its path.
 */
export function repoReachable(repo: RepoSpec, options: Readonly<Record<string, string>>): boolean {
  const n = repoIndex(repo.name);
  return options[`repo${n}-path`] !== undefined || options[`repo${n}-host`] !== undefined;
}

/** Paths on this machine the file names (the agent resolves them). */
export interface PgBackRestPaths {
  /** PGDATA. */
  readonly pgPath: string;
  readonly socketPath: string;
  readonly port: number;
  /** The asynchronous archive's spool: on the data volume, so queued WAL survives a restart. */
  readonly spoolPath: string;
  readonly logPath: string;
  readonly lockPath: string;
}

export interface PgBackRestConfInput {
  readonly spec: PgBackRestSpec;
  /**
   * Where each repo that is no volume keeps its stanza, by repo name, as the operator decided
   * (the cluster's recorded paths, or a restore's source): a repo without one cannot be used yet.
   * `global`'s `repoN-path` never overrides it (the operator folded it in, or refused it).
   */
  readonly storedAt: Readonly<Record<string, string>>;
  readonly paths: PgBackRestPaths;
  /** Maps option values that name a container path (a CA file in conf.d) to where it lives. */
  readonly resolvePath?: (path: string) => string;
  /** The stanza section's name; default {@link PGBACKREST_STANZA}. */
  readonly stanza?: string;
  /** How volume repos are reached from this Pod. */
  readonly volume?: VolumeRepoAccess;
  /** On the repo host: the primary to back up, instead of a local PGDATA. */
  readonly pgHost?: RemotePg;
}

/** Refused on write: pgbackrest.conf cannot hold this key or value. */
export class PgBackRestConfError extends Error {
  override readonly name = 'PgBackRestConfError';
}

/**
 * One `key=value` line of pgbackrest.conf, or a PgBackRestConfError. pgBackRest's files have no
 * quoting: a line ends at a newline and a key at its first `=`, so a key that is not a plain name,
 * or a value with a control character, would write another option (from a spec field, or a Pod's
 * annotation), and is refused rather than written.
 *
 * @example
 * ```ts
 * confLine('repo1-path', '/pgbackrest/db'); // 'repo1-path=/pgbackrest/db'
 * confLine('repo1-path', '/x\nrepo1-host=evil'); // throws PgBackRestConfError
 * ```
 */
export function confLine(key: string, value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(key))
    throw new PgBackRestConfError(`refusing to write pgBackRest option ${JSON.stringify(key)}: not an option name`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\x00-\x1f\x7f]/.test(value))
    throw new PgBackRestConfError(
      `refusing to write pgBackRest option ${key}: its value holds a control character, which would start another line`,
    );
  return `${key}=${value}`;
}

/** A `[name]` section and its options in key order, each line by {@link confLine}. */
function confSection(name: string, options: Readonly<Record<string, string>>): string[] {
  if (!/^[A-Za-z0-9._-]+$/.test(name))
    throw new PgBackRestConfError(`refusing to write pgBackRest section ${JSON.stringify(name)}: not a stanza name`);
  return [
    `[${name}]`,
    ...Object.keys(options)
      .sort()
      .map((key) => confLine(key, options[key] as string)),
  ];
}

/** Options the agent owns: `global` cannot set them (the API refuses them too). */
const OWNED = new Set(['stanza', 'pg1-path', 'pg1-port', 'pg1-socket-path', 'log-path', 'lock-path', 'spool-path']);
/** How Pods reach each other's pgBackRest (hosts, certificates, servers) is the agent's too. */
const OWNED_PATTERN = /^(repo[1-4]-host|pg\d+-host|tls-server-)/;

/**
 * `pgbackrest.conf`: the repos' storage and default paths, the user's `global` options (which win
 * over defaults, never over what the agent owns), asynchronous archiving with a spool on the data
 * volume, and the stanza's `pg1-…` options.
 *
 * @example
 * ```ts
 * const { text } = buildPgBackRestConf({
 *   spec: { repos: [{ name: 'repo1', s3: { bucket: 'b', endpoint: 'localhost', region: 'us-east-1' } }] },
 *   storedAt: { repo1: '/pgbackrest/default/hippo-1f0e…/repo1' },
 *   paths: { pgPath: '/pgdata/pgdata', socketPath: '/run/postgresql', port: 5432, spoolPath: '/pgdata/spool', logPath: '/tmp/log', lockPath: '/tmp/lock' },
 * });
 * // text contains "repo1-s3-bucket=b" and "repo1-path=/pgbackrest/default/hippo-1f0e…/repo1"
 * ```
 */
export function buildPgBackRestConf(input: PgBackRestConfInput): { text: string; options: Record<string, string> } {
  const resolve = input.resolvePath ?? ((path: string) => path);
  const global: Record<string, string> = {
    'archive-async': 'y',
    'spool-path': input.paths.spoolPath,
    'log-path': input.paths.logPath,
    'lock-path': input.paths.lockPath,
    // The agent forwards stderr to its log; files in the Pod would only fill the volume.
    'log-level-file': 'off',
    'log-level-console': 'off',
    'log-level-stderr': 'warn',
    // An immediate checkpoint: a requested backup starts now, not at the next scheduled checkpoint.
    'start-fast': 'y',
    // lz4, not pgBackRest's gz (level 6): gzip bounds a backup and the archive to one core's gzip
    // speed, 18.6 MB/s for 1 GB on a 2-core real node (bench:peers row 6), where lz4 costs little
    // CPU and still halves typical table data. `global` may choose another (gz, zst, none).
    'compress-type': 'lz4',
  };
  const volumeRepos: string[] = [];
  for (const repo of input.spec.repos) {
    Object.assign(global, repoOptions(repo, input.storedAt[repo.name], input.volume));
    if (repo.volume !== undefined) volumeRepos.push(`repo${repoIndex(repo.name)}-`);
  }
  // Where a repo is (the operator's decision), and how a volume repo is reached (its mount on the
  // repo host, the clone port's storage), are never the user's.
  const volumeOwned = (key: string) =>
    /^repo[1-4]-path$/.test(key) ||
    volumeRepos.some((prefix) => key.startsWith(prefix) && /^(type|gcs-|storage-)/.test(key.slice(prefix.length)));
  // A repo that cannot be located yet gets no option at all: with any, pgBackRest would take it
  // for a repo at its default path (/var/lib/pgbackrest, in the bucket), which every cluster shares.
  const unlocated = input.spec.repos
    .filter((repo) => !repoReachable(repo, global))
    .map((repo) => `repo${repoIndex(repo.name)}-`);
  for (const [key, value] of Object.entries(input.spec.global ?? {})) {
    if (OWNED.has(key) || OWNED_PATTERN.test(key) || volumeOwned(key)) continue;
    if (unlocated.some((prefix) => key.startsWith(prefix))) continue;
    global[key] = value.startsWith('/') ? resolve(value) : value;
  }
  const pg = input.pgHost;
  const stanza: Record<string, string> = {
    'pg1-path': pg?.pgPath ?? input.paths.pgPath,
    'pg1-port': String(pg?.port ?? input.paths.port),
    'pg1-socket-path': pg?.socketPath ?? input.paths.socketPath,
    'pg1-user': 'postgres',
    ...(pg && input.volume?.tls ? tlsClientOptions('pg1', pg, input.volume.tls) : {}),
  };
  const text = [
    '# Written by the Kanri instance agent from spec.backups.pgbackrest; rewritten on every change.',
    ...confSection('global', global),
    '',
    ...confSection(input.stanza ?? PGBACKREST_STANZA, stanza),
    '',
  ].join('\n');
  return { text, options: { ...global, ...stanza } };
}

/**
 * A short hash of what decides where the stanza lives (every repo option): a change means the
 * stanza must be created again (idempotent) before the next backup or archive push.
 */
export function repoOptionsHash(options: Readonly<Record<string, string>>): string {
  const repoKeys = Object.keys(options)
    .filter((key) => /^repo[1-4]-/.test(key))
    .sort();
  const hash = createHash('sha256');
  for (const key of repoKeys) hash.update(`${key}=${options[key]}\n`);
  return hash.digest('hex').slice(0, 16);
}

/**
 * Where repo `index` keeps its stanza, from a conf's options: storage type, bucket and endpoint (or
 * host), and path. Two repos with one location are one repo.
 *
 * @example
 * ```ts
 * repoLocation({ 'repo1-type': 's3', 'repo1-s3-bucket': 'b', 'repo1-s3-endpoint': 'e', 'repo1-path': '/p' }, 1);
 * // 's3|b|e|/p'
 * ```
 */
export function repoLocation(options: Readonly<Record<string, string>>, index: number): string {
  const key = (name: string) => options[`repo${index}-${name}`] ?? '';
  return [key('type') || 'posix', key('s3-bucket'), key('s3-endpoint'), key('host'), key('path')].join('|');
}

export interface PgBackRestServerConfInput {
  readonly cluster: string;
  /** The address the server listens on (the Pod IP). */
  readonly address: string;
  readonly tls: PgBackRestTlsFiles;
  readonly logPath: string;
  readonly lockPath: string;
  /** An instance: its PGDATA, socket and port, which a backup's remote commands use. */
  readonly pg?: { readonly path: string; readonly socketPath: string; readonly port: number };
  /** The repo host: each volume repo's path, by repo name. */
  readonly repoPaths?: Readonly<Record<string, string>>;
}

/**
 * The configuration of a Pod's pgBackRest TLS server, which its remote commands read too: it
 * listens on the Pod IP, presents the Pod's certificate, and serves the stanza only to clients
 * holding a certificate of the cluster's CA with the cluster's common name.
 *
 * @example
 * ```ts
 * buildPgBackRestServerConf({
 *   cluster: 'hippo', address: '10.0.0.5',
 *   tls: { ca: '/run/tls/ca.crt', cert: '/run/tls/tls.crt', key: '/run/tls/tls.key' },
 *   logPath: '/run/log', lockPath: '/run/lock', repoPaths: { repo1: '/pgbackrest/repo1' },
 * });
 * // contains "tls-server-auth=pgbackrest@hippo=db" and "repo1-path=/pgbackrest/repo1"
 * ```
 */
export function buildPgBackRestServerConf(input: PgBackRestServerConfInput): string {
  const global: Record<string, string> = {
    'tls-server-address': input.address,
    'tls-server-port': String(PGBACKREST_SERVER_PORT),
    'tls-server-ca-file': input.tls.ca,
    'tls-server-cert-file': input.tls.cert,
    'tls-server-key-file': input.tls.key,
    'tls-server-auth': `${pgbackrestClientName(input.cluster)}=${PGBACKREST_STANZA}`,
    'log-path': input.logPath,
    'lock-path': input.lockPath,
    'log-level-file': 'off',
    'log-level-console': 'off',
    'log-level-stderr': 'warn',
  };
  for (const [repo, path] of Object.entries(input.repoPaths ?? {})) global[`repo${repoIndex(repo)}-path`] = path;
  const lines = ['# Written by the Kanri agent: its pgBackRest TLS server.', ...confSection('global', global)];
  if (input.pg) {
    const { path, port, socketPath } = input.pg;
    lines.push(
      '',
      ...confSection(PGBACKREST_STANZA, { 'pg1-path': path, 'pg1-port': String(port), 'pg1-socket-path': socketPath }),
    );
  }
  return `${lines.join('\n')}\n`;
}
