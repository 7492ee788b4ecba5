/**
 * What installs the CRD deletion guard: its ValidatingWebhookConfiguration and the RBAC rules the
 * operator needs to run it. Pure builders, for the manager (which applies or patches the
 * configuration) and for packaging (which writes manifests and charts).
 */
import type { ValidatingWebhook } from 'kubernetes-types/admissionregistration/v1.js';
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';
import { caSecretName } from '../pki/ca-rotation.js';
import { CRD_DELETION_GUARD_PATH, KANRI_MANAGED_BY_LABEL } from './crd-deletion-guard.js';

/** The webhook's name inside its configuration (a configuration may hold several). */
export const CRD_DELETION_GUARD_WEBHOOK = 'crd-deletion-guard.kanri.dev';
/** The webhook answers within this; the guard's own list budget (4 s) is kept under it. */
export const CRD_DELETION_GUARD_TIMEOUT_SECONDS = 5;

/** A rule of a webhook (kubernetes-types 1.30 lacks `resources` and `scope` on it). */
export interface WebhookRule {
  apiGroups: string[];
  apiVersions: string[];
  operations: string[];
  resources: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

/** admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration, as the builder returns it. */
export interface ValidatingWebhookConfigurationObject {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingWebhookConfiguration';
  metadata: ObjectMeta & { name: string };
  webhooks: (Omit<ValidatingWebhook, 'rules'> & { rules: WebhookRule[] })[];
}

export interface CrdDeletionGuardWebhookOptions {
  /** Name of the ValidatingWebhookConfiguration, e.g. `<operator>-crd-deletion-guard`. */
  readonly name: string;
  /** Namespace of the Service (in-cluster form); also accepted as `service.namespace`. */
  readonly namespace?: string;
  /** In-cluster: the Service in front of the operator's Pods. Port default 443. */
  readonly service?: { readonly name: string; readonly namespace?: string; readonly port?: number };
  /** Out of cluster (`kanri dev`, tests): the base URL the API server calls, e.g. `https://127.0.0.1:9443`. */
  readonly url?: string;
  /** The CA that issued the serving certificate: PEM, or already base64. Omitted in manifests whose caBundle the operator sets at start. */
  readonly caBundle?: string;
  /** Guard only these CRDs (a CEL `matchConditions` on the name), so the guard of one operator never stands in the way of another's. Default: every CRD labelled `app.kubernetes.io/managed-by: kanri`. */
  readonly crdNames?: readonly string[];
}

function base64Bundle(caBundle: string): string {
  return caBundle.trimStart().startsWith('-----BEGIN') ? Buffer.from(caBundle).toString('base64') : caBundle;
}

/**
 * The ValidatingWebhookConfiguration of the guard: DELETE of `apiextensions.k8s.io/v1`
 * `customresourcedefinitions` only, only for CRDs labelled `app.kubernetes.io/managed-by: kanri`
 * (`objectSelector`), `failurePolicy: Fail` (while the operator is down a Kanri CRD cannot be
 * deleted, the safe direction, and nothing else in the cluster is affected), `sideEffects: None`
 * and a 5 s timeout. Pure.
 *
 * @example
 * ```ts
 * // in-cluster, in the operator's manifests (the operator sets caBundle when it starts):
 * crdDeletionGuardWebhook({ name: 'website-operator-crd-deletion-guard',
 *   service: { name: 'website-operator-webhook', namespace: 'website-operator-system' } });
 * // local: the API server calls the operator on the loopback
 * crdDeletionGuardWebhook({ name: 'dev-guard', url: 'https://127.0.0.1:9443', caBundle: cert.caCertPem });
 * ```
 */
export function crdDeletionGuardWebhook(options: CrdDeletionGuardWebhookOptions): ValidatingWebhookConfigurationObject {
  const { service, url } = options;
  if (Boolean(service) === Boolean(url)) throw new Error('crdDeletionGuardWebhook: give either service or url');
  const namespace = service?.namespace ?? options.namespace;
  if (service && !namespace) throw new Error('crdDeletionGuardWebhook: the service needs a namespace');
  const clientConfig = {
    ...(service && namespace
      ? { service: { name: service.name, namespace, port: service.port ?? 443, path: CRD_DELETION_GUARD_PATH } }
      : { url: `${(url ?? '').replace(/\/+$/, '')}${CRD_DELETION_GUARD_PATH}` }),
    ...(options.caBundle ? { caBundle: base64Bundle(options.caBundle) } : {}),
  };
  const names = options.crdNames ?? [];
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: options.name, labels: { ...KANRI_MANAGED_BY_LABEL } },
    webhooks: [
      {
        name: CRD_DELETION_GUARD_WEBHOOK,
        admissionReviewVersions: ['v1'],
        clientConfig,
        rules: [
          {
            apiGroups: ['apiextensions.k8s.io'],
            apiVersions: ['v1'],
            operations: ['DELETE'],
            resources: ['customresourcedefinitions'],
            scope: 'Cluster',
          },
        ],
        objectSelector: { matchLabels: { ...KANRI_MANAGED_BY_LABEL } },
        ...(names.length > 0
          ? {
              matchConditions: [
                {
                  name: 'guarded-crds',
                  // For DELETE, `object` is null and `oldObject` is the CRD being deleted.
                  expression: `oldObject.metadata.name in [${names.map((n) => JSON.stringify(n)).join(', ')}]`,
                },
              ],
            }
          : {}),
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        sideEffects: 'None',
        timeoutSeconds: CRD_DELETION_GUARD_TIMEOUT_SECONDS,
      },
    ],
  };
}

/** An RBAC rule, in the shape `@kanri/api`'s `deriveRbac` takes as `extraRules`. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface CrdDeletionGuardRulesOptions {
  /** The CRDs the guard checks: `list` on each one's custom resources, cluster-wide (instances may be in any namespace). */
  readonly crds: readonly { readonly spec: { readonly group: string; readonly names: { readonly plural: string } } }[];
  /** The ValidatingWebhookConfiguration whose caBundle the operator sets: `get` and `patch` on it by name. */
  readonly configurationName: string;
  /** When the operator applies the whole configuration itself (`installedBy: 'manager'`), it also needs `create`, which RBAC cannot limit to one name. */
  readonly createsConfiguration?: boolean;
  /** The Secret that shares the certificate between replicas: `get`/`update` on it and on its CA's (`<name>-ca`) by name, and `create` on Secrets (namespaced: grant it in the operator's namespace only). */
  readonly certificateSecret?: string;
}

/**
 * The RBAC rules the guard needs: `clusterRules` for a ClusterRole, `namespaceRules` for a Role in
 * the operator's namespace. Pure.
 *
 * @example
 * ```ts
 * const { clusterRules, namespaceRules } = crdDeletionGuardRules({
 *   crds: [Website.crd], configurationName: 'website-operator-crd-deletion-guard',
 *   certificateSecret: 'website-operator-webhook-cert',
 * });
 * ```
 */
export function crdDeletionGuardRules(options: CrdDeletionGuardRulesOptions): {
  clusterRules: PolicyRule[];
  namespaceRules: PolicyRule[];
} {
  const byGroup = new Map<string, Set<string>>();
  for (const crd of options.crds) {
    const plurals = byGroup.get(crd.spec.group) ?? new Set<string>();
    plurals.add(crd.spec.names.plural);
    byGroup.set(crd.spec.group, plurals);
  }
  const clusterRules: PolicyRule[] = [...byGroup]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, plurals]) => ({ apiGroups: [group], resources: [...plurals].sort(), verbs: ['list'] }));
  clusterRules.push({
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['validatingwebhookconfigurations'],
    verbs: ['get', 'patch'],
    resourceNames: [options.configurationName],
  });
  if (options.createsConfiguration) {
    clusterRules.push({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      verbs: ['create'],
    });
  }
  const namespaceRules: PolicyRule[] = options.certificateSecret
    ? [
        {
          apiGroups: [''],
          resources: ['secrets'],
          verbs: ['get', 'update'],
          // The serving certificate, and the CA that issues it, kept apart (serving-cert-secret.ts).
          resourceNames: [options.certificateSecret, caSecretName(options.certificateSecret)],
        },
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      ]
    : [];
  return { clusterRules, namespaceRules };
}
