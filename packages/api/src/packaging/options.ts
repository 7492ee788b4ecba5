/** Options of the packaging builders, their defaults and their checks. Pure. */
import type { ResourceRequirements } from 'kubernetes-types/core/v1.js';
import type { OperatorDefinition } from '../operator.js';
import { WEBHOOK_PORT } from './runtime-env.js';

export interface PackagingOptions {
  /** Container image; default the definition's `image`. */
  readonly image?: string;
  /** Default `IfNotPresent`. */
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Plain manifests only (a chart installs into its release namespace). Default the definition's. */
  readonly namespace?: string;
  /** Plain manifests only: include the Namespace, labelled to enforce the `restricted` Pod Security profile. Default true. */
  readonly createNamespace?: boolean;
  /** Default 1. With leader election on, extra replicas stand by with warm caches. */
  readonly replicas?: number;
  /** Default requests 50m CPU / 64Mi, limits 500m CPU / 256Mi. */
  readonly resources?: ResourceRequirements;
  /** Port of /healthz, /readyz and /metrics. Default 8080 (the manager's default bind address). */
  readonly metricsPort?: number;
  /** Default true. */
  readonly leaderElection?: boolean;
  /**
   * Install the CRD deletion guard (its webhook Service and ValidatingWebhookConfiguration, the
   * RBAC it needs, and `KANRI_CRD_DELETION_GUARD` on the Deployment); in the chart, the default of
   * `crdDeletionGuard.enabled`. Default: the definition's `crdDeletionGuard`, which it cannot turn on.
   */
  readonly crdDeletionGuard?: boolean;
  /** A Prometheus Operator ServiceMonitor; off by default (its CRD may not be installed). */
  readonly serviceMonitor?: boolean | { readonly interval?: string; readonly labels?: Record<string, string> };
  /** Chart only. Default `0.1.0`. */
  readonly chartVersion?: string;
  /** Chart only. Default the image tag. */
  readonly appVersion?: string;
  /** Chart only: Chart.yaml's description. */
  readonly description?: string;
}

/** Every option filled in. */
export interface ResolvedPackaging {
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  readonly namespace: string;
  readonly createNamespace: boolean;
  readonly replicas: number;
  readonly resources: ResourceRequirements;
  readonly metricsPort: number;
  readonly leaderElection: boolean;
  readonly crdDeletionGuard: boolean;
  readonly serviceMonitor: {
    readonly enabled: boolean;
    readonly interval: string;
    readonly labels: Record<string, string>;
  };
  readonly chartVersion: string;
  readonly appVersion: string;
  readonly description: string;
}

export const DEFAULT_RESOURCES: ResourceRequirements = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { cpu: '500m', memory: '256Mi' },
};

/** The user the generated Dockerfile runs as (the `node` user of the official Node images). */
export const OPERATOR_UID = 1000;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

/** `registry/repo:tag@sha256:…` → its parts; a reference without a tag means `latest`, as for docker. */
export function parseImage(image: string): { repository: string; tag: string; digest: string } {
  const at = image.indexOf('@');
  const named = at >= 0 ? image.slice(0, at) : image;
  const digest = at >= 0 ? image.slice(at + 1) : '';
  const colon = named.lastIndexOf(':');
  if (colon > named.lastIndexOf('/')) return { repository: named.slice(0, colon), tag: named.slice(colon + 1), digest };
  return { repository: named, tag: digest ? '' : 'latest', digest };
}

/** Fills the defaults in and checks every option, naming the one at fault. */
export function resolvePackaging(def: OperatorDefinition, options: PackagingOptions = {}): ResolvedPackaging {
  const fail = (field: string, message: string): never => {
    throw new Error(`packaging ${def.name}: ${field} ${message}`);
  };
  const image = options.image ?? def.image;
  if (!image || /\s/.test(image)) fail('image', `"${image}" is not an image reference`);
  const namespace = options.namespace ?? def.namespace;
  if (!DNS_LABEL.test(namespace)) fail('namespace', `"${namespace}" must be a DNS-1123 label`);
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 0) fail('replicas', `must be a whole number ≥ 0, not ${replicas}`);
  const metricsPort = options.metricsPort ?? 8080;
  if (!Number.isInteger(metricsPort) || metricsPort < 1 || metricsPort > 65_535) {
    fail('metricsPort', `must be a port from 1 to 65535, not ${metricsPort}`);
  }
  const crdDeletionGuard = options.crdDeletionGuard ?? def.crdDeletionGuard;
  if (crdDeletionGuard && !def.crdDeletionGuard) {
    fail(
      'crdDeletionGuard',
      'cannot be turned on here: the definition has no guard (it is namespace-scoped, has no resources, or set crdDeletionGuard: false)',
    );
  }
  // The definition's guard sets the container port even when an install turns the guard off.
  if (def.crdDeletionGuard && metricsPort === WEBHOOK_PORT) {
    fail('metricsPort', `${metricsPort} is the admission webhook's port; choose another`);
  }
  const leaderElection = options.leaderElection ?? true;
  if (!leaderElection && replicas > 1) {
    fail('replicas', `${replicas} needs leaderElection: true, or the replicas would all reconcile at once`);
  }
  const chartVersion = options.chartVersion ?? '0.1.0';
  if (!SEMVER.test(chartVersion))
    fail('chartVersion', `"${chartVersion}" must be a semantic version (Helm requires it)`);
  const { tag, digest } = parseImage(image);
  const monitor = typeof options.serviceMonitor === 'object' ? options.serviceMonitor : {};
  return {
    image,
    imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
    namespace,
    createNamespace: options.createNamespace ?? true,
    replicas,
    resources: options.resources ?? DEFAULT_RESOURCES,
    metricsPort,
    leaderElection,
    crdDeletionGuard,
    serviceMonitor: {
      enabled: options.serviceMonitor !== undefined && options.serviceMonitor !== false,
      interval: monitor.interval ?? '30s',
      labels: { ...(monitor.labels ?? {}) },
    },
    chartVersion,
    appVersion: options.appVersion ?? (tag || digest.slice(0, 19) || chartVersion),
    description: options.description ?? `The ${def.name} Kubernetes operator (built with Kanri).`,
  };
}
