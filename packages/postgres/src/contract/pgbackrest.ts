/**
 * pgBackRest as both sides see it: the stanza, where the `configuration` projections are mounted,
 * the trigger annotations (with PGO's spellings as aliases), the default repo path, and the pure
 * builder of `pgbackrest.conf` from `spec.backups.pgbackrest`. The operator renders nothing of it;
 * the agent writes the file from the spec it follows, so a spec change reaches it without a restart.
 */
import { createHash } from 'node:crypto';
import { GROUP } from './names.js';

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

/** `repo2` → 2. */
export function repoIndex(name: string): number {
  const index = Number(/^repo([1-4])$/.exec(name)?.[1]);
  if (!Number.isInteger(index)) throw new Error(`not a repo name: ${name}`);
  return index;
}

/**
 * Where a cluster's repo keeps its stanza unless `global` sets `repoN-path`: per namespace and
 * cluster, so clusters sharing a bucket (and a clone and its source) never write into each other.
 */
export function defaultRepoPath(namespace: string, cluster: string, repo: string): string {
  return `/pgbackrest/${namespace}/${cluster}/${repo}`;
}

/** Why a repo cannot be used yet; undefined when it can. */
export function unsupportedRepo(repo: RepoSpec): string | undefined {
  if (repo.gcs) return `${repo.name}: gcs repos are not supported yet`;
  if (repo.azure) return `${repo.name}: azure repos are not supported yet`;
  if (repo.volume) return `${repo.name}: volume repos (a repo host) are not supported yet`;
  return undefined;
}

/** The `repoN-…` options one repo contributes (its storage, and its default path). */
export function repoOptions(namespace: string, cluster: string, repo: RepoSpec): Record<string, string> {
  const n = repoIndex(repo.name);
  const options: Record<string, string> = {};
  if (repo.s3) {
    options[`repo${n}-type`] = 's3';
    options[`repo${n}-s3-bucket`] = repo.s3.bucket;
    options[`repo${n}-s3-endpoint`] = repo.s3.endpoint;
    options[`repo${n}-s3-region`] = repo.s3.region;
  }
  options[`repo${n}-path`] = defaultRepoPath(namespace, cluster, repo.name);
  return options;
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
  readonly namespace: string;
  readonly cluster: string;
  readonly spec: PgBackRestSpec;
  readonly paths: PgBackRestPaths;
  /** Maps option values that name a container path (a CA file in conf.d) to where it lives. */
  readonly resolvePath?: (path: string) => string;
  /** The stanza section's name; default {@link PGBACKREST_STANZA}. */
  readonly stanza?: string;
}

/** Options the agent owns: `global` cannot set them (the API refuses them too). */
const OWNED = new Set(['stanza', 'pg1-path', 'pg1-port', 'pg1-socket-path', 'log-path', 'lock-path', 'spool-path']);

/**
 * `pgbackrest.conf`: the repos' storage and default paths, the user's `global` options (which win
 * over defaults, never over what the agent owns), asynchronous archiving with a spool on the data
 * volume, and the stanza's `pg1-…` options.
 *
 * @example
 * ```ts
 * const { text } = buildPgBackRestConf({
 *   namespace: 'default', cluster: 'hippo',
 *   spec: { repos: [{ name: 'repo1', s3: { bucket: 'b', endpoint: 'localhost', region: 'us-east-1' } }] },
 *   paths: { pgPath: '/pgdata/pgdata', socketPath: '/run/postgresql', port: 5432, spoolPath: '/pgdata/spool', logPath: '/tmp/log', lockPath: '/tmp/lock' },
 * });
 * // text contains "repo1-s3-bucket=b" and "repo1-path=/pgbackrest/default/hippo/repo1"
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
  };
  for (const repo of input.spec.repos) Object.assign(global, repoOptions(input.namespace, input.cluster, repo));
  for (const [key, value] of Object.entries(input.spec.global ?? {})) {
    if (OWNED.has(key)) continue;
    global[key] = value.startsWith('/') ? resolve(value) : value;
  }
  const stanza: Record<string, string> = {
    'pg1-path': input.paths.pgPath,
    'pg1-port': String(input.paths.port),
    'pg1-socket-path': input.paths.socketPath,
    'pg1-user': 'postgres',
  };
  const section = (name: string, options: Record<string, string>) => [
    `[${name}]`,
    ...Object.keys(options)
      .sort()
      .map((key) => `${key}=${options[key]}`),
  ];
  const text = [
    '# Written by the Kanri instance agent from spec.backups.pgbackrest; rewritten on every change.',
    ...section('global', global),
    '',
    ...section(input.stanza ?? PGBACKREST_STANZA, stanza),
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
  return [key('type') || 'posix', key('s3-bucket'), key('s3-endpoint'), key('path')].join('|');
}
