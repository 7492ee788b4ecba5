/**
 * Whether a cluster may use a repo path in another namespace's part of the tree
 * (repo-paths.ts foreignRepoPath): only when the PostgresCluster that owns it, found by the path's
 * cluster directory (`<name>-<uid>`, or `<name>` for paths from before the UID), grants it with
 * its REPO_READERS_ANNOTATION. Reads the operator's cache only.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  API_VERSION,
  grantsRepoReader,
  KIND,
  REPO_READERS_ANNOTATION,
  recordedRepoPaths,
} from '../../contract/index.js';
import { type ConditionChange, removeCondition, type StepOutcome } from '../step-outcome.js';
import { type ForeignPath, planRepoPaths } from './repo-paths.js';

/**
 * Why `reader` may not use `path` (whose part of the tree `owner` says), naming what is missing;
 * undefined when the owner grants it.
 *
 * @example
 * ```ts
 * const why = foreignPathProblem(ctx, 'spec.dataSource.pgbackrest', path, owner, { namespace: 'a', name: 'copy' });
 * ```
 */
export function foreignPathProblem(
  ctx: Pick<ReconcileContext<PostgresCluster>, 'list'>,
  field: string,
  path: string,
  owner: ForeignPath,
  reader: { readonly namespace: string; readonly name: string },
): string | undefined {
  const candidates = ctx.list<PostgresCluster>(API_VERSION, KIND, { namespace: owner.namespace });
  const source =
    candidates.find((c) => `${c.metadata?.name}-${c.metadata?.uid}` === owner.directory) ??
    candidates.find((c) => c.metadata?.name === owner.directory);
  const who = `${reader.namespace}/${reader.name}`;
  if (!source)
    return `${field}: ${path} is in namespace ${owner.namespace}'s part of the repo tree, and no PostgresCluster there owns it that this operator sees to grant ${who} access`;
  if (grantsRepoReader(source.metadata?.annotations?.[REPO_READERS_ANNOTATION], reader.namespace, reader.name))
    return undefined;
  return `${field}: ${path} is the repo of PostgresCluster ${owner.namespace}/${source.metadata?.name}; it may be used here only if that cluster's annotation ${REPO_READERS_ANNOTATION} names ${who} (or ${reader.namespace}/*)`;
}

/**
 * The cluster's repo paths to record (repo-paths.ts), with the foreign ones its owners grant, and
 * why the others are refused (a repo without a path is not used: archiving waits for it).
 *
 * @example
 * ```ts
 * const { paths, problems } = resolveRepoPaths(cluster, ctx);
 * ```
 */
export function resolveRepoPaths(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'list'>,
): { paths: Record<string, string>; problems: string[] } {
  const reader = { namespace: cluster.metadata?.namespace ?? '', name: cluster.metadata?.name ?? '' };
  const status = cluster.status;
  const plan = planRepoPaths({
    ...reader,
    uid: cluster.metadata?.uid ?? '',
    spec: cluster.spec.backups?.pgbackrest,
    recorded: recordedRepoPaths(cluster),
    established: status?.systemIdentifier !== undefined || (status?.pgbackrest?.repos?.length ?? 0) > 0,
  });
  const paths = { ...plan.paths };
  const problems = plan.refused.map(({ repo, reason }) => `spec.backups.pgbackrest (${repo}): ${reason}`);
  for (const { repo, path, owner } of plan.foreign) {
    const problem = foreignPathProblem(ctx, `spec.backups.pgbackrest.global.${repo}-path`, path, owner, reader);
    if (problem) problems.push(problem);
    else paths[repo] = path;
  }
  return { paths, problems };
}

/** The condition on repo paths: False while a repo path (or the data source's) lacks its owner's grant. */
export const REPO_PATHS_CONDITION = 'RepoPathsGranted';

/**
 * The repo paths to record in `status.pgbackrest.repoPaths`, and the RepoPathsGranted condition
 * naming what is missing (for a cluster with a repo or a data source repo; removed otherwise).
 *
 * @example
 * ```ts
 * outcomes.push(recordRepoPaths(cluster, resolveRepoPaths(cluster, ctx), clone.grantMissing ? clone.problem : undefined));
 * ```
 */
export function recordRepoPaths(
  cluster: PostgresCluster,
  resolved: { readonly paths: Record<string, string>; readonly problems: readonly string[] },
  dataSourceProblem: string | undefined,
): StepOutcome {
  // Kept once recorded, even empty: a repo declared later is a new one (the default path), never
  // taken for one from before paths were recorded.
  const record = Object.keys(resolved.paths).length > 0 || recordedRepoPaths(cluster) !== undefined;
  const problems = [...resolved.problems, ...(dataSourceProblem ? [dataSourceProblem] : [])];
  const concerned = (cluster.spec.backups?.pgbackrest?.repos.length ?? 0) > 0 || cluster.spec.dataSource?.pgbackrest;
  const condition: ConditionChange =
    concerned || problems.length > 0
      ? {
          type: REPO_PATHS_CONDITION,
          status: problems.length > 0 ? 'False' : 'True',
          reason: problems.length > 0 ? 'GrantMissing' : 'OwnOrGranted',
          message:
            problems.length > 0
              ? problems.join('; ')
              : 'every repo path is in this namespace’s part of the tree, or granted by its owner',
          observedGeneration: cluster.metadata?.generation,
        }
      : removeCondition(REPO_PATHS_CONDITION);
  return {
    ...(record ? { status: { pgbackrest: { repoPaths: resolved.paths } } } : {}),
    conditions: [condition],
  };
}
