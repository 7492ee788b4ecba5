/**
 * Volumes as local directories. A process cannot have mounts, so each volume becomes a directory
 * and containers learn where from `KANRI_VOLUME_MOUNTS` (see `resolveMountPath`).
 *
 * emptyDir → a directory of the Pod (removed with it); persistentVolumeClaim → the bound PV's
 * `hostPath`/`local` path; configMap, secret, downwardAPI and projected → files written when the
 * Pod starts (and service-account tokens when they are refreshed); hostPath → that path.
 */
import { chmod, chown, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type {
  ConfigMap,
  Container,
  DownwardAPIVolumeFile,
  KeyToPath,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Volume,
} from 'kubernetes-types/core/v1.js';
import { type Api, encode } from '../api.js';
import { type EnvContext, fieldRefValue, objectData, resourceFieldValue } from '../env.js';
import type { RunAs } from '../users.js';
import { planVolumeAccess } from './volume-access.js';

/** A volume could not be prepared yet (a missing Secret, an unbound claim); the Pod keeps waiting. */
export class VolumeNotReady extends Error {}

export interface ServiceAccountTokenFile {
  readonly path: string;
  readonly audience: string | undefined;
  readonly expirationSeconds: number;
  readonly mode: number;
  readonly owner: RunAs | undefined;
}

export interface PreparedVolumes {
  /** Volume name → local directory. */
  readonly dirs: ReadonlyMap<string, string>;
  /** Token files to refresh before they expire. */
  readonly tokens: readonly ServiceAccountTokenFile[];
}

export interface VolumeContext {
  readonly api: Api;
  readonly pod: Pod;
  /** The Pod's own directory; emptyDir and file volumes live under it. */
  readonly podDir: string;
  readonly env: EnvContext;
  /** Who runs the containers that mount a volume, in the Pod's order (init containers first). */
  readonly usersOf: (volume: string) => readonly RunAs[];
  /** Writes a service-account token for the Pod to `file`. */
  readonly writeToken: (file: ServiceAccountTokenFile) => Promise<void>;
}

/** `{ mountPath: local path }` for one container (subPath included). Pure. */
export function containerMounts(container: Container, dirs: ReadonlyMap<string, string>): Record<string, string> {
  const mounts: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const dir = dirs.get(mount.name);
    if (dir === undefined) continue;
    mounts[mount.mountPath] = mount.subPath ? join(dir, mount.subPath) : dir;
  }
  return mounts;
}

/**
 * Gives a volume's directory to the Pod's users (`planVolumeAccess`): the containers' user alone,
 * or their fsGroup. Where the Pod names no user that serves them all, the first container's user
 * owns it with `fallbackMode`, as before such a plan. Without root every container runs as
 * testenv's own user, which then owns it alone.
 */
async function own(
  path: string,
  users: readonly RunAs[],
  fsGroup: number | undefined,
  fallbackMode: number,
): Promise<void> {
  if (!users.some((u) => u.switch)) {
    await chmod(path, 0o700);
    return;
  }
  const access = planVolumeAccess(users, fsGroup);
  const owner = users[0];
  if (!access) {
    if (owner) await chown(path, owner.uid, owner.gid);
    await chmod(path, fallbackMode);
    return;
  }
  await chown(path, access.uid, access.gid);
  await chmod(path, access.mode);
}

/** Writes `files` (relative path → content) into a fresh directory that replaces `dir` at once. */
async function writeFiles(
  dir: string,
  files: readonly { path: string; content: string | Buffer; mode: number }[],
  users: readonly RunAs[],
  fsGroup: number | undefined,
): Promise<void> {
  const owner = users[0];
  const staging = `${dir}.staging-${process.pid}-${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true, mode: 0o755 });
  for (const file of files) {
    const target = join(staging, file.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, file.content, { mode: file.mode });
    await chmod(target, file.mode);
    if (owner?.switch) await chown(target, owner.uid, fsGroup ?? owner.gid);
  }
  // The files' own modes (defaultMode, items' mode) say who may read them; the directory only admits.
  await own(staging, users, fsGroup, 0o755);
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
}

function keyFiles(
  data: Record<string, string | Buffer>,
  items: readonly KeyToPath[] | undefined,
  defaultMode: number,
  what: string,
  optional: boolean,
): { path: string; content: string | Buffer; mode: number }[] {
  if (!items) return Object.entries(data).map(([key, content]) => ({ path: key, content, mode: defaultMode }));
  const files: { path: string; content: string | Buffer; mode: number }[] = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined) {
      if (optional) continue;
      throw new VolumeNotReady(`configmap or secret key "${item.key}" not found in ${what}`);
    }
    files.push({ path: item.path, content, mode: item.mode ?? defaultMode });
  }
  return files;
}

async function fetchData(
  api: Api,
  namespace: string,
  kind: 'configMap' | 'secret',
  name: string,
  optional: boolean,
): Promise<Record<string, string | Buffer> | undefined> {
  if (kind === 'secret') {
    const secret = await api.get<Secret>(`/api/v1/namespaces/${encode(namespace)}/secrets/${encode(name)}`);
    if (!secret) {
      if (optional) return undefined;
      throw new VolumeNotReady(`secret "${name}" not found`);
    }
    return objectData.secret(secret);
  }
  const cm = await api.get<ConfigMap>(`/api/v1/namespaces/${encode(namespace)}/configmaps/${encode(name)}`);
  if (!cm) {
    if (optional) return undefined;
    throw new VolumeNotReady(`configmap "${name}" not found`);
  }
  const data: Record<string, string | Buffer> = objectData.configMap(cm);
  for (const [key, value] of Object.entries(cm.binaryData ?? {})) data[key] = Buffer.from(value, 'base64');
  return data;
}

function downwardFiles(
  pod: Pod,
  items: readonly DownwardAPIVolumeFile[],
  defaultMode: number,
  env: EnvContext,
): { path: string; content: string; mode: number }[] {
  return items.map((item) => {
    let content = '';
    if (item.fieldRef) content = fieldRefValue(pod, item.fieldRef.fieldPath, env) ?? '';
    else if (item.resourceFieldRef) {
      const container =
        pod.spec?.containers.find((c) => c.name === item.resourceFieldRef?.containerName) ?? pod.spec?.containers[0];
      content = container
        ? (resourceFieldValue(container, item.resourceFieldRef.resource, item.resourceFieldRef.divisor, env) ?? '')
        : '';
    }
    return { path: item.path, content, mode: item.mode ?? defaultMode };
  });
}

async function claimPath(api: Api, namespace: string, claimName: string): Promise<string> {
  const pvc = await api.get<PersistentVolumeClaim>(
    `/api/v1/namespaces/${encode(namespace)}/persistentvolumeclaims/${encode(claimName)}`,
  );
  if (!pvc) throw new VolumeNotReady(`persistentvolumeclaim "${claimName}" not found`);
  const volumeName = pvc.spec?.volumeName;
  if (!volumeName || pvc.status?.phase !== 'Bound') {
    throw new VolumeNotReady(`persistentvolumeclaim "${claimName}" is not bound yet`);
  }
  const pv = await api.get<PersistentVolume>(`/api/v1/persistentvolumes/${encode(volumeName)}`);
  const path = pv?.spec?.hostPath?.path ?? pv?.spec?.local?.path;
  if (!path) {
    throw new VolumeNotReady(
      `persistentvolume "${volumeName}" has no hostPath or local path; a process node can only use local directories`,
    );
  }
  await mkdir(path, { recursive: true });
  return path;
}

/** Materialises one volume and returns its local directory. */
async function prepareVolume(
  context: VolumeContext,
  volume: Volume,
  tokens: ServiceAccountTokenFile[],
): Promise<string> {
  const { api, pod, podDir } = context;
  const namespace = pod.metadata?.namespace ?? 'default';
  const users = context.usersOf(volume.name);
  const owner = users[0];
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  const dir = join(podDir, 'volumes', volume.name);
  if (volume.emptyDir) {
    // Not the mode: a recursive mkdir gives it to the Pod's `volumes` directory too, which the
    // containers' users must pass through.
    await mkdir(dir, { recursive: true });
    await own(dir, users, fsGroup, 0o777);
    return dir;
  }
  if (volume.persistentVolumeClaim) {
    const path = await claimPath(api, namespace, volume.persistentVolumeClaim.claimName);
    await own(path, users, fsGroup, 0o755);
    return path;
  }
  if (volume.hostPath) {
    if (volume.hostPath.type === 'DirectoryOrCreate' || !volume.hostPath.type)
      await mkdir(volume.hostPath.path, { recursive: true });
    return volume.hostPath.path;
  }
  if (volume.configMap || volume.secret) {
    const kind = volume.configMap ? 'configMap' : 'secret';
    const source = volume.configMap ?? volume.secret;
    const name = volume.configMap?.name ?? volume.secret?.secretName ?? '';
    const data = (await fetchData(api, namespace, kind, name, source?.optional === true)) ?? {};
    const files = keyFiles(
      data,
      source?.items,
      source?.defaultMode ?? 0o644,
      `${kind} "${name}"`,
      source?.optional === true,
    );
    await writeFiles(dir, files, users, fsGroup);
    return dir;
  }
  if (volume.downwardAPI) {
    await writeFiles(
      dir,
      downwardFiles(pod, volume.downwardAPI.items ?? [], volume.downwardAPI.defaultMode ?? 0o644, context.env),
      users,
      fsGroup,
    );
    return dir;
  }
  if (volume.projected) {
    const defaultMode = volume.projected.defaultMode ?? 0o644;
    const files: { path: string; content: string | Buffer; mode: number }[] = [];
    const pendingTokens: Omit<ServiceAccountTokenFile, 'path'>[] = [];
    const tokenPaths: string[] = [];
    for (const source of volume.projected.sources ?? []) {
      if (source.configMap || source.secret) {
        const kind = source.configMap ? 'configMap' : 'secret';
        const projection = source.configMap ?? source.secret;
        const name = projection?.name ?? '';
        const data = await fetchData(api, namespace, kind, name, projection?.optional === true);
        if (data)
          files.push(
            ...keyFiles(data, projection?.items, defaultMode, `${kind} "${name}"`, projection?.optional === true),
          );
      } else if (source.downwardAPI) {
        files.push(...downwardFiles(pod, source.downwardAPI.items ?? [], defaultMode, context.env));
      } else if (source.serviceAccountToken) {
        tokenPaths.push(source.serviceAccountToken.path);
        pendingTokens.push({
          audience: source.serviceAccountToken.audience,
          expirationSeconds: source.serviceAccountToken.expirationSeconds ?? 3600,
          // The kubelet writes tokens 0600 (0640 with fsGroup) whatever defaultMode says.
          mode: fsGroup === undefined ? 0o600 : 0o640,
          owner,
        });
      } else {
        throw new VolumeNotReady(
          `volume "${volume.name}": projected source ${Object.keys(source).join(',')} is unsupported on a process node`,
        );
      }
    }
    await writeFiles(dir, files, users, fsGroup);
    for (const [i, token] of pendingTokens.entries()) {
      const file = { ...token, path: join(dir, tokenPaths[i] ?? 'token') };
      await context.writeToken(file);
      tokens.push(file);
    }
    return dir;
  }
  const kind = Object.keys(volume).find((k) => k !== 'name') ?? 'unknown';
  throw new VolumeNotReady(`volume "${volume.name}": type ${kind} is unsupported on a process node`);
}

/** Prepares every volume of the Pod. Throws VolumeNotReady when one cannot be prepared yet. */
export async function prepareVolumes(context: VolumeContext): Promise<PreparedVolumes> {
  const dirs = new Map<string, string>();
  const tokens: ServiceAccountTokenFile[] = [];
  for (const volume of context.pod.spec?.volumes ?? [])
    dirs.set(volume.name, await prepareVolume(context, volume, tokens));
  return { dirs, tokens };
}
