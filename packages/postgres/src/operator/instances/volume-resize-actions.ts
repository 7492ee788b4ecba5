/**
 * Carries out volume-resize-plan.ts: raises one claim's storage request per step (Kubernetes and
 * the volume's driver do the rest, online where the driver can), and reports the
 * PersistentVolumeResizing condition. A refusal by the API server (a StorageClass without
 * `allowVolumeExpansion`, say) is the condition's message, tried again later.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION, EVENT_REASON, LABEL, ROLE } from '../../contract/index.js';
import { readReport } from '../cluster-status.js';
import { setName } from '../instance-plan.js';
import type { StepOutcome } from '../step-outcome.js';
import { type ClaimView, planVolumeResize, RESIZING_CONDITION } from './volume-resize-plan.js';

type Context = ReconcileContext<PostgresCluster>;

/** While a resize runs, how often the pass looks (PVC updates wake it sooner). */
const RESIZE_POLL_MS = 5_000;
/** After the API server refused a resize, when to try again. */
const REFUSED_RETRY_MS = 30_000;

/** The plan's view of each kept instance's claim. Pure. */
export function claimViews(
  cluster: PostgresCluster,
  claims: readonly PersistentVolumeClaim[],
  pods: readonly Pod[],
  keep: ReadonlySet<string>,
): ClaimView[] {
  const sets = new Map(cluster.spec.instances.map((set, index) => [setName(cluster.spec, index), set]));
  return claims.flatMap((claim): ClaimView[] => {
    const instance = claim.metadata?.labels?.[LABEL.instance];
    const set = sets.get(claim.metadata?.labels?.[LABEL.instanceSet] ?? '');
    if (!instance || !set || !keep.has(instance) || claim.metadata?.deletionTimestamp) return [];
    const pod = pods.find((p) => p.metadata?.name === instance);
    const volume = set.dataVolumeClaimSpec;
    const limit = volume.resources.limits?.storage;
    const grownFrom = Number(claim.metadata?.annotations?.[ANNOTATION.autoGrownFrom]);
    return [
      {
        instance,
        claim: claim.metadata?.name ?? '',
        isPrimary: pod?.metadata?.labels?.[LABEL.role] === ROLE.primary,
        bound: claim.status?.phase === 'Bound',
        requested: claim.spec?.resources?.requests?.storage,
        capacity: claim.status?.capacity?.storage,
        resizeStatus: claim.status?.allocatedResourceStatuses?.storage,
        conditions: (claim.status?.conditions ?? []).map((c) => ({
          type: c.type,
          ...(c.message ? { message: c.message } : {}),
        })),
        grownFromSize: Number.isFinite(grownFrom) && grownFrom > 0 ? grownFrom : undefined,
        wanted: volume.resources.requests.storage,
        autoGrow: limit
          ? {
              limit,
              trigger: volume.autoGrow?.trigger ?? 75,
              ...(volume.autoGrow?.maxGrow ? { maxGrow: volume.autoGrow.maxGrow } : {}),
            }
          : undefined,
        volume: pod ? readReport(pod)?.dataVolume : undefined,
      },
    ];
  });
}

/**
 * @example
 * ```ts
 * step(await reconcileVolumeResize(cluster, ctx, claims, instancePods, new Set(plan.keep.map((k) => k.name))));
 * ```
 */
export async function reconcileVolumeResize(
  cluster: PostgresCluster,
  ctx: Context,
  claims: readonly PersistentVolumeClaim[],
  pods: readonly Pod[],
  keep: ReadonlySet<string>,
): Promise<StepOutcome> {
  const previous = cluster.status?.conditions?.find((c) => c.type === RESIZING_CONDITION);
  const plan = planVolumeResize(claimViews(cluster, claims, pods, keep), previous);
  const conditions = plan.condition ? [{ type: RESIZING_CONDITION, ...plan.condition }] : [];
  const step = plan.step;
  if (!step) return { conditions, ...(plan.waiting ? { requeueAfterMs: RESIZE_POLL_MS } : {}) };
  try {
    await ctx.client.resource<PersistentVolumeClaim & { metadata: object }>('v1', 'PersistentVolumeClaim').patch(
      step.claim,
      {
        metadata: {
          annotations: {
            [ANNOTATION.autoGrownFrom]: step.grownFromSize === undefined ? null : String(step.grownFromSize),
          },
        },
        spec: { resources: { requests: { storage: step.to } } },
      },
      { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
    );
  } catch (error) {
    const message = `${step.claim}: ${step.from} → ${step.to} refused: ${(error as Error).message}`;
    ctx.log.warn({ claim: step.claim }, message);
    return {
      conditions: [{ type: RESIZING_CONDITION, status: 'True', reason: 'ResizeRefused', message }],
      requeueAfterMs: REFUSED_RETRY_MS,
    };
  }
  ctx.log.info({ claim: step.claim, from: step.from, to: step.to, why: step.why }, 'growing a data volume');
  await ctx.event('Normal', EVENT_REASON.volumeResizing, `${step.claim}: ${step.from} → ${step.to} (${step.why})`);
  return { conditions, requeueAfterMs: RESIZE_POLL_MS };
}
