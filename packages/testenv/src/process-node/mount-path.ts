/**
 * Where a container path really is, for programs that run on a process node.
 *
 * A process cannot have mounts, so a process node tells each container where its volumes are in
 * the environment variable `KANRI_VOLUME_MOUNTS`: JSON `{ "<mountPath>": "<local directory>" }`.
 * In a real container that variable is absent and every path is returned unchanged, so programs
 * can call this unconditionally.
 *
 * This module imports nothing on purpose: programs that run in Pods (an instance agent) may copy
 * it or import it without pulling in the rest of testenv.
 */

/** The environment variable that carries the mount table. */
export const VOLUME_MOUNTS_ENV = 'KANRI_VOLUME_MOUNTS';

let cachedJson: string | undefined;
let cachedMounts: readonly (readonly [string, string])[] = [];

function parseMounts(json: string | undefined): readonly (readonly [string, string])[] {
  if (json === cachedJson) return cachedMounts;
  let entries: [string, string][] = [];
  if (json) {
    const parsed: unknown = JSON.parse(json);
    if (parsed && typeof parsed === 'object') {
      entries = Object.entries(parsed as Record<string, unknown>)
        .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
        .map(([mountPath, local]) => [mountPath.length > 1 ? mountPath.replace(/\/+$/, '') : mountPath, local]);
    }
  }
  // Longest mount path first, so a mount nested in another wins, as it does in a real container.
  entries.sort((a, b) => b[0].length - a[0].length);
  cachedJson = json;
  cachedMounts = entries;
  return entries;
}

/**
 * Translates a path inside the container to the local path it is mounted from, or returns it
 * unchanged when no volume covers it (always, in a real container).
 *
 * @example
 * ```ts
 * import { resolveMountPath } from '@kanri/testenv/mount-path';
 *
 * // In the Pod spec: volumeMounts: [{ name: 'data', mountPath: '/pgdata' }]
 * const pgdata = resolveMountPath('/pgdata/pgdata');
 * // real container: '/pgdata/pgdata'; process node: '/tmp/kanri-testenv-…/volumes/pvc-…/pgdata'
 * ```
 */
export function resolveMountPath(
  path: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string {
  for (const [mountPath, local] of parseMounts(env[VOLUME_MOUNTS_ENV])) {
    if (mountPath === '/') return `${local.replace(/\/+$/, '')}${path}`;
    if (path === mountPath) return local;
    if (path.startsWith(`${mountPath}/`)) return `${local.replace(/\/+$/, '')}${path.slice(mountPath.length)}`;
  }
  return path;
}
