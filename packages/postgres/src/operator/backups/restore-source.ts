/**
 * Where a new cluster's first instance restores from (`spec.dataSource`), resolved by the operator
 * into the RestoreSource the agent reads, with the credentials its Pod must mount. Pure.
 */
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  names,
  PGBACKREST_CONF_DIR,
  PGBACKREST_SOURCE_CONF_DIR,
  PGBACKREST_STANZA,
  pgoRepoPath,
  type RestoreSource,
  readServerInfo,
  recordedRepoPaths,
} from '../../contract/index.js';
import { normalRepoPath } from './repo-paths.js';

/**
 * The source cluster names files of its conf.d (a CA, say); the clone mounts that configuration
 * at PGBACKREST_SOURCE_CONF_DIR instead, beside its own.
 */
function intoSourceDir(global: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(global).map(([key, value]) => [
      key,
      value.startsWith(`${PGBACKREST_CONF_DIR}/`)
        ? `${PGBACKREST_SOURCE_CONF_DIR}${value.slice(PGBACKREST_CONF_DIR.length)}`
        : value,
    ]),
  );
}

export interface ResolvedSource {
  readonly source?: RestoreSource;
  /** The projections to mount at PGBACKREST_SOURCE_CONF_DIR (the source repo's credentials). */
  readonly configuration?: readonly unknown[];
  /** Why the data source cannot be used (yet); the cluster waits and says so. */
  readonly problem?: string;
  /** The problem is a repo path of another namespace's without its owner's grant. */
  readonly grantMissing?: boolean;
}

/**
 * @example
 * ```ts
 * const { source, problem } = resolveCloneSource(cluster, await sourceClusterOf(cluster));
 * ```
 */
export function resolveCloneSource(
  cluster: PostgresCluster,
  /** The PostgresCluster `spec.dataSource.postgresCluster` names, if it exists. */
  sourceCluster: PostgresCluster | undefined,
  /** That cluster's repo host Pod, if it has one (a clone from its volume repo reads through it). */
  sourceRepoHost?: Pod,
): ResolvedSource {
  const namespace = cluster.metadata?.namespace ?? 'default';
  const dataSource = cluster.spec.dataSource;
  if (dataSource?.postgresCluster) {
    const { clusterName, repoName, options } = dataSource.postgresCluster;
    if (!sourceCluster)
      return { problem: `spec.dataSource.postgresCluster.clusterName: PostgresCluster ${clusterName} does not exist` };
    const pgbackrest = sourceCluster.spec.backups?.pgbackrest;
    const repo = pgbackrest?.repos.find((r) => r.name === repoName);
    if (!pgbackrest || !repo)
      return {
        problem: `spec.dataSource.postgresCluster.repoName: PostgresCluster ${clusterName} declares no ${repoName}`,
      };
    // A volume repo is read through the source's repo host's read-only clone port, once it serves
    // (it does with its certificate, as its pgBackRest server does).
    let gateway: { address: string; certificate: string } | undefined;
    if (repo.volume) {
      const address = sourceRepoHost?.status?.podIP;
      const certificate = sourceRepoHost?.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE];
      if (!readServerInfo(sourceRepoHost) || !address || !certificate || sourceRepoHost?.metadata?.deletionTimestamp)
        return {
          problem: `spec.dataSource.postgresCluster.repoName: ${repoName} of PostgresCluster ${clusterName} is a volume repo, and its repo host ${names.repoHost(clusterName)} does not serve yet`,
        };
      gateway = { address, certificate };
    }
    // Any other repo where the source recorded it keeps its stanza.
    const repoPath = repo.volume ? undefined : recordedRepoPaths(sourceCluster)?.[repoName];
    if (!repo.volume && !repoPath)
      return {
        problem: `spec.dataSource.postgresCluster.repoName: PostgresCluster ${clusterName} has not recorded where ${repoName} keeps its stanza yet (status.pgbackrest.repoPaths)`,
      };
    return {
      source: {
        id: 'clone',
        namespace,
        cluster: clusterName,
        stanza: PGBACKREST_STANZA,
        repo,
        ...(pgbackrest.global ? { global: intoSourceDir(pgbackrest.global) } : {}),
        ...(options ? { options } : {}),
        configDir: PGBACKREST_SOURCE_CONF_DIR,
        ...(gateway ? { gateway } : {}),
        ...(repoPath ? { repoPath } : {}),
      },
      configuration: pgbackrest.configuration ?? [],
    };
  }
  if (dataSource?.pgbackrest) {
    const { stanza, repo, global, options, configuration } = dataSource.pgbackrest;
    // A repo no cluster here owns: PGO's default path unless the user names one. A path in another
    // namespace's part of the tree needs its owner's grant (clone-actions.ts checks it).
    const named = global?.[`${repo.name}-path`];
    const repoPath = normalRepoPath(named ?? pgoRepoPath(repo.name));
    if (!repoPath)
      return { problem: `spec.dataSource.pgbackrest.global.${repo.name}-path: ${named} is not an absolute path` };
    return {
      source: {
        id: 'clone',
        namespace,
        cluster: cluster.metadata?.name ?? '',
        stanza: stanza ?? PGBACKREST_STANZA,
        repo,
        // Its `configuration` is mounted at the source's directory too, so paths follow it there.
        ...(global ? { global: intoSourceDir(global) } : {}),
        ...(options ? { options } : {}),
        configDir: PGBACKREST_SOURCE_CONF_DIR,
        repoPath,
      },
      configuration: configuration ?? [],
    };
  }
  return {};
}
