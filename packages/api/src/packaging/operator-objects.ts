/**
 * The objects that run an operator: its Deployment (non-root, read-only root filesystem, probes
 * on /healthz and /readyz, requests and limits, leader election), the metrics Service, the
 * optional ServiceMonitor and the CRD deletion guard's webhook Service and configuration. Each
 * setting is data for plain manifests or a template hole for the chart, so both come from these
 * builders. Pure.
 */
import type { OperatorDefinition } from '../operator.js';
import { OPERATOR_UID } from './options.js';
import { OPERATOR_ENV, WEBHOOK_PORT } from './runtime-env.js';
import type { Templated } from './template-yaml.js';

type Labels = Record<string, string>;
type ObjectOut = Record<string, unknown>;

/** Every value the objects take, each data or a template hole. */
export interface ObjectSettings {
  readonly namespace: Templated<string>;
  readonly labels: Templated<Labels>;
  readonly selectorLabels: Templated<Labels>;
  readonly image: Templated<string>;
  readonly imagePullPolicy: Templated<string>;
  readonly replicas: Templated<number>;
  readonly resources: Templated<object>;
  readonly metricsPort: Templated<number>;
  readonly bindAddress: Templated<string>;
  /** `"true"` or `"false"`: an environment variable's value. */
  readonly leaderElection: Templated<string>;
  readonly serviceMonitorInterval: Templated<string>;
  readonly serviceMonitorLabels: Templated<Labels>;
  /** `"true"` or `"false"`: whether the operator serves the CRD deletion guard (when its definition has one). */
  readonly crdDeletionGuard: Templated<string>;
  /** `"check"` or `"installed"` (`KANRI_ADMISSION_POLICIES`), set when the definition has admission policies. */
  readonly admissionPolicies: Templated<string>;
  /** Chart only: the one namespace to watch (`KANRI_WATCH_NAMESPACE`), empty for all. */
  readonly watchNamespace?: Templated<string>;
  /** Chart only: pod template annotations. */
  readonly podAnnotations?: Templated<Labels>;
  /** Chart only: more pod spec fields (imagePullSecrets, nodeSelector, tolerations, affinity). */
  readonly podSpecExtras?: Readonly<Record<string, Templated<unknown>>>;
}

/** The ServiceAccount `def.rbac()` makes and the Deployment runs as. */
export const serviceAccountName = (def: OperatorDefinition) => def.name;
export const metricsServiceName = (def: OperatorDefinition) => `${def.name}-metrics`;

/** The operator's Deployment. */
export function buildDeployment(def: OperatorDefinition, s: ObjectSettings): ObjectOut {
  const container = {
    name: 'manager',
    image: s.image,
    imagePullPolicy: s.imagePullPolicy,
    env: [
      { name: OPERATOR_ENV.podNamespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: OPERATOR_ENV.leaderElection, value: s.leaderElection },
      { name: OPERATOR_ENV.bindAddress, value: s.bindAddress },
      ...(def.crdDeletionGuard ? [{ name: OPERATOR_ENV.crdDeletionGuard, value: s.crdDeletionGuard }] : []),
      ...(s.watchNamespace !== undefined ? [{ name: OPERATOR_ENV.watchNamespace, value: s.watchNamespace }] : []),
      ...(def.policyNames().length > 0 ? [{ name: OPERATOR_ENV.admissionPolicies, value: s.admissionPolicies }] : []),
    ],
    ports: [
      { name: 'metrics', containerPort: s.metricsPort, protocol: 'TCP' },
      // The guard's certificate lives in memory and a Secret, so the root filesystem stays read-only.
      ...(def.crdDeletionGuard ? [{ name: 'webhook', containerPort: WEBHOOK_PORT, protocol: 'TCP' }] : []),
    ],
    // /healthz answers as soon as the process serves; /readyz once every cache has synced.
    livenessProbe: {
      httpGet: { path: '/healthz', port: 'metrics' },
      initialDelaySeconds: 5,
      periodSeconds: 10,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    readinessProbe: {
      httpGet: { path: '/readyz', port: 'metrics' },
      periodSeconds: 5,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    resources: s.resources,
    securityContext: {
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    },
    // The root filesystem is read-only; Node and its libraries may still want a scratch /tmp.
    volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: def.name, namespace: s.namespace, labels: s.labels },
    spec: {
      replicas: s.replicas,
      selector: { matchLabels: s.selectorLabels },
      template: {
        metadata: {
          ...(s.podAnnotations !== undefined ? { annotations: s.podAnnotations } : {}),
          labels: s.selectorLabels,
        },
        spec: {
          serviceAccountName: serviceAccountName(def),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: OPERATOR_UID,
            runAsGroup: OPERATOR_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [container],
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
          // The manager gives reconciles in flight 30 s to finish and then releases its Lease.
          terminationGracePeriodSeconds: 40,
          ...(s.podSpecExtras ?? {}),
        },
      },
    },
  };
}

/** The Service in front of /metrics (scraped directly or through the ServiceMonitor). */
export function buildMetricsService(def: OperatorDefinition, s: ObjectSettings): ObjectOut {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: metricsServiceName(def), namespace: s.namespace, labels: s.labels },
    spec: {
      selector: s.selectorLabels,
      ports: [{ name: 'metrics', port: s.metricsPort, targetPort: 'metrics', protocol: 'TCP' }],
    },
  };
}

/** A Prometheus Operator ServiceMonitor scraping the metrics Service. */
export function buildServiceMonitor(def: OperatorDefinition, s: ObjectSettings): ObjectOut {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: def.name, namespace: s.namespace, labels: s.serviceMonitorLabels },
    spec: {
      selector: { matchLabels: s.selectorLabels },
      endpoints: [{ port: 'metrics', path: '/metrics', interval: s.serviceMonitorInterval }],
    },
  };
}

/**
 * `def.webhookManifests()` for this install: the Service in `s.namespace`, selecting the Pods by
 * the labels the Deployment's Pod template has, and the cluster-scoped ValidatingWebhookConfiguration
 * calling that Service. Its caBundle is left out: the operator sets it when it starts, and as the
 * manifests never carry the field, re-applying them or upgrading the chart leaves it. Empty
 * without the guard.
 */
export function buildWebhookObjects(def: OperatorDefinition, s: ObjectSettings): ObjectOut[] {
  return def.webhookManifests().map((object) => {
    const metadata = object.metadata as { name: string };
    if (object.kind === 'Service') {
      const spec = object.spec as { ports?: { targetPort?: number | string }[] };
      // By name, as the metrics Service does: the Deployment names its container port `webhook`.
      const ports = spec.ports?.map((p) => (p.targetPort === WEBHOOK_PORT ? { ...p, targetPort: 'webhook' } : p));
      return {
        ...object,
        metadata: { name: metadata.name, namespace: s.namespace, labels: s.labels },
        spec: { ...spec, selector: s.selectorLabels, ...(ports ? { ports } : {}) },
      };
    }
    const webhooks = (object.webhooks as { clientConfig?: { service?: { namespace?: string } } }[] | undefined)?.map(
      (webhook) => {
        const service = webhook.clientConfig?.service;
        if (!service || service.namespace !== def.namespace) return webhook;
        return {
          ...webhook,
          clientConfig: { ...webhook.clientConfig, service: { ...service, namespace: s.namespace } },
        };
      },
    );
    return { ...object, metadata: { name: metadata.name, labels: s.labels }, ...(webhooks ? { webhooks } : {}) };
  });
}

/** The operator's namespace, enforcing the `restricted` Pod Security profile its Pods meet. */
export function buildNamespace(name: string, labels: Labels): ObjectOut {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      labels: {
        ...labels,
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/warn': 'restricted',
      },
    },
  };
}

/**
 * `def.rbac()` (or `objects` it returned) moved into `namespace`: every object in the definition's
 * namespace, and every ServiceAccount subject there, follows (Roles of a `watchNamespace` stay
 * where they are).
 */
export function relocateRbac(
  def: OperatorDefinition,
  namespace: Templated<string>,
  labels?: Templated<Labels>,
  objects: readonly ObjectOut[] = def.rbac(),
): ObjectOut[] {
  return objects.map((object) => {
    const metadata = object.metadata as { namespace?: string; labels?: Labels };
    const moved: ObjectOut = {
      ...object,
      metadata: {
        ...metadata,
        ...(metadata.namespace === def.namespace ? { namespace } : {}),
        ...(labels !== undefined ? { labels } : {}),
      },
    };
    if (Array.isArray(object.subjects)) {
      moved.subjects = (object.subjects as { kind: string; namespace?: string }[]).map((subject) =>
        subject.kind === 'ServiceAccount' && subject.namespace === def.namespace ? { ...subject, namespace } : subject,
      );
    }
    return moved;
  });
}
