/**
 * The reconcile context of one PostgresCluster, with every write of a child by name first checked
 * against what already holds that name (ownership.ts): an object that is not the cluster's is
 * neither applied over nor labelled (server-side apply would take it over, or, with another
 * controller, fail on every reconcile), and, once one is met, the cluster creates no Pod, since
 * its Pods mount the cluster's Secrets and volumes by name. What was refused is shown as the
 * `ForeignObjects` condition and a Warning Event naming each object and its owner.
 *
 * The cluster's PostgresBackups are not guarded: a user's own (not the cluster's) are adopted by
 * `spec.cluster`, by design.
 */
import { ignoreNotFound } from '@kanri/client';
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { GROUP, LABEL } from '../contract/index.js';
import { foreignOwner } from './ownership.js';
import { reportProblem } from './problem-condition.js';
import type { StepOutcome } from './step-outcome.js';

type Context = ReconcileContext<PostgresCluster>;

/** An object the cluster needs by name that someone else holds. */
export interface ForeignObject {
  readonly kind: string;
  readonly name: string;
  /** foreignOwner's words. */
  readonly owner: string;
}

export const FOREIGN_OBJECTS_CONDITION = 'ForeignObjects';

const guarded = (object: KubeObject) => !(object.apiVersion ?? '').startsWith(`${GROUP}/`);

/**
 * `ctx`, whose `apply`, `create` and `applyMetadata` refuse objects held by another owner, and the
 * list of those met so far.
 *
 * @example
 * ```ts
 * const { ctx, foreign } = guardOwnership(given, cluster);
 * await ctx.apply(secret); // not applied if another cluster's Secret has its name; foreign lists it
 * ```
 */
export function guardOwnership(given: Context, cluster: PostgresCluster): { ctx: Context; foreign: ForeignObject[] } {
  const foreign: ForeignObject[] = [];
  const namespace = cluster.metadata?.namespace;
  /** What holds the name now: the cache, else the API server (a Secret without Kanri's label is never cached). */
  const holder = async (object: KubeObject): Promise<KubeObject | undefined> => {
    const { apiVersion = '', kind = '', metadata } = object;
    const name = metadata?.name ?? '';
    const ns = metadata?.namespace ?? namespace;
    let cached: KubeObject | undefined;
    try {
      cached = given.get(apiVersion, kind, name, ns);
    } catch {
      cached = undefined; // a kind this controller does not cache
    }
    return (
      cached ??
      ignoreNotFound(given.client.resource(apiVersion, kind).get(name, { namespace: ns, signal: given.signal }))
    );
  };
  /** Whether the write may go ahead; records the holder when it may not. */
  const mine = async (object: KubeObject): Promise<boolean> => {
    if (!guarded(object)) return true;
    const existing = await holder(object);
    const owner = existing ? foreignOwner(existing, cluster) : undefined;
    if (owner === undefined) return true;
    const entry = { kind: object.kind ?? '', name: object.metadata?.name ?? '', owner };
    if (!foreign.some((f) => f.kind === entry.kind && f.name === entry.name)) {
      foreign.push(entry);
      given.log.warn(entry, 'not adopting an object that is not this cluster’s');
    }
    return false;
  };
  const ctx: Context = {
    ...given,
    apply: async <C extends KubeObject>(child: C) => ((await mine(child)) ? given.apply(child) : child),
    create: async <C extends KubeObject>(child: C) => {
      if (child.kind === 'Pod' && foreign.length > 0) {
        given.log.warn({ pod: child.metadata?.name }, 'not creating a Pod while the cluster meets objects not its own');
        return undefined;
      }
      return (await mine(child)) ? given.create(child) : undefined;
    },
    applyMetadata: async (object, metadata) => {
      if (await mine(object)) await given.applyMetadata(object, metadata);
    },
  };
  return { ctx, foreign };
}

/**
 * The `ForeignObjects` condition (or its removal), with a Warning Event when what it says changes.
 *
 * @example
 * ```ts
 * outcomes.push(await reportForeignObjects(cluster, ctx, foreign));
 * ```
 */
export async function reportForeignObjects(
  cluster: PostgresCluster,
  ctx: Context,
  foreign: readonly ForeignObject[],
): Promise<StepOutcome> {
  const held = foreign.map((f) => `${f.kind} ${f.name} is held by ${f.owner}`).join('; ');
  const message = `${held}. The cluster neither uses nor changes them, and creates no Pod until each is renamed or deleted (or, to hand one to this cluster, has no controller and the label ${LABEL.cluster}=${cluster.metadata?.name})`;
  const change = await reportProblem(
    cluster,
    ctx,
    FOREIGN_OBJECTS_CONDITION,
    foreign.length > 0 ? { reason: 'NameTakenByAnotherOwner', message, eventReason: 'ForeignObject' } : undefined,
  );
  return { conditions: [change] };
}
