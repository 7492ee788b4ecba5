/** Which local user a container runs as: the image mapping's user, else the Pod's securityContext. */
import { readFile } from 'node:fs/promises';
import type { Container, PodSecurityContext } from 'kubernetes-types/core/v1.js';

export interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** Parses /etc/passwd text. Pure. */
export function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    const [name, , uid, gid, , home] = line.split(':');
    if (!name || uid === undefined || gid === undefined || line.startsWith('#')) continue;
    entries.push({ name, uid: Number(uid), gid: Number(gid), home: home ?? '/' });
  }
  return entries;
}

export async function readPasswd(): Promise<PasswdEntry[]> {
  return parsePasswd(await readFile('/etc/passwd', 'utf8').catch(() => ''));
}

/** The identity a container process gets. `switch` is false when testenv cannot change user (not root). */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (fsGroup and supplementalGroups). */
  readonly groups: readonly number[];
  readonly home: string;
  readonly switch: boolean;
}

export type RunAsResult =
  | { readonly ok: true; readonly runAs: RunAs }
  | { readonly ok: false; readonly message: string };

/**
 * Resolves the container's user. Running as root, the image mapping's `user` wins, then the
 * container's and the Pod's `runAsUser`/`runAsGroup`, then root. Not running as root, every
 * container runs as testenv's own user (a process cannot switch user without privileges).
 * Pure apart from the identity passed in.
 */
export function resolveRunAs(input: {
  readonly mappingUser?: string | number;
  readonly pod?: PodSecurityContext;
  readonly container?: Container['securityContext'];
  readonly passwd: readonly PasswdEntry[];
  readonly self: { readonly uid: number; readonly gid: number };
}): RunAsResult {
  const { passwd, self } = input;
  const byUid = (uid: number) => passwd.find((p) => p.uid === uid);
  const groups = [
    ...(input.pod?.fsGroup !== undefined ? [input.pod.fsGroup] : []),
    ...(input.pod?.supplementalGroups ?? []),
  ];
  const runAsNonRoot = input.container?.runAsNonRoot ?? input.pod?.runAsNonRoot ?? false;
  if (self.uid !== 0) {
    return {
      ok: true,
      runAs: { uid: self.uid, gid: self.gid, groups: [], home: byUid(self.uid)?.home ?? '/', switch: false },
    };
  }
  let uid: number;
  let gid: number;
  if (input.mappingUser !== undefined) {
    const entry =
      typeof input.mappingUser === 'number' || /^\d+$/.test(input.mappingUser)
        ? byUid(Number(input.mappingUser))
        : passwd.find((p) => p.name === input.mappingUser);
    if (!entry && typeof input.mappingUser === 'string' && !/^\d+$/.test(input.mappingUser)) {
      return { ok: false, message: `image mapping user "${input.mappingUser}" does not exist on this machine` };
    }
    uid = entry?.uid ?? Number(input.mappingUser);
    gid = entry?.gid ?? uid;
  } else {
    uid = input.container?.runAsUser ?? input.pod?.runAsUser ?? 0;
    gid = input.container?.runAsGroup ?? input.pod?.runAsGroup ?? byUid(uid)?.gid ?? 0;
  }
  if (runAsNonRoot && uid === 0) {
    return { ok: false, message: 'container has runAsNonRoot and image will run as root' };
  }
  return { ok: true, runAs: { uid, gid, groups, home: byUid(uid)?.home ?? '/', switch: true } };
}

/** setpriv flags that switch to `runAs` (empty when no switch is needed or possible). */
export function setprivUserArgs(runAs: RunAs): string[] {
  if (!runAs.switch) return [];
  return [
    `--reuid=${runAs.uid}`,
    `--regid=${runAs.gid}`,
    ...(runAs.groups.length > 0 ? [`--groups=${runAs.groups.join(',')}`] : ['--clear-groups']),
  ];
}
