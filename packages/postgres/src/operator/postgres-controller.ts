/**
 * The PostgresCluster controller: turns the spec into Secrets, configuration, RBAC for the
 * instances, Services, a PodDisruptionBudget, and one Pod and PVC per instance (and, with a
 * volume repo, the repo host: repo-host-actions.ts), then aggregates the agents' reports into
 * status. Every step is idempotent; a restart mid-way converges.
 *
 * Pods and PVCs are mostly immutable, so they are created once and afterwards only their labels
 * are re-applied (`ctx.applyMetadata`, under a separate field manager, so the operator never
 * claims, and later drops, fields of a spec it cannot change anyway).
 */
import { ignoreNotFound } from '@kanri/client';
import { controller, generationChanged, type KubeObject, type ReconcileContext, setCondition } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster, PostgresClusterStatus } from '../api/postgres-cluster.js';
import { ANNOTATION, API_VERSION, BACKUP_KIND, KIND, LABEL, names, ROLE } from '../contract/index.js';
import { admissionCondition, admissionPolicyProblem, refuseWithoutPolicies } from './admission/policy-gate.js';
import { reconcileBackups } from './backups/backup-actions.js';
import { reconcileCloneSourcePolicy, resolveClone } from './backups/clone-actions.js';
import { recordRepoPaths, resolveRepoPaths } from './backups/repo-grants.js';
import { reconcileRepoHost } from './backups/repo-host-actions.js';
import { reconcileRestore } from './backups/restore-actions.js';
import { hasSharedPgbackrestTls } from './backups/tls-certificates.js';
import { dataVolumeClaim } from './builders/data-volume-claim.js';
import { disruptionBudget } from './builders/disruption-budget.js';
import { instancePod } from './builders/instance-pod.js';
import { instanceRbac } from './builders/instance-rbac.js';
import { networkPolicy } from './builders/network-policy.js';
import { postgresConfig } from './builders/postgres-config.js';
import { secrets } from './builders/secrets.js';
import { services } from './builders/services.js';
import { cloneSourceWakeups } from './clone-wakeups.js';
import { clusterStatus, isInitialised, readReport } from './cluster-status.js';
import { createIfMissing, isMissing } from './create-if-missing.js';
import { readCredentials } from './credentials.js';
import { type ObservedInstance, planInstances } from './instance-plan.js';
import { guardOwnership, reportForeignObjects } from './ownership-guard.js';
import { instancePodPredicate } from './pod-predicate.js';
import { primaryUsersReport, userSecretsToDelete } from './removed-users.js';
import { withTemplateHash } from './rollout/pod-template-hash.js';
import { reconcileRestarts, reconcileRollout } from './rollout/rollout-actions.js';
import { consentedProjections, dataSourceRefusal } from './secret-consent.js';
import { reconcileSecretConsent, reportSecretConsent } from './secret-consent-actions.js';
import { podsStuckOnBoundClaims } from './stuck-pods.js';
import { reconcilePostgresTls } from './tls/postgres-tls.js';
import { reconcileMajorUpgrade } from './upgrade/major-upgrade-actions.js';
import { upgradeHoldsRollout } from './upgrade/major-upgrade-plan.js';

/**
 * The primary each cluster (by uid) was last announced with. The reconcile after a status write
 * can still read the cluster from before it (the cache lags under load), and would announce the
 * same change twice; a restarted operator announces at most once more.
 */
const announced = new Map<string, string>();

/** `<pod name>` or `*` (the best replica): asks the agents for a switchover. */
const SWITCHOVER_ANNOTATION = ANNOTATION.switchover;

function observe(pods: Pod[], claims: PersistentVolumeClaim[]): ObservedInstance[] {
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

/** A clone, and its Pods, wake its source too: the source grants them read access (clone-actions.ts). */
const cloneWakeups = cloneSourceWakeups();

export const postgresController = controller<PostgresCluster>(API_VERSION, KIND)
  // Agents rewrite their Pod's report every ~10 s; only changes to what the reconcile reads wake it.
  .owns('v1', 'Pod', instancePodPredicate())
  .watches('v1', 'Pod', cloneWakeups.pods, instancePodPredicate())
  .watches(API_VERSION, KIND, cloneWakeups.clusters, generationChanged())
  .owns('v1', 'PersistentVolumeClaim')
  .owns('v1', 'Service')
  .owns('v1', 'Secret')
  .owns('v1', 'ConfigMap')
  .owns('v1', 'ServiceAccount')
  .owns('rbac.authorization.k8s.io/v1', 'Role')
  .owns('rbac.authorization.k8s.io/v1', 'RoleBinding')
  .owns('policy/v1', 'PodDisruptionBudget')
  .owns('networking.k8s.io/v1', 'NetworkPolicy')
  // A backup's phase changes status.pgbackrest (and a finished one lets the next run).
  .owns(API_VERSION, BACKUP_KIND)
  .reconcile(async (declared, given) => {
    if (declared.spec.paused) {
      given.log.info('paused: no changes made');
      return undefined;
    }
    // Without its admission policies in force, nothing of a cluster is made (admission/policy-gate.ts).
    const policyProblem = await admissionPolicyProblem(given.client, given.signal);
    if (policyProblem) return refuseWithoutPolicies(declared, given, policyProblem);
    // Nothing another owner holds is used or written (ownership-guard.ts), and the Pods are built
    // from the spec with only the Secrets that let this cluster use them (secret-consent.ts).
    const { ctx, foreign } = guardOwnership(given, declared);
    const consent = await reconcileSecretConsent(declared, ctx);
    const cluster = consent.cluster;
    const namespace = cluster.metadata?.namespace;
    const clusterName = cluster.metadata?.name ?? '';
    for (const secret of secrets(cluster, await readCredentials(cluster, ctx))) await ctx.apply(secret);
    const pods = ctx
      .list<Pod>('v1', 'Pod', { namespace, ownedBy: cluster })
      .filter((p) => p.metadata?.labels?.[LABEL.cluster] === clusterName);
    const claims = ctx
      .list<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', { namespace, ownedBy: cluster })
      .filter((c) => c.metadata?.labels?.[LABEL.cluster] === clusterName);
    // The repo host is the cluster's too, but no instance: a restore restores from it, never stops it.
    const instancePods = pods.filter((p) => p.metadata?.labels?.[LABEL.instance]);
    const observed = observe(pods, claims);
    const initialised = isInitialised(cluster, instancePods);
    const plan = planInstances(clusterName, cluster.spec, observed, initialised);
    const restore = await reconcileRestore(cluster, ctx, instancePods, plan.keep);
    const upgrade = await reconcileMajorUpgrade(cluster, ctx, instancePods, claims, plan.keep);

    const clone = cluster.spec.dataSource ? await resolveClone(cluster, ctx) : {};
    // A clone restores with the Secrets its data source names: not before each lets it (finding 11).
    const dataSourceProblem = clone.problem ?? dataSourceRefusal(consent.refused);
    // Where each repo keeps its stanza, recorded in status for the agents (issue 37, finding 12).
    const repoPaths = resolveRepoPaths(cluster, ctx);
    const configMissing = initialised && (await isMissing(ctx, 'ConfigMap', names.config(clusterName), namespace));
    await ctx.apply(postgresConfig(cluster, restore.source ?? clone.source));
    // The older scheme's shared pgBackRest Secret stays readable while it exists (its agents read it).
    const sharedPgbackrestTls = hasSharedPgbackrestTls(cluster, ctx);
    for (const object of instanceRbac(cluster, { sharedPgbackrestTls })) await ctx.apply(object as KubeObject);
    for (const service of services(cluster)) await ctx.apply(service);
    await ctx.apply(disruptionBudget(cluster));
    await ctx.apply(networkPolicy(cluster));
    await reconcileCloneSourcePolicy(cluster, ctx, clone.source, initialised, instancePods);
    // Before the instances: an agent that finds the Secret at its start boots with TLS.
    const tls = await reconcilePostgresTls(cluster, ctx, instancePods);
    if (tls.problem) {
      ctx.log.warn({ problem: tls.problem }, 'cannot use a TLS Secret of the spec; keeping what is served');
      await ctx.event('Warning', 'TLSSecretInvalid', tls.problem);
    }
    // On a new cluster nothing was there yet: only what an initialised one lost is news.
    const recreated = initialised
      ? [...(configMissing ? [names.config(clusterName)] : []), ...(tls.missing ?? [])]
      : [];
    for (const name of recreated) {
      ctx.log.warn({ object: name }, 'the cluster lost an object its instances serve with; created it anew');
      await ctx.event(
        'Warning',
        'SecurityMaterialRecreated',
        `${name} did not exist: created it anew (the instances keep what they serve until they have it)`,
      );
    }
    // After the RBAC: a Pod naming a ServiceAccount that does not exist yet is refused.
    await reconcileRepoHost(cluster, ctx, pods, claims);
    if (!initialised && dataSourceProblem) {
      ctx.log.warn({ problem: dataSourceProblem }, 'cannot clone yet');
      await ctx.event('Warning', 'DataSourceNotReady', dataSourceProblem);
    }

    for (const victim of plan.remove) {
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
            .patch(
              claimName,
              { metadata: { ownerReferences: null } },
              { namespace, type: 'merge', signal: ctx.signal },
            ),
        );
      } else {
        await ctx.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: claimName, namespace });
      }
    }

    const unscheduled = podsStuckOnBoundClaims(instancePods, claims, Date.now());
    for (const { pod, why } of unscheduled.stuck) {
      ctx.log.warn({ pod: pod.metadata?.name }, `recreating a Pod the scheduler left behind: ${why}`);
      await ctx.event('Normal', 'RecreatingUnscheduledPod', `${why}: recreating it`);
      await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', namespace });
    }

    if (restore.active || upgrade.active) {
      // An in-place restore or a major upgrade owns the instances until it is done.
    } else if (!cluster.spec.shutdown) {
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
            imageMajor: upgrade.imageMajor,
            bootstrap: first ? (clone.source ? 'restore' : 'initdb') : 'basebackup',
            ...(first && clone.source
              ? {
                  restoreId: clone.source.id,
                  sourceConfiguration: consentedProjections(clone.configuration ?? [], consent.allowed),
                }
              : {}),
          }),
          cluster,
          instance,
        );
        const existing = pods.find((p) => p.metadata?.name === instance.name);
        if (existing?.metadata?.deletionTimestamp) continue; // recreated once gone
        if (!existing)
          ctx.log.info({ instance: instance.name, bootstrap: plan.initdb === instance.name }, 'creating instance');
        await createIfMissing(ctx, existing, pod);
      }
    } else {
      for (const pod of instancePods) {
        if (!pod.metadata?.deletionTimestamp) await ctx.delete({ ...pod, apiVersion: 'v1', kind: 'Pod' });
      }
    }

    const desired = cluster.spec.shutdown ? 0 : plan.keep.length;
    const status = clusterStatus({
      cluster,
      pods: pods.filter((p) => plan.keep.some((k) => k.name === p.metadata?.name)),
      desired,
      converging: plan.remove.length > 0 || plan.keep.some((k) => !pods.some((p) => p.metadata?.name === k.name)),
      recreated,
    });
    const ownedSecrets = ctx.list<Secret>('v1', 'Secret', { namespace, ownedBy: cluster });
    for (const name of userSecretsToDelete(cluster, ownedSecrets, primaryUsersReport(instancePods, status.primary)))
      await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name, namespace });
    const switchover = await trackSwitchover(cluster, status.primary, ctx);
    if (switchover) status.switchover = switchover;
    if (upgrade.status ?? cluster.status?.majorUpgrade)
      status.majorUpgrade = upgrade.status ?? cluster.status?.majorUpgrade;
    if (upgrade.systemIdentifier) status.systemIdentifier = upgrade.systemIdentifier;
    // Until the upgrade's downtime is over, the instances' Pods are the upgrade's, not the rollout's.
    // A refused Secret holds the rollout: replacing running Pods would take away what they mount.
    if (!restore.active && !upgradeHoldsRollout(status.majorUpgrade?.phase) && consent.refused.length === 0)
      await rollout(cluster, ctx, status, instancePods, plan.keep);
    // Mid-handover no instance serves as primary, and a status written then has none: compare
    // with the last one ever seen, or a switchover or failover would pass unrecorded.
    const previousPrimary = cluster.status?.lastPrimary ?? cluster.status?.primary;
    const lastPrimary = status.primary ?? previousPrimary;
    if (lastPrimary) status.lastPrimary = lastPrimary;
    const uid = cluster.metadata?.uid ?? '';
    if (
      previousPrimary &&
      status.primary &&
      previousPrimary !== status.primary &&
      announced.get(uid) !== status.primary
    ) {
      announced.set(uid, status.primary);
      await ctx.event('Normal', 'PrimaryChanged', `primary is now ${status.primary} (was ${previousPrimary})`);
    }
    status.conditions = setCondition(
      status.conditions ?? [],
      admissionCondition(undefined, cluster.metadata?.generation),
    );
    const backupsRequeueMs = await reconcileBackups(cluster, ctx, status, pods);
    if (restore.status) status.pgbackrest = { ...status.pgbackrest, restore: restore.status };
    recordRepoPaths(cluster, status, repoPaths, !initialised && clone.grantMissing ? clone.problem : undefined);
    await reportForeignObjects(cluster, ctx, status, foreign);
    await reportSecretConsent(cluster, ctx, status, consent.refused);
    const wasReady = cluster.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const isReady = status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    await ctx.setStatus(status);
    if (isReady && !wasReady)
      await ctx.event('Normal', 'Ready', `${desired} instances ready, primary ${status.primary}`);
    // Reports that change what the status shows arrive as Pod updates, which wake this controller;
    // the requeue only ages reports that stopped coming.
    // A restore in progress moves on as Pods go and reports arrive; look again soon regardless.
    const requeueMs = (restore.active && !restore.status?.finished) || upgrade.active ? 2_000 : 30_000;
    return {
      requeueAfter: Math.min(
        requeueMs,
        backupsRequeueMs ?? requeueMs,
        unscheduled.recheckInMs ?? requeueMs,
        // A moment after the renewal is due, so the certificate is inside its window by then.
        tls.renewInMs === undefined ? requeueMs : tls.renewInMs + 1_000,
      ),
    };
  });

/**
 * Switchovers are carried out by the agents (the primary hands its Lease to the target); the
 * operator remembers which primary a request started from, and clears the annotation once the
 * primary has changed, so each request is served once.
 */
async function trackSwitchover(
  cluster: PostgresCluster,
  primary: string | undefined,
  ctx: ReconcileContext<PostgresCluster>,
): Promise<{ request: string; from: string } | undefined> {
  const request = cluster.metadata?.annotations?.[SWITCHOVER_ANNOTATION];
  if (!request) return undefined;
  const known = cluster.status?.switchover;
  if (!known || known.request !== request) {
    if (!primary) return undefined; // starts once there is a primary to switch from
    const target = request === '*' ? 'the best replica' : request;
    if (request !== '*' && !(cluster.status?.instances ?? []).some((i) => i.name === request && i.role === 'replica')) {
      await ctx.event(
        'Warning',
        'SwitchoverTargetInvalid',
        `switchover target ${request} is not a replica of this cluster`,
      );
    } else {
      await ctx.event('Normal', 'SwitchoverRequested', `switchover from ${primary} to ${target} requested`);
    }
    return { request, from: primary };
  }
  if (primary && primary !== known.from) {
    await ctx.event('Normal', 'SwitchoverCompleted', `switchover done: ${known.from} → ${primary}`);
    await ctx.resource.patch(
      cluster.metadata?.name ?? '',
      { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: null } } },
      { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
    );
    return undefined;
  }
  return known;
}

/** The rolling update's next step, shown in status.rollout and the RolloutHalted condition. */
async function rollout(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  status: PostgresClusterStatus,
  pods: readonly Pod[],
  keep: Parameters<typeof reconcileRollout>[3],
): Promise<void> {
  const rolling = await reconcileRollout(cluster, ctx, pods, keep, status.primary);
  if (!rolling) return;
  const step = (rolling.phase === 'Idle' && (await reconcileRestarts(cluster, ctx, pods, keep))) || rolling;
  const { phase, current, updated, desired, message, reason } = step;
  status.rollout = { phase, ...(current ? { current } : {}), updated, desired, message };
  const halted = phase === 'Halted';
  if (halted && cluster.status?.rollout?.phase !== 'Halted') await ctx.event('Warning', 'RolloutHalted', message);
  status.conditions = setCondition(status.conditions ?? [], {
    type: 'RolloutHalted',
    status: halted ? 'True' : 'False',
    reason: halted ? (reason ?? 'Halted') : 'AsExpected',
    message: halted ? message : `${updated}/${desired} instances up to date`,
    observedGeneration: cluster.metadata?.generation,
  });
}
