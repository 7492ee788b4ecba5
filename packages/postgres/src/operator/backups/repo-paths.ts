/**
 * Where each of a cluster's repos keeps its stanza (every repo but a volume, whose path is its
 * mount), decided once by the operator and recorded in `status.pgbackrest.repoPaths`, which the
 * agents read: the path `global.repoN-path` names (the user's, who then keeps clusters apart), else
 * the path already recorded (an operator upgrade never moves a repo, so the recovery window stays
 * where it is), else for a cluster that ran before paths were recorded the path it used then
 * (contract/pgbackrest.ts legacyRepoPath), else the default under the namespace, the cluster's name
 * and UID (defaultRepoPath).
 *
 * A path inside another namespace's part of the tree (`/pgbackrest/<namespace>/…`) belongs to a
 * cluster there: S3 credentials shared between namespaces would let one restore, or write into,
 * another's backups. Such a path is used only when that cluster grants it (repo-grants.ts). Pure.
 */
import { posix } from 'node:path';
import { defaultRepoPath, legacyRepoPath, type PgBackRestSpec } from '../../contract/index.js';

/** A path inside another namespace's part of the tree: whose it is, as far as the path says. */
export interface ForeignPath {
  readonly namespace: string;
  /** The path's cluster directory: `<cluster>-<uid>` (defaultRepoPath) or `<cluster>` (legacyRepoPath). */
  readonly directory: string;
}

/**
 * `path` normalised (no `.`, `..`, doubled or trailing slash), as pgBackRest would reach it; undefined
 * when it is not absolute.
 *
 * @example
 * ```ts
 * normalRepoPath('/pgbackrest//b/./x/../hippo/repo1/'); // '/pgbackrest/b/hippo/repo1'
 * ```
 */
export function normalRepoPath(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const normal = posix.normalize(path);
  return normal.length > 1 ? normal.replace(/\/+$/, '') : normal;
}

/**
 * Whose part of the tree `path` is in when that is not `namespace`'s own: a path under
 * `/pgbackrest/<other namespace>/<directory>/`.
 *
 * @example
 * ```ts
 * foreignRepoPath('/pgbackrest/b/hippo-1f0e/repo1', 'a'); // { namespace: 'b', directory: 'hippo-1f0e' }
 * foreignRepoPath('/pgbackrest/repo1', 'a'); // undefined (PGO's default: nobody's)
 * ```
 */
export function foreignRepoPath(path: string, namespace: string): ForeignPath | undefined {
  const [root, owner, directory] = (normalRepoPath(path) ?? '').split('/').slice(1);
  if (root !== 'pgbackrest' || !owner || !directory || owner === namespace) return undefined;
  return { namespace: owner, directory };
}

export interface RepoPathInput {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly spec: PgBackRestSpec | undefined;
  /** `status.pgbackrest.repoPaths` as recorded so far; undefined when nothing was ever recorded. */
  readonly recorded: Readonly<Record<string, string>> | undefined;
  /**
   * The cluster ran before paths were recorded (it has a system identifier or a stanza): a repo
   * without a recorded path is where legacyRepoPath put it.
   */
  readonly established: boolean;
}

export interface RepoPathPlan {
  /** Each repo's path (volume repos left out); a foreign one only once granted, by the caller. */
  readonly paths: Record<string, string>;
  /** Paths in another namespace's part of the tree, by repo: used only if their owner grants them. */
  readonly foreign: readonly { readonly repo: string; readonly path: string; readonly owner: ForeignPath }[];
  /** Paths refused outright (not absolute), by repo, with why. */
  readonly refused: readonly { readonly repo: string; readonly reason: string }[];
}

/**
 * @example
 * ```ts
 * planRepoPaths({ namespace: 'db', name: 'hippo', uid: '1f0e', spec, recorded: undefined, established: false });
 * // { paths: { repo1: '/pgbackrest/db/hippo-1f0e/repo1' }, foreign: [], refused: [] }
 * ```
 */
export function planRepoPaths(input: RepoPathInput): RepoPathPlan {
  const paths: Record<string, string> = {};
  const foreign: { repo: string; path: string; owner: ForeignPath }[] = [];
  const refused: { repo: string; reason: string }[] = [];
  for (const repo of input.spec?.repos ?? []) {
    if (repo.volume !== undefined) continue;
    const own = input.spec?.global?.[`${repo.name}-path`];
    const path =
      own !== undefined
        ? normalRepoPath(own)
        : (input.recorded?.[repo.name] ??
          (input.recorded === undefined && input.established
            ? legacyRepoPath(input.namespace, input.name, repo.name)
            : defaultRepoPath(input.namespace, input.name, input.uid, repo.name)));
    if (!path) {
      refused.push({ repo: repo.name, reason: `global.${repo.name}-path ${own} is not an absolute path` });
      continue;
    }
    // Recorded paths too: a grant that was withdrawn no longer holds.
    const owner = foreignRepoPath(path, input.namespace);
    if (owner) foreign.push({ repo: repo.name, path, owner });
    else paths[repo.name] = path;
  }
  return { paths, foreign, refused };
}
