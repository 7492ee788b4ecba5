/**
 * The repo host's configuration, read once from its environment (contract/instance-environment.ts
 * names; no passwords: it never connects to postgres itself), with container paths resolved to
 * where they live on this machine.
 */
import { PATH } from '../../contract/index.js';
import type { PgBackRestHostConfig } from '../backups/pgbackrest.js';
import { AgentConfigError, readPodIdentity } from '../config.js';
import { resolveMountPath } from '../mounts.js';

export interface RepoHostConfig extends PgBackRestHostConfig {
  readonly podName: string;
  readonly podIP: string;
}

/**
 * @example
 * ```ts
 * const config = loadRepoHostConfig(process.env);
 * console.log(config.runDir); // e.g. /run/postgresql
 * ```
 */
export function loadRepoHostConfig(env: NodeJS.ProcessEnv): RepoHostConfig {
  const problems: string[] = [];
  const { cluster, podName, namespace, podIP, mounts } = readPodIdentity(env, problems);
  if (problems.length > 0) throw new AgentConfigError(`invalid repo host environment: ${problems.join('; ')}`);
  const runDir = resolveMountPath(PATH.run, mounts);
  // No PGDATA and no archive spool here: the primary's PGDATA is reached through its server.
  return {
    cluster,
    podName,
    namespace,
    podIP,
    runDir,
    dataDir: runDir,
    pgdata: runDir,
    socketDir: runDir,
    pgbackrestBin: env.KANRI_PGBACKREST || 'pgbackrest',
  };
}
