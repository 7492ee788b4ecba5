/** Plain deployment manifests for an operator, in the order they can be applied. Pure. */
import { stringify } from 'yaml';
import type { OperatorDefinition } from '../operator.js';
import {
  buildDeployment,
  buildMetricsService,
  buildNamespace,
  buildServiceMonitor,
  buildWebhookObjects,
  type ObjectSettings,
  relocateRbac,
} from './operator-objects.js';
import { type PackagingOptions, type ResolvedPackaging, resolvePackaging } from './options.js';

/** The manifests of an operator, grouped as `kanri generate` writes them. */
export interface OperatorManifests {
  /** The operator's Namespace (unless `createNamespace: false`). */
  readonly namespace: Record<string, unknown>[];
  readonly crds: Record<string, unknown>[];
  readonly rbac: Record<string, unknown>[];
  /** The definition's admission policies and bindings (`policies()`, keyed on the operator in this namespace); often none. */
  readonly policies: Record<string, unknown>[];
  /** Deployment, metrics Service and, when enabled, the ServiceMonitor. */
  readonly workload: Record<string, unknown>[];
  /** The CRD deletion guard's Service and ValidatingWebhookConfiguration; empty without the guard. */
  readonly webhook: Record<string, unknown>[];
  /** Everything above, in apply order. */
  readonly all: Record<string, unknown>[];
}

function plainSettings(def: OperatorDefinition, r: ResolvedPackaging): ObjectSettings {
  const selectorLabels = { 'app.kubernetes.io/name': def.name };
  const labels = { ...selectorLabels, 'app.kubernetes.io/managed-by': 'kanri' };
  return {
    namespace: r.namespace,
    labels,
    selectorLabels,
    image: r.image,
    imagePullPolicy: r.imagePullPolicy,
    replicas: r.replicas,
    resources: r.resources,
    metricsPort: r.metricsPort,
    bindAddress: `:${r.metricsPort}`,
    leaderElection: String(r.leaderElection),
    serviceMonitorInterval: r.serviceMonitor.interval,
    serviceMonitorLabels: { ...labels, ...r.serviceMonitor.labels },
    crdDeletionGuard: String(r.crdDeletionGuard),
    // An install for one namespace has no ClusterRole to read the policies with; it applies them itself.
    admissionPolicies: def.watchNamespace ? 'installed' : 'check',
  };
}

/**
 * Everything that installs and runs an operator: its Namespace, CRDs, RBAC (from `def.rbac()`),
 * Deployment and metrics Service, a ServiceMonitor when asked for, and, when the definition has
 * the CRD deletion guard, the webhook's Service and ValidatingWebhookConfiguration (last: it
 * refuses deleting the operator's CRDs, and only that, until the operator serves it).
 *
 * @example
 * ```ts
 * const { all } = operatorManifests(operator, { image: 'ghcr.io/acme/website-operator:1.2.0' });
 * await writeFile('operator.yaml', manifestsToYaml(all));
 * ```
 */
export function operatorManifests(def: OperatorDefinition, options: PackagingOptions = {}): OperatorManifests {
  const r = resolvePackaging(def, options);
  const s = plainSettings(def, r);
  const namespace = r.createNamespace ? [buildNamespace(r.namespace, s.labels as Record<string, string>)] : [];
  const crds = def.crds().map((crd) => structuredClone(crd) as unknown as Record<string, unknown>);
  const rbac = relocateRbac(def, r.namespace, undefined, def.rbac({ crdDeletionGuard: r.crdDeletionGuard }));
  const workload = [buildDeployment(def, s), buildMetricsService(def, s)];
  if (r.serviceMonitor.enabled) workload.push(buildServiceMonitor(def, s));
  const webhook = r.crdDeletionGuard ? buildWebhookObjects(def, s) : [];
  const policies = def.policies({ namespace: r.namespace });
  return {
    namespace,
    crds,
    rbac,
    policies,
    workload,
    webhook,
    all: [...namespace, ...crds, ...rbac, ...policies, ...workload, ...webhook],
  };
}

/** Objects as one multi-document YAML stream, with an optional leading comment. */
export function manifestsToYaml(objects: readonly unknown[], header?: string): string {
  const docs = objects.map((o) => stringify(o, { lineWidth: 0 }));
  const comment = header ? `${header.replace(/^/gm, '# ')}\n` : '';
  return `${comment}${docs.map((d) => `---\n${d}`).join('')}`;
}
