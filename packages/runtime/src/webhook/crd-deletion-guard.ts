/**
 * The CRD deletion guard: deleting a Kanri CRD is refused while custom resources of it exist,
 * unless the CRD carries `kanri.dev/allow-delete: "true"`.
 *
 * Why a webhook and not a ValidatingAdmissionPolicy: deleting a CRD deletes every custom resource
 * of it, so the question is "do instances exist?", which is about *other* objects. A policy's CEL
 * sees only the request (object, oldObject, params, namespace object); it has no list, so it cannot
 * know. A validating webhook can list the instances at the moment of deletion. The webhook is
 * registered for DELETE of `customresourcedefinitions` only, and only for CRDs labelled
 * `app.kubernetes.io/managed-by: kanri` (an `objectSelector`, which for DELETE matches the old
 * object's labels), so no other request in the cluster waits on it (see `crdDeletionGuardWebhook`).
 *
 * Guarantees: it fails closed. If the instances cannot be listed (RBAC, timeout, API error) the
 * deletion is refused with a message saying why and how to proceed; with `failurePolicy: Fail`, a
 * guard that is down refuses too. Caveats: whoever may edit the CRD can add the annotation or remove
 * the label, and whoever may delete the ValidatingWebhookConfiguration can remove the guard; it stops
 * accidents (a `kubectl delete -f` of an install manifest, a chart uninstall that deletes CRDs), not
 * a determined administrator.
 */
import type { KubeClient, KubeList } from '@kanri/client';
import type { CustomResourceDefinition } from 'kubernetes-types/apiextensions/v1.js';
import { createDeadline } from '../deadline.js';
import type { AdmissionDecision, AdmissionHandler, AdmissionRequest } from './admission-review.js';

/** Set to `"true"` on a CRD to let it be deleted together with its custom resources. */
export const ALLOW_DELETE_ANNOTATION = 'kanri.dev/allow-delete';
/** The label every Kanri CRD carries (set by `defineResource`); the webhook's `objectSelector` matches it. */
export const KANRI_MANAGED_BY_LABEL = { 'app.kubernetes.io/managed-by': 'kanri' } as const;
/** Where the admission server serves the guard. */
export const CRD_DELETION_GUARD_PATH = '/validate-crd-deletion';

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** What a `limit=1` list of a CRD's custom resources showed. */
export type InstanceSample =
  | {
      /** Instances seen: the page plus `remainingItemCount` when the server counted them. */
      readonly count: number;
      /** True when the server did not count and there are more than `count`. */
      readonly more: boolean;
      /** `namespace/name` (or `name`) of one instance. */
      readonly example?: string;
    }
  | { readonly error: string };

export interface CrdDeletionGuardOptions {
  /** Guard only these CRDs (by name); others are allowed (another operator's guard covers them). Default: every CRD sent. */
  readonly crdNames?: readonly string[];
  /** Budget for listing, kept under the webhook's `timeoutSeconds` (5 s) so a slow list is refused with a clear message. Default 4 s. */
  readonly timeoutMs?: number;
}

/**
 * True when the CRD carries `kanri.dev/allow-delete: "true"`. Pure.
 *
 * @example
 * ```ts
 * isDeletionAllowed({ metadata: { annotations: { 'kanri.dev/allow-delete': 'true' } } }); // true
 * ```
 */
export function isDeletionAllowed(crd: Pick<CustomResourceDefinition, 'metadata'>): boolean {
  return crd.metadata?.annotations?.[ALLOW_DELETE_ANNOTATION] === 'true';
}

/**
 * The versions to list instances through: every version of a CRD shows the same objects, so one
 * answer suffices; the storage version comes first (no conversion needed), the other served ones
 * are fallbacks if it fails. Pure.
 */
export function versionsToList(crd: Pick<CustomResourceDefinition, 'spec'>): string[] {
  const served = (crd.spec?.versions ?? []).filter((v) => v.served);
  return [...served.filter((v) => v.storage), ...served.filter((v) => !v.storage)].map((v) => v.name);
}

/** What one `limit=1` list page says about the instances. Pure. */
export function sampleInstances(list: Pick<KubeList, 'items' | 'metadata'>): InstanceSample {
  // An empty PartialObjectMetadataList comes with `items: null`.
  const items = list.items ?? [];
  const first = items[0]?.metadata;
  const remaining = list.metadata?.remainingItemCount;
  return {
    count: items.length + (remaining ?? 0),
    more: remaining === undefined && Boolean(list.metadata?.continue),
    ...(first?.name ? { example: first.namespace ? `${first.namespace}/${first.name}` : first.name } : {}),
  };
}

/**
 * The guard's decision for deleting `crd`, given what listing its instances showed. Pure.
 *
 * @example
 * ```ts
 * decideCrdDeletion(crd, { count: 3, more: false, example: 'default/w1' });
 * // { allowed: false, code: 403, message: 'customresourcedefinition "widgets.example.com" still has 3 custom resources (e.g. default/w1); …' }
 * ```
 */
export function decideCrdDeletion(
  crd: Pick<CustomResourceDefinition, 'metadata'>,
  instances: InstanceSample,
): AdmissionDecision {
  const name = crd.metadata?.name ?? '';
  const annotate = `kubectl annotate crd ${name} ${ALLOW_DELETE_ANNOTATION}=true`;
  if (isDeletionAllowed(crd)) {
    return {
      allowed: true,
      warnings: [`${ALLOW_DELETE_ANNOTATION}=true: every custom resource of ${name} is deleted with it`],
    };
  }
  if ('error' in instances) {
    return {
      allowed: false,
      code: 500,
      message:
        `cannot tell whether customresourcedefinition "${name}" still has custom resources (${instances.error}), ` +
        `so it is not deleted; try again, or delete it together with all its custom resources after: ${annotate}`,
    };
  }
  if (instances.count === 0) return { allowed: true };
  const count = instances.more ? `${instances.count}+ custom resources` : plural(instances.count);
  const example = instances.example ? ` (e.g. ${instances.example})` : '';
  return {
    allowed: false,
    code: 403,
    message:
      `customresourcedefinition "${name}" still has ${count}${example}, which deleting it would delete too; ` +
      `delete them first, or annotate the CRD with ${ALLOW_DELETE_ANNOTATION}=true to delete them with it: ${annotate}`,
  };
}

function plural(count: number): string {
  return count === 1 ? '1 custom resource' : `${count} custom resources`;
}

/** Lists at most one instance of the CRD across all namespaces; tries the next served version if one fails. */
async function listInstances(
  client: KubeClient,
  crd: CustomResourceDefinition,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<InstanceSample> {
  const versions = versionsToList(crd);
  const { group, names } = crd.spec;
  if (versions.length === 0) return { error: 'it serves no version to list them through' };
  const timer = createDeadline(timeoutMs, signal);
  const deadline = timer.signal;
  const errors: string[] = [];
  try {
    for (const version of versions) {
      try {
        const list = await client.request<KubeList>({
          method: 'GET',
          path: `/apis/${group}/${version}/${names.plural}`,
          query: { limit: 1 },
          accept: METADATA_LIST,
          signal: deadline,
          timeoutMs,
          context: { verb: 'list', resource: `${names.plural}.${group}` },
        });
        return sampleInstances(list);
      } catch (error) {
        errors.push(
          deadline.aborted
            ? `listing ${version} timed out after ${timeoutMs} ms`
            : error instanceof Error
              ? error.message
              : String(error),
        );
        if (deadline.aborted) break;
      }
    }
  } finally {
    timer.dispose();
  }
  return { error: errors.join('; ') };
}

/**
 * The admission handler of the guard. Serve it at `CRD_DELETION_GUARD_PATH` and register it with
 * `crdDeletionGuardWebhook`. The client needs `list` on every guarded custom resource (see
 * `crdDeletionGuardRules`).
 *
 * @example
 * ```ts
 * const server = await startAdmissionServer({
 *   certificate, handlers: { [CRD_DELETION_GUARD_PATH]: crdDeletionGuard(client) },
 * });
 * ```
 */
export function crdDeletionGuard(client: KubeClient, options: CrdDeletionGuardOptions = {}): AdmissionHandler {
  const timeoutMs = options.timeoutMs ?? 4_000;
  const guarded = options.crdNames ? new Set(options.crdNames) : undefined;
  return async (request: AdmissionRequest, signal: AbortSignal): Promise<AdmissionDecision> => {
    if (
      request.operation !== 'DELETE' ||
      request.resource?.group !== 'apiextensions.k8s.io' ||
      request.resource.resource !== 'customresourcedefinitions'
    ) {
      return { allowed: true };
    }
    const crd = request.oldObject as CustomResourceDefinition | null | undefined;
    // The API server sends the object being deleted as oldObject; without it there is nothing to check against.
    if (!crd?.spec) {
      return { allowed: false, code: 400, message: `the DELETE of "${request.name}" came without the CRD (oldObject)` };
    }
    if (guarded && !guarded.has(crd.metadata?.name ?? '')) return { allowed: true };
    if (isDeletionAllowed(crd)) return decideCrdDeletion(crd, { count: 0, more: false });
    return decideCrdDeletion(crd, await listInstances(client, crd, signal, timeoutMs));
  };
}
