/**
 * An in-place restore, as the operator carries it out: each new value of the restore annotation
 * (with `spec.backups.pgbackrest.restore.enabled`) fences every instance, then the instance it
 * keeps (the last primary) restores from the repo and recovers to the target, and once it reports
 * success the others are re-created and clone it. Pure: one step per reconcile, decided from
 * what the cache shows.
 *
 * Guarantees: no instance runs beside the restoring one (the Lease and the other volumes are
 * removed only once every Pod is gone); a failed restore leaves the cluster stopped with the
 * reason in `status.pgbackrest.restore`, and only a new annotation value runs it again.
 */
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  type InstanceReport,
  PGBACKREST_CONF_DIR,
  PGBACKREST_STANZA,
  type RestoreSource,
  triggerValue,
} from '../../contract/index.js';

export interface RestoreStatus {
  id: string;
  finished: boolean;
  phase?: 'Fencing' | 'Restoring' | 'Succeeded' | 'Failed';
  instance?: string;
  succeeded?: number;
  failed?: number;
  reason?: string;
  message?: string;
  startTime?: string;
  completionTime?: string;
}

export interface RestorePod {
  readonly name: string;
  readonly deleting: boolean;
  /** The Pod's ENV.restoreId, if it was created to restore. */
  readonly restoreId: string | undefined;
  readonly report: InstanceReport['restore'];
}

export interface RestorePlanInput {
  readonly cluster: PostgresCluster;
  readonly pods: readonly RestorePod[];
  /** The instances the cluster keeps, in order (the first is the fallback to restore). */
  readonly instances: readonly string[];
  readonly now: Date;
}

export interface RestorePlan {
  /** A restore is under way or failed: the usual creation of instances waits. */
  readonly active: boolean;
  readonly status?: RestoreStatus;
  readonly deletePods: readonly string[];
  /** Every Pod is gone: remove the Lease and the other instances' volumes (they re-clone). */
  readonly clearOthers: boolean;
  /** Create the restoring instance's Pod (bootstrap `restore`) from this source. */
  readonly createPod?: { readonly instance: string; readonly source: RestoreSource };
  /** The source the restoring instance reads (ConfigMap), while the restore runs. */
  readonly source?: RestoreSource;
  readonly event?: { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly note: string };
}

const idle = (status?: RestoreStatus): RestorePlan => ({
  active: false,
  ...(status ? { status } : {}),
  deletePods: [],
  clearOthers: false,
});

export function planRestore(input: RestorePlanInput): RestorePlan {
  const { cluster, pods, now } = input;
  const previous = (cluster.status?.pgbackrest?.restore ?? undefined) as RestoreStatus | undefined;
  const id = triggerValue(cluster.metadata?.annotations, 'restore');
  if (id === undefined) return idle(previous);
  if (previous?.id === id && previous.finished) return { ...idle(previous), active: previous.phase === 'Failed' };

  const pgbackrest = cluster.spec.backups?.pgbackrest;
  const restore = pgbackrest?.restore;
  const started = previous?.id === id ? previous.startTime : now.toISOString();
  const failed = (reason: string, message: string): RestorePlan => ({
    ...idle({ id, finished: true, phase: 'Failed', failed: 1, reason, message, startTime: started }),
    event: { type: 'Warning', reason: 'RestoreFailed', note: `restore ${id}: ${message}` },
  });
  if (!restore?.enabled)
    return failed('RestoreDisabled', 'spec.backups.pgbackrest.restore.enabled must be true for an in-place restore');
  const repo = pgbackrest?.repos.find((r) => r.name === restore.repoName);
  if (!repo)
    return failed('RepoNotDeclared', `spec.backups.pgbackrest.restore.repoName: ${restore.repoName} is not declared`);

  const instance =
    (previous?.id === id ? previous.instance : undefined) ??
    cluster.status?.primary ??
    cluster.status?.lastPrimary ??
    input.instances[0];
  if (!instance) return failed('NoInstance', 'the cluster has no instance to restore');
  const source: RestoreSource = {
    id,
    namespace: cluster.metadata?.namespace ?? 'default',
    cluster: cluster.metadata?.name ?? '',
    stanza: PGBACKREST_STANZA,
    repo,
    ...(pgbackrest?.global ? { global: pgbackrest.global } : {}),
    ...(restore.options ? { options: restore.options } : {}),
    configDir: PGBACKREST_CONF_DIR,
  };
  const base = { id, finished: false, instance, startTime: started } as const;
  const restoring = (p: RestorePod) => p.name === instance && p.restoreId === id;

  const others = pods.filter((p) => !restoring(p));
  if (others.length > 0) {
    return {
      active: true,
      status: { ...base, phase: 'Fencing' },
      deletePods: others.filter((p) => !p.deleting).map((p) => p.name),
      clearOthers: false,
      source,
      ...(previous?.id !== id
        ? {
            event: {
              type: 'Normal',
              reason: 'RestoreStarted',
              note: `restore ${id}: stopping every instance; ${instance} will restore`,
            },
          }
        : {}),
    } as RestorePlan;
  }
  const chosen = pods.find(restoring);
  if (!chosen) {
    return {
      active: true,
      status: { ...base, phase: 'Restoring' },
      deletePods: [],
      clearOthers: true,
      createPod: { instance, source },
      source,
    };
  }
  const report = chosen.report?.id === id ? chosen.report : undefined;
  if (report?.result === 'succeeded') {
    return {
      ...idle({ ...base, finished: true, phase: 'Succeeded', succeeded: 1, completionTime: now.toISOString() }),
      event: {
        type: 'Normal',
        reason: 'Restored',
        note: `restore ${id}: ${instance} restored; the other instances re-clone it`,
      },
    };
  }
  if (report?.result === 'failed') {
    return {
      ...idle({
        ...base,
        finished: true,
        phase: 'Failed',
        failed: 1,
        reason: 'RestoreFailed',
        message: report.reason ?? 'the restore failed',
        completionTime: now.toISOString(),
      }),
      active: true,
      event: {
        type: 'Warning',
        reason: 'RestoreFailed',
        note: `restore ${id} on ${instance} failed: ${report.reason}`,
      },
    };
  }
  return { active: true, status: { ...base, phase: 'Restoring' }, deletePods: [], clearOthers: false, source };
}
