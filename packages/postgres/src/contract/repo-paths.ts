/**
 * Where each repo of a cluster keeps its stanza (decided by the operator, recorded in the
 * cluster's status, read by the agents), and who of other namespaces may read it: a path in
 * another namespace's part of the tree is used only with the source's grant.
 */
import { GROUP } from './names.js';

/**
 * Annotation on a PostgresCluster: who of other namespaces may restore from its repos (a clone, or
 * a cluster naming its repo path), comma-separated `<namespace>/<cluster>` or `<namespace>/*`. Its
 * repo paths carry its namespace (defaultRepoPath), and a path in another namespace's part of the
 * tree is used only with this grant (operator/backups/repo-paths.ts).
 */
export const REPO_READERS_ANNOTATION = `${GROUP}/repo-readers`;

/**
 * Whether the annotation's value grants `namespace`/`cluster`.
 *
 * @example
 * ```ts
 * grantsRepoReader('team-a/*, team-b/copy', 'team-b', 'copy'); // true
 * ```
 */
export function grantsRepoReader(value: string | undefined, namespace: string, cluster: string): boolean {
  return (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .some((entry) => entry === `${namespace}/${cluster}` || entry === `${namespace}/*`);
}

/** `repo2` → 2. */
export function repoIndex(name: string): number {
  const index = Number(/^repo([1-4])$/.exec(name)?.[1]);
  if (!Number.isInteger(index)) throw new Error(`not a repo name: ${name}`);
  return index;
}

/**
 * Where a new cluster's repo keeps its stanza unless `global` sets `repoN-path`: under its
 * namespace, and its cluster's name and UID, so that neither clusters sharing a bucket (a clone and
 * its source included) nor a cluster deleted and created again under the same name share a stanza,
 * and every path says which namespace it belongs to. The operator decides each cluster's paths and
 * records them in its status (operator/backups/repo-paths.ts); the agents read them there.
 *
 * @example
 * ```ts
 * defaultRepoPath('db', 'hippo', '1f0e…', 'repo1'); // '/pgbackrest/db/hippo-1f0e…/repo1'
 * ```
 */
export function defaultRepoPath(namespace: string, cluster: string, uid: string, repo: string): string {
  return `/pgbackrest/${namespace}/${cluster}-${uid}/${repo}`;
}

/** Where clusters created before {@link defaultRepoPath} keep their stanza; they keep it there. */
export function legacyRepoPath(namespace: string, cluster: string, repo: string): string {
  return `/pgbackrest/${namespace}/${cluster}/${repo}`;
}

/** PGO's default path of a repo (`/pgbackrest/repoN`), for a data source that names none. */
export function pgoRepoPath(repo: string): string {
  return `/pgbackrest/${repo}`;
}

/**
 * The repo paths the operator recorded in a PostgresCluster's status
 * (`status.pgbackrest.repoPaths`, by repo name); undefined while none are recorded.
 *
 * @example
 * ```ts
 * recordedRepoPaths(view.cluster); // { repo1: '/pgbackrest/db/hippo-1f0e…/repo1' }
 * ```
 */
export function recordedRepoPaths(cluster: object | undefined): Record<string, string> | undefined {
  const status = (cluster as { status?: { pgbackrest?: { repoPaths?: unknown } } } | undefined)?.status;
  const paths = status?.pgbackrest?.repoPaths;
  if (!paths || typeof paths !== 'object') return undefined;
  return Object.fromEntries(
    Object.entries(paths).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
