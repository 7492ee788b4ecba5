/**
 * How a former primary came back, told apart by what each path leaves behind. A rewind (pg_rewind)
 * keeps the instance's data directory: the same directory (inode) on its volume, nothing set aside.
 * A re-clone moves the data directory aside to `pgdata.diverged` and copies a new one from the
 * primary. The system identifier cannot tell them apart (a clone has the primary's, which is the
 * cluster's), so these look at the directory itself, the agent's rejoin decision and its Events.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeClient } from '@kanri/client';
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { EVENT_REASON, names } from '../../src/index.js';
import { type ClusterEvent, clusterEvents } from './cluster-observers.js';

/** The directory on this machine holding an instance's volume (a process node's hostPath PV). */
export async function volumeDirOf(client: KubeClient, pod: string): Promise<string> {
  const claim = await client
    .resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim')
    .get(names.pvc(pod), { namespace: 'default' });
  const volume = await client.resource<PersistentVolume>('v1', 'PersistentVolume').get(claim.spec?.volumeName ?? '');
  const dir = volume.spec?.hostPath?.path ?? volume.spec?.local?.path;
  if (!dir) throw new Error(`the volume of ${pod} has no local path`);
  return dir;
}

/** The identity of an instance's data directory: its inode, which only a replacement changes. */
export interface DataDirState {
  readonly pgdata: string;
  readonly inode: bigint | undefined;
  /** `pgdata.diverged` exists: a re-clone set a data directory aside. */
  readonly setAside: boolean;
  readonly setAsideInode: bigint | undefined;
}

export async function dataDirState(volumeDir: string): Promise<DataDirState> {
  const inode = async (path: string) => (await stat(path, { bigint: true }).catch(() => undefined))?.ino;
  const pgdata = join(volumeDir, 'pgdata');
  const aside = await inode(`${pgdata}.diverged`);
  return { pgdata, inode: await inode(pgdata), setAside: aside !== undefined, setAsideInode: aside };
}

/** The agent's rejoin decision when pg_rewind succeeded (rewound, or nothing to rewind). */
export const REWOUND_DECISION = /^pg_rewind: (rewound from \S+ in \d+ ms|no rewind required)/;
/** The agent's rejoin decision after a failed pg_rewind. */
export const RECLONED_DECISION = /^re-cloned from \S+: pg_rewind failed/;

/** The rejoin Events recorded about `pod`: successful rewinds, failed rewinds and re-clones. */
export async function rejoinEvents(
  client: KubeClient,
  cluster: string,
  pod: string,
): Promise<{ rewound: ClusterEvent[]; failed: ClusterEvent[]; recloned: ClusterEvent[] }> {
  const events = await clusterEvents(client, cluster);
  const of = (reason: string, prefix: string) => events.filter((e) => e.reason === reason && e.note.startsWith(prefix));
  return {
    rewound: of(EVENT_REASON.rewound, `${pod} rejoins as a replica of `),
    failed: of(EVENT_REASON.rewindFailed, `${pod}: pg_rewind from `),
    recloned: of(EVENT_REASON.recloned, `${pod}: re-cloned from `),
  };
}
