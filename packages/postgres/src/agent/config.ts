/**
 * The agent's configuration, read once from its environment (the names are fixed by the contract)
 * and validated, with every container path already resolved to where it lives on this machine.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Bootstrap, CREDENTIAL_FILE, ENV, PATH, PORT } from '../contract/index.js';
import { parseVolumeMounts, resolveMountPath, type VolumeMounts } from './mounts.js';
import { buildArchiveCommand } from './plan/postgres-conf.js';

export interface AgentConfig {
  readonly cluster: string;
  readonly podName: string;
  readonly namespace: string;
  readonly podIP: string;
  readonly bootstrap: Bootstrap;
  /** With bootstrap `restore`: the restore to run once (see ENV.restoreId). */
  readonly restoreId: string | undefined;
  readonly superuserPassword: string;
  readonly replicationPassword: string;
  /** Directory of initdb, postgres, pg_basebackup: `PG_BIN`, required (the image names its own major's). */
  readonly pgBin: string;
  /** pgBackRest's program: `KANRI_PGBACKREST` (not `PGBACKREST_…`, which pgBackRest reads as options), else `pgbackrest` on the PATH (as the image installs it). */
  readonly pgbackrestBin: string;
  /** The data volume (PATH.data resolved). */
  readonly dataDir: string;
  /** PGDATA: `${dataDir}/pgdata`. */
  readonly pgdata: string;
  /** The run volume (PATH.run resolved): passfile and, when short enough, the socket. */
  readonly runDir: string;
  /** Where postgres puts its unix socket. */
  readonly socketDir: string;
  /** The agent's local control socket (the archive command asks it for a permit): beside postgres's, named shorter than its `.s.PGSQL.5432` so it fits too. */
  readonly agentSocket: string;
  /** postgres's archive_command: this agent's pgbackrest-archive-push.js with its control socket. */
  readonly archiveCommand: string;
  /** On the Pod a major upgrade creates: the major its data is of (ENV.majorUpgradeFrom). */
  readonly majorUpgradeFrom: number | undefined;
  /** Where the image keeps other majors' programs (ENV.pgBinDirs), as `14=/a/bin;16=/b/bin`. */
  readonly pgBinDirs: string | undefined;
  /** ENV.tlsOptional: postgres may start without TLS while the agent has none (never on the operator's Pods). */
  readonly tlsOptional: boolean;
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

/**
 * What every Pod of the agent image reads first: its identity (cluster, Pod name, namespace, IP)
 * and the process node's volume mounts. Problems are added to `problems`, naming variables only.
 */
export function readPodIdentity(env: NodeJS.ProcessEnv, problems: string[]) {
  const required = (name: string): string => {
    const value = env[name];
    if (value === undefined || value === '') {
      problems.push(`${name} is not set`);
      return '';
    }
    return value;
  };
  const cluster = required(ENV.cluster);
  const podName = required(ENV.podName);
  const namespace = required(ENV.namespace);
  const podIP = required(ENV.podIP);
  if (podIP && isIP(podIP) === 0) problems.push(`${ENV.podIP} must be an IP address`);
  let mounts: VolumeMounts = {};
  try {
    mounts = parseVolumeMounts(env.KANRI_VOLUME_MOUNTS);
  } catch (error) {
    problems.push((error as Error).message);
  }
  return { cluster, podName, namespace, podIP, mounts, required };
}

/** A password from its variable when set (an agent outside a Pod), else from its file under PATH.credentials. */
function readPassword(
  env: NodeJS.ProcessEnv,
  variable: string,
  file: string,
  mounts: VolumeMounts,
  problems: string[],
): string {
  const fromEnv = env[variable];
  if (fromEnv) return fromEnv;
  const path = resolveMountPath(join(PATH.credentials, file), mounts);
  try {
    const value = readFileSync(path, 'utf8');
    if (value === '') problems.push(`${path} is empty`);
    return value;
  } catch (error) {
    problems.push(
      `${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? error}) and ${variable} is unset`,
    );
    return '';
  }
}

/** A unix socket path holds at most 107 bytes (sun_path is 108 with the terminating NUL). */
export const MAX_SOCKET_PATH = 107;

/**
 * The socket directory: the run volume when `<dir>/.s.PGSQL.5432` fits in a socket path, otherwise
 * a short directory under /tmp named by a hash of the run dir (stable across restarts, distinct per Pod).
 *
 * @example
 * ```ts
 * chooseSocketDir('/run/postgresql'); // '/run/postgresql'
 * ```
 */
export function chooseSocketDir(runDir: string, port: number = PORT.postgres): string {
  if (Buffer.byteLength(join(runDir, `.s.PGSQL.${port}`)) <= MAX_SOCKET_PATH) return runDir;
  return `/tmp/kanri-pg-${createHash('sha256').update(runDir).digest('hex').slice(0, 16)}`;
}

/**
 * Reads and checks the agent's environment. Errors name every missing or malformed variable, never a value.
 *
 * @example
 * ```ts
 * const config = loadAgentConfig(process.env);
 * console.log(config.pgdata); // e.g. /pgdata/pgdata
 * ```
 */
export function loadAgentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const problems: string[] = [];
  const { cluster, podName, namespace, podIP, mounts } = readPodIdentity(env, problems);
  const bootstrapRaw = env[ENV.bootstrap] || 'basebackup';
  if (bootstrapRaw !== 'initdb' && bootstrapRaw !== 'basebackup' && bootstrapRaw !== 'restore')
    problems.push(`${ENV.bootstrap} must be "initdb", "basebackup" or "restore"`);
  const majorUpgradeFrom = env[ENV.majorUpgradeFrom] ? Number(env[ENV.majorUpgradeFrom]) : undefined;
  if (majorUpgradeFrom !== undefined && !Number.isInteger(majorUpgradeFrom))
    problems.push(`${ENV.majorUpgradeFrom} must be a major version such as 15`);
  const pgBin = env.PG_BIN ?? '';
  if (!pgBin)
    problems.push(
      'PG_BIN must name the bin directory of the PostgreSQL the image runs (e.g. /usr/lib/postgresql/16/bin); Kanri never guesses it',
    );
  const password = (variable: string, file: string) => readPassword(env, variable, file, mounts, problems);
  const superuserPassword = password(ENV.superuserPassword, CREDENTIAL_FILE.superuser);
  const replicationPassword = password(ENV.replicationPassword, CREDENTIAL_FILE.replication);
  if (problems.length > 0) throw new AgentConfigError(`invalid agent environment: ${problems.join('; ')}`);

  const dataDir = resolveMountPath(PATH.data, mounts);
  const runDir = resolveMountPath(PATH.run, mounts);
  return {
    cluster,
    podName,
    namespace,
    podIP,
    bootstrap: bootstrapRaw as Bootstrap,
    restoreId: env[ENV.restoreId] || undefined,
    superuserPassword,
    replicationPassword,
    pgBin,
    pgbackrestBin: env.KANRI_PGBACKREST || 'pgbackrest',
    dataDir,
    pgdata: join(dataDir, 'pgdata'),
    runDir,
    socketDir: chooseSocketDir(runDir),
    agentSocket: join(chooseSocketDir(runDir), '.s.kanri'),
    majorUpgradeFrom,
    pgBinDirs: env[ENV.pgBinDirs] || undefined,
    tlsOptional: env[ENV.tlsOptional] === 'true',
    archiveCommand: buildArchiveCommand(
      process.execPath,
      fileURLToPath(new URL('./pgbackrest-archive-push.js', import.meta.url)),
      join(chooseSocketDir(runDir), '.s.kanri'),
    ),
  };
}
