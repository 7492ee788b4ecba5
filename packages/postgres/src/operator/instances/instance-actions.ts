/**
 * The instances of a cluster at each reconcile: what exists (its Pods and PVCs), the plan for
 * them (instance-plan.ts), and the steps that carry it out: scale down, replace Pods the
 * scheduler left behind, create what is missing (or stop everything, shut down).
 *
 * Pods and PVCs are mostly immutable, so they are created once and afterwards only their labels
 * are re-applied (`ctx.applyMetadata`, under a separate field manager, so the operator never
 * claims, and later drops, fields of a spec it cannot change anyway).
 */
import { ignoreNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, ROLE } from '../../contract/index.js';
import type { ResolvedSource } from '../backups/restore-source.js';
import { dataVolumeClaim } from '../builders/data-volume-claim.js';
import { instancePod } from '../builders/instance-pod.js';
import { isInitialised, readReport } from '../cluster-status.js';
import { createIfMissing } from '../create-if-missing.js';
import { type InstancePlan, type ObservedInstance, planInstances } from '../instance-plan.js';
import { withTemplateHash } from '../rollout/pod-template-hash.js';
import { consentedProjections } from '../secret-consent.js';
import type { StepOutcome } from '../step-outcome.js';
import { podsStuckOnBoundClaims } from './stuck-pods.js';

type Context = ReconcileContext<PostgresCluster>;

/** A cluster's Pods and PVCs, and the plan for its instances. */
export interface ObservedCluster {
  /** The cluster's Pods, the repo host's included. */
  readonly pods: readonly Pod[];
  readonly claims: readonly PersistentVolumeClaim[];
  /** The instances' Pods: the repo host is the cluster's too, but no instance. */
  readonly instancePods: readonly Pod[];
  readonly initialised: boolean;
  readonly plan: InstancePlan;
}

function observe(pods: readonly Pod[], claims: readonly PersistentVolumeClaim[]): ObservedInstance[] {
  const byName = new Map<string, { set: string; pod?: Pod; claim?: PersistentVolumeClaim }>();
  for (const pod of pods) {
    const name = pod.metadata?.labels?.[LABEL.instance];
    if (name) byName.set(name, { ...byName.get(name), set: pod.metadata?.labels?.[LABEL.instanceSet] ?? '', pod });
  }
  for (const claim of claims) {
    const name = claim.metadata?.labels?.[LABEL.instance];
    if (name) {
      byName.set(name, { ...byName.get(name), set: claim.metadata?.labels?.[LABEL.instanceSet] ?? '', claim });
    }
  }
  return [...byName].map(([name, { set, pod, claim }]) => ({
    name,
    set,
    hasPod: pod !== undefined,
    hasVolume: claim !== undefined,
    isPrimary: pod?.metadata?.labels?.[LABEL.role] === ROLE.primary,
    ready: readReport(pod ?? {})?.ready ?? false,
    // A Pod going away on a volume that stays is being replaced (a rolling update, a user's delete),
    // not removed: counting it as leaving would create another instance in its place.
    deleting: Boolean(claim ? claim.metadata?.deletionTimestamp : pod?.metadata?.deletionTimestamp),
  }));
}

/**
 * Reads the cluster's Pods and PVCs from the cache and plans its instances.
 *
 * @example
 * ```ts
 * const { pods, claims, instancePods, initialised, plan } = observeCluster(cluster, ctx);
 * ```
 */
export function observeCluster(cluster: PostgresCluster, ctx: Context): ObservedCluster {
  const namespace = cluster.metadata?.namespace;
  const clusterName = cluster.metadata?.name ?? '';
  const pods = ctx
    .list<Pod>('v1', 'Pod', { namespace, ownedBy: cluster })
    .filter((p) => p.metadata?.labels?.[LABEL.cluster] === clusterName);
  const claims = ctx
    .list<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', { namespace, ownedBy: cluster })
    .filter((c) => c.metadata?.labels?.[LABEL.cluster] === clusterName);
  const instancePods = pods.filter((p) => p.metadata?.labels?.[LABEL.instance]);
  const initialised = isInitialised(cluster, instancePods);
  const plan = planInstances(clusterName, cluster.spec, observe(pods, claims), initialised);
  return { pods, claims, instancePods, initialised, plan };
}

/**
 * Removes the replicas the plan scales away: the Pod, and the PVC unless the spec retains it
 * (then released from the cluster).
 *
 * @example
 * ```ts
 * await scaleDown(cluster, ctx, plan.remove);
 * ```
 */
export async function scaleDown(
  cluster: PostgresCluster,
  ctx: Context,
  remove: readonly ObservedInstance[],
): Promise<StepOutcome> {
  const namespace = cluster.metadata?.namespace;
  for (const victim of remove) {
    ctx.log.info({ instance: victim.name }, 'scaling down: removing replica');
    await ctx.event('Normal', 'ScalingDown', `removing replica ${victim.name}`);
    if (victim.hasPod) await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name: victim.name, namespace });
    const retain = cluster.spec.persistentVolumeClaimRetentionPolicy?.whenScaled === 'Retain';
    const claimName = `${victim.name}-pgdata`;
    if (retain) {
      // Released from the cluster: no owner reference, so deleting the cluster keeps it too.
      // (Removing a field another writer set is no apply; the context has no verb for it.)
      await ignoreNotFound(
        ctx.client
          .resource('v1', 'PersistentVolumeClaim')
          .patch(claimName, { metadata: { ownerReferences: null } }, { namespace, type: 'merge', signal: ctx.signal }),
      );
    } else {
      await ctx.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: claimName, namespace });
    }
  }
  return {};
}

/**
 * Recreates the Pods the scheduler left behind on claims bound since (stuck-pods.ts), and looks
 * again when one that may become stuck would be.
 *
 * @example
 * ```ts
 * await recreateStuckPods(cluster, ctx, instancePods, claims);
 * ```
 */
export async function recreateStuckPods(
  cluster: PostgresCluster,
  ctx: Context,
  instancePods: readonly Pod[],
  claims: readonly PersistentVolumeClaim[],
): Promise<StepOutcome> {
  const { stuck, recheckInMs } = podsStuckOnBoundClaims(instancePods, claims, Date.now());
  for (const { pod, why } of stuck) {
    ctx.log.warn({ pod: pod.metadata?.name }, `recreating a Pod the scheduler left behind: ${why}`);
    await ctx.event('Normal', 'RecreatingUnscheduledPod', `${why}: recreating it`);
    const name = pod.metadata?.name ?? '';
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace: cluster.metadata?.namespace });
  }
  return recheckInMs === undefined ? {} : { requeueAfterMs: recheckInMs };
}

/** What the instances are built from, besides the cluster. */
export interface InstanceSources {
  /** The major of the image the instances run (the upgrade's plan). */
  readonly imageMajor: number;
  /** The clone's source, when the cluster clones one. */
  readonly clone: ResolvedSource;
  /** Why the first instance of a clone cannot start yet. */
  readonly dataSourceProblem: string | undefined;
  /** The Secrets the cluster may use (secret-consent.ts). */
  readonly allowedSecrets: ReadonlySet<string>;
}

/**
 * Creates each planned instance's PVC and Pod when missing; shut down, deletes the instances'
 * Pods instead.
 *
 * @example
 * ```ts
 * await reconcileInstances(cluster, ctx, observed, { imageMajor, clone, dataSourceProblem, allowedSecrets });
 * ```
 */
export async function reconcileInstances(
  cluster: PostgresCluster,
  ctx: Context,
  { pods, claims, instancePods, plan }: ObservedCluster,
  { imageMajor, clone, dataSourceProblem, allowedSecrets }: InstanceSources,
): Promise<StepOutcome> {
  if (cluster.spec.shutdown) {
    for (const pod of instancePods) {
      if (!pod.metadata?.deletionTimestamp) await ctx.delete({ ...pod, apiVersion: 'v1', kind: 'Pod' });
    }
    return {};
  }
  for (const instance of plan.keep) {
    const claim = dataVolumeClaim(cluster, instance.name, instance.set, instance.setIndex);
    await createIfMissing(
      ctx,
      claims.find((c) => c.metadata?.name === claim.metadata?.name),
      claim,
    );
    const first = plan.initdb === instance.name;
    // The first instance of a clone waits for its source; the others wait to clone it anyway.
    if (first && dataSourceProblem) continue;
    const pod = withTemplateHash(
      instancePod({
        cluster,
        ...instance,
        imageMajor,
        bootstrap: first ? (clone.source ? 'restore' : 'initdb') : 'basebackup',
        ...(first && clone.source
          ? {
              restoreId: clone.source.id,
              sourceConfiguration: consentedProjections(clone.configuration ?? [], allowedSecrets),
            }
          : {}),
      }),
      cluster,
      instance,
    );
    const existing = pods.find((p) => p.metadata?.name === instance.name);
    if (existing?.metadata?.deletionTimestamp) continue; // recreated once gone
    if (!existing) ctx.log.info({ instance: instance.name, bootstrap: first }, 'creating instance');
    await createIfMissing(ctx, existing, pod);
  }
  return {};
}
