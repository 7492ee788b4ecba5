/**
 * Maps a path inside the container to where it really lives. A process node (testenv's stand-in for
 * the kubelet) runs the image as a local process and passes its volume mounts as
 * `KANRI_VOLUME_MOUNTS` = JSON `{ mountPath: localDir }`; in a real container the variable is unset
 * and every path is itself.
 */

export type VolumeMounts = Readonly<Record<string, string>>;

/** Parses `KANRI_VOLUME_MOUNTS`; an unset or empty variable means no mapping. */
export function parseVolumeMounts(json: string | undefined): VolumeMounts {
  if (json === undefined || json.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new Error(`KANRI_VOLUME_MOUNTS is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('KANRI_VOLUME_MOUNTS must be a JSON object of { mountPath: localDir }');
  const mounts: Record<string, string> = {};
  for (const [mountPath, localDir] of Object.entries(parsed)) {
    if (typeof localDir !== 'string' || !mountPath.startsWith('/') || !localDir.startsWith('/'))
      throw new Error(`KANRI_VOLUME_MOUNTS: "${mountPath}" must map an absolute path to an absolute path`);
    mounts[trimSlash(mountPath)] = trimSlash(localDir);
  }
  return mounts;
}

/**
 * The local path for `path`: the longest mount path that is `path` itself or one of its parents
 * decides, as mounts nest in a container. Unmapped paths are returned as they are.
 *
 * @example
 * ```ts
 * resolveMountPath('/pgdata/pgdata', { '/pgdata': '/tmp/pod-1/data' }); // '/tmp/pod-1/data/pgdata'
 * resolveMountPath('/pgdata/pgdata');                                 // from KANRI_VOLUME_MOUNTS, or itself
 * ```
 */
export function resolveMountPath(
  path: string,
  mounts: VolumeMounts = parseVolumeMounts(process.env.KANRI_VOLUME_MOUNTS),
): string {
  let best: string | undefined;
  for (const mountPath of Object.keys(mounts)) {
    const covers = mountPath === '' || path === mountPath || path.startsWith(`${mountPath}/`);
    if (covers && (best === undefined || mountPath.length > best.length)) best = mountPath;
  }
  if (best === undefined) return path;
  return `${mounts[best]}${path.slice(best.length)}`;
}

function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path === '/' ? '' : path;
}
