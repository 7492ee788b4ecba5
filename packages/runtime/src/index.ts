/**
 * @kanri/runtime: the reconciliation loop done right.
 *
 * @example
 * ```ts
 * import { Manager, controller } from '@kanri/runtime';
 *
 * const websites = controller('example.com/v1', 'Website')
 *   .owns('v1', 'ConfigMap')
 *   .reconcile(async (site, ctx) => {
 *     await ctx.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: site.metadata?.name }, data: { html: '<h1>hi</h1>' } });
 *     await ctx.setStatus({ ready: true });
 *   });
 *
 * const manager = await Manager.create({ name: 'website-operator' });
 * await manager.add(websites).start(); // until SIGTERM
 * ```
 */

export type { KubeObject } from '@kanri/client';
export type { BackoffOptions } from '@kanri/timing';
export { Backoff, sleepUnlessAborted, Wakeup } from '@kanri/timing';
export type { BuilderOptions } from './controller/builder.js';
export { ControllerBuilder, controller } from './controller/builder.js';
export type { MetadataPatch, ObjectRef, ReconcileContext } from './controller/context.js';
export type { ControllerDefinition, ReconcileFunction, WatchSource } from './controller/definition.js';
export type { MapFunction } from './controller/event-sources.js';
export { requestForObject, requestForOwner } from './controller/event-sources.js';
export type { Predicate } from './controller/predicates.js';
export { annotationsChanged, anyOf, generationChanged, labelsChanged } from './controller/predicates.js';
export type { Deadline } from './deadline.js';
export { createDeadline } from './deadline.js';
export type { Condition, ConditionInput, SetCondition } from './helpers/conditions.js';
export { conditionTime, findCondition, jsonEqual, setCondition } from './helpers/conditions.js';
export type { EventType } from './helpers/event-recorder.js';
export { EventRecorder } from './helpers/event-recorder.js';
export type { FinalizerEvent } from './helpers/finalizer.js';
export { finalizer } from './helpers/finalizer.js';
export { buildControllerReference, hasFinalizer, withOwner } from './helpers/owner-reference.js';
export type { CacheOptions } from './informers/informer-pool.js';
export type { ElectionTimings } from './leader/election-timings.js';
export { DEFAULT_ELECTION_TIMINGS, electionTimingProblems } from './leader/election-timings.js';
export { LeaderElector } from './leader/leader-election.js';
export type { LeaderElectionLogger, LeaderElectionOptions } from './leader/leader-election-options.js';
export type { LeaseFollowerOptions } from './leader/lease-follower.js';
export { LeaseFollower } from './leader/lease-follower.js';
export type { Lease, LeaseRecord } from './leader/lease-record.js';
export { DEFAULT_LEASE_DURATION_SECONDS } from './leader/lease-record.js';
export type { LeaseView } from './leader/lease-view.js';
export { foldLease, holderOf, leaseExpiresAtMs } from './leader/lease-view.js';
export type {
  AnnotateOptions,
  AnnotationChanges,
  HandOverOptions,
  LeaseRef,
  TakeOverOptions,
} from './leader/lease-writes.js';
export {
  annotateLease,
  handOverLease,
  TRANSITION_REASON_ANNOTATION,
  takeOverLease,
  withAnnotations,
} from './leader/lease-writes.js';
export type { Logger } from './logger.js';
export { createLogger } from './logger.js';
export type { LeaderElectionConfig, ManagerOptions } from './manager/manager.js';
export { Manager } from './manager/manager.js';
export { RuntimeMetrics } from './metrics/runtime-metrics.js';
export type {
  CertificateAuthority,
  CertificateAuthorityRequest,
  CertificateProblem,
  RenewalCheck,
  ServingCertificate,
  ServingCertificateRequest,
} from './pki/serving-cert.js';
export {
  certifyPublicKey,
  createCertificateAuthority,
  createServingCertificate,
  serviceDnsNames,
  servingCertificateProblem,
} from './pki/serving-cert.js';
export type { CertificateSecretOptions } from './pki/serving-cert-secret.js';
export { caSecretName, ensureServingCertificateSecret } from './pki/serving-cert-secret.js';
export type { Duration, ReconcileResult, Request } from './reconcile.js';
export { parseDuration, requestKey, TerminalError } from './reconcile.js';
export type {
  AdmissionDecision,
  AdmissionHandler,
  AdmissionOperation,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
} from './webhook/admission-review.js';
export { buildAdmissionResponse, parseAdmissionReview } from './webhook/admission-review.js';
export type { AdmissionServer, AdmissionServerOptions, ServingKeyPair } from './webhook/admission-server.js';
export { DEFAULT_MAX_BODY_BYTES, startAdmissionServer } from './webhook/admission-server.js';
export type { CrdDeletionGuardOptions, InstanceSample } from './webhook/crd-deletion-guard.js';
export {
  ALLOW_DELETE_ANNOTATION,
  CRD_DELETION_GUARD_PATH,
  crdDeletionGuard,
  decideCrdDeletion,
  isDeletionAllowed,
  KANRI_MANAGED_BY_LABEL,
} from './webhook/crd-deletion-guard.js';
export type {
  CrdDeletionGuardRulesOptions,
  CrdDeletionGuardWebhookOptions,
  PolicyRule,
  ValidatingWebhookConfigurationObject,
  WebhookRule,
} from './webhook/crd-deletion-guard-manifests.js';
export {
  CRD_DELETION_GUARD_TIMEOUT_SECONDS,
  CRD_DELETION_GUARD_WEBHOOK,
  crdDeletionGuardRules,
  crdDeletionGuardWebhook,
} from './webhook/crd-deletion-guard-manifests.js';
export type { WebhookOptions } from './webhook/webhook-runner.js';
export { WebhookRunner } from './webhook/webhook-runner.js';
