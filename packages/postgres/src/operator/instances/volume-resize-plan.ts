/**
 * Growing the instances' data volumes: to the size the spec asks for, or by auto-grow (PGO's rule:
 * at `autoGrow.trigger` percent full, half the current size more, at most `maxGrow`, never past
 * `resources.limits.storage`). One claim at a time, replicas before the primary, so that a driver
 * that fails to expand fails on a replica first; the next starts once Kubernetes reports the last
 * one done (capacity reached, no resize status or condition left). A claim never shrinks: the spec
 * is a floor. Pure.
 */
import { quantityValue } from '@kanri/timing';
import type { DataVolumeReport } from '../../contract/index.js';

export const RESIZING_CONDITION = 'PersistentVolumeResizing';

/** What the plan needs of one instance's claim. */
export interface ClaimView {
  readonly instance: string;
  /** The claim's name. */
  readonly claim: string;
  readonly isPrimary: boolean;
  readonly bound: boolean;
  /** `spec.resources.requests.storage`. */
  readonly requested: string | undefined;
  /** `status.capacity.storage`. */
  readonly capacity: string | undefined;
  /** `status.allocatedResourceStatuses.storage` (ControllerResizeInProgress, NodeResizePending, …). */
  readonly resizeStatus: string | undefined;
  /** The claim's conditions (Resizing, FileSystemResizePending, ControllerResizeError, NodeResizeError). */
  readonly conditions: readonly { readonly type: string; readonly message?: string }[];
  /** The filesystem size when auto-grow last raised the claim (its annotation). */
  readonly grownFromSize: number | undefined;
  /** The set's `dataVolumeClaimSpec.resources.requests.storage`. */
  readonly wanted: string;
  /** Auto-grow of the set, when `resources.limits.storage` turns it on. */
  readonly autoGrow: { readonly limit: string; readonly trigger: number; readonly maxGrow?: string } | undefined;
  /** The instance's report of its volume (`df` in the Pod). */
  readonly volume: DataVolumeReport | undefined;
}

export interface ResizeStep {
  readonly instance: string;
  readonly claim: string;
  readonly from: string;
  /** The new request, in Mi (or the spec's own text when the spec asks for it). */
  readonly to: string;
  /** `spec` (the set's request rose) or `autoGrow` (with the volume's fullness). */
  readonly why: string;
  /** Auto-grow: the filesystem size it grew from, kept on the claim. */
  readonly grownFromSize?: number;
}

export interface ResizePlan {
  readonly step?: ResizeStep;
  readonly condition?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
  /** A resize is under way: look again soon. */
  readonly waiting: boolean;
}

const MI = 2 ** 20;
const FAILED_STATUSES = new Set(['ControllerResizeInfeasible', 'NodeResizeInfeasible']);
const FAILED_CONDITIONS = new Set(['ControllerResizeError', 'NodeResizeError']);
const mi = (bytes: number) => `${Math.ceil(bytes / MI)}Mi`;

/** Where a claim's own resize stands: undefined when none runs. */
function resizeState(view: ClaimView): { failed: boolean; message: string } | undefined {
  const failedCondition = view.conditions.find((c) => FAILED_CONDITIONS.has(c.type));
  if (failedCondition || (view.resizeStatus && FAILED_STATUSES.has(view.resizeStatus)))
    return {
      failed: true,
      message: `${view.claim}: ${failedCondition?.message ?? view.resizeStatus}`,
    };
  const requested = quantityValue(view.requested ?? '') ?? 0;
  const capacity = quantityValue(view.capacity ?? '') ?? 0;
  const pending = view.conditions.find((c) => c.type === 'FileSystemResizePending' || c.type === 'Resizing');
  if (capacity < requested || view.resizeStatus || pending) {
    const stage =
      pending?.type === 'FileSystemResizePending'
        ? 'waiting for the filesystem to grow (FileSystemResizePending: this driver grows it only when the Pod restarts)'
        : (view.resizeStatus ?? pending?.type ?? 'waiting for the provisioner');
    return { failed: false, message: `${view.claim}: ${view.capacity ?? '?'} → ${view.requested} (${stage})` };
  }
  return undefined;
}

/** The request auto-grow asks for now, or undefined. */
function autoGrowTarget(view: ClaimView, requested: number): { bytes: number; why: string } | undefined {
  const grow = view.autoGrow;
  const volume = view.volume;
  if (!grow || !volume || volume.sizeBytes <= 0) return undefined;
  // The last step has not reached the filesystem (or this provisioner does not grow it): growing
  // again would ask for more on the strength of the same full disk.
  if (view.grownFromSize !== undefined && view.grownFromSize === volume.sizeBytes) return undefined;
  const usedPercent = ((volume.sizeBytes - volume.availableBytes) / volume.sizeBytes) * 100;
  if (usedPercent < grow.trigger) return undefined;
  const limit = quantityValue(grow.limit) ?? 0;
  if (requested >= limit) return undefined;
  const maxGrow = grow.maxGrow === undefined ? Number.POSITIVE_INFINITY : (quantityValue(grow.maxGrow) ?? 0);
  const bytes = Math.min(limit, requested + Math.min(requested / 2, maxGrow));
  if (Math.ceil(bytes / MI) * MI <= requested) return undefined;
  return {
    bytes: Math.min(limit, Math.ceil(bytes / MI) * MI),
    why: `autoGrow: ${usedPercent.toFixed(0)}% of ${mi(volume.sizeBytes)} used (trigger ${grow.trigger}%, limit ${grow.limit})`,
  };
}

/** What one claim should grow to now, if anything: the spec's size first, else auto-grow's. */
function nextStep(view: ClaimView): ResizeStep | undefined {
  const requested = quantityValue(view.requested ?? '') ?? 0;
  const from = view.requested ?? '';
  if ((quantityValue(view.wanted) ?? 0) > requested)
    return { instance: view.instance, claim: view.claim, from, to: view.wanted, why: 'spec' };
  const target = autoGrowTarget(view, requested);
  if (!target) return undefined;
  return {
    instance: view.instance,
    claim: view.claim,
    from,
    to: mi(target.bytes),
    why: target.why,
    ...(view.volume ? { grownFromSize: view.volume.sizeBytes } : {}),
  };
}

/**
 * The next step for a cluster's data volumes, and the PersistentVolumeResizing condition.
 *
 * @example
 * ```ts
 * const plan = planVolumeResize(views, previousCondition);
 * if (plan.step) await patchClaim(plan.step.claim, plan.step.to);
 * ```
 */
export function planVolumeResize(
  views: readonly ClaimView[],
  previous: { readonly status: string } | undefined,
): ResizePlan {
  const bound = views.filter((v) => v.bound && v.requested !== undefined);
  const states = bound.map((view) => resizeState(view)).filter((s) => s !== undefined);
  const failed = states.find((s) => s.failed);
  if (failed)
    return {
      condition: { status: 'True', reason: 'ResizeFailed', message: `a data volume cannot grow: ${failed.message}` },
      waiting: true,
    };
  if (states.length > 0)
    return {
      condition: { status: 'True', reason: 'Resizing', message: states.map((s) => s.message).join('; ') },
      waiting: true,
    };
  const ordered = [...bound].sort(
    (a, b) => Number(a.isPrimary) - Number(b.isPrimary) || a.instance.localeCompare(b.instance),
  );
  for (const view of ordered) {
    const step = nextStep(view);
    if (step)
      return {
        step,
        condition: {
          status: 'True',
          reason: 'Resizing',
          message: `${step.claim}: ${step.from} → ${step.to} (${step.why})`,
        },
        waiting: true,
      };
  }
  if (previous?.status !== 'True') return { waiting: false };
  return {
    condition: { status: 'False', reason: 'Resized', message: 'every data volume has the size asked of it' },
    waiting: false,
  };
}
