/**
 * Crunchy PGO's PostgresCluster fields that Kanri does not implement, each refused at admission
 * by name with why and what to do instead (`refusedFields` of @kanri/api), so that a manifest
 * written for PGO never loses a setting without its author being told, whatever client applies
 * it. Every other PGO field is in Kanri's schema; packages/postgres/test/pgo-fields.test.ts walks
 * PGO's fields and fails on one that is neither. The README's table is generated from this and
 * the schema (scripts/readme-pgo-fields.mjs).
 */
import type { RefusedFields } from '@kanri/api';

const notYet = (what: string, instead?: string) =>
  `Kanri does not implement ${what} yet${instead ? `: ${instead}` : ''}; remove it`;

/** Resource settings of a Job PGO runs, where Kanri's agents do the work in the instance Pods. */
const noJob = (work: string) =>
  `Kanri runs ${work} in the instance Pods, not in a Job of its own, so this does not apply; remove it`;

const OWN_REPOSITORY =
  "an in-place restore restores this cluster from its own repository; to restore another cluster's backups, create a cluster with spec.dataSource; remove it";

/** The scheduling and resource fields of a Job PGO runs at `prefix`, each refused with `why`. */
function jobFields(prefix: string, why: string): RefusedFields {
  return {
    [`${prefix}.affinity`]: { type: 'object', why },
    [`${prefix}.priorityClassName`]: { type: 'string', why },
    [`${prefix}.resources`]: { type: 'object', why },
    [`${prefix}.tolerations`]: { type: 'array', why },
    [`${prefix}.volumes`]: { type: 'object', why },
  };
}

const RESTORE_JOB = noJob('an in-place restore');
const CLONE_JOB = noJob("a new cluster's restore");

/** Path under spec → why it is refused. */
export const PGO_REFUSED_FIELDS: RefusedFields = {
  authentication: {
    type: 'object',
    why: notYet("PGO's pg_hba rules", 'Kanri writes pg_hba.conf itself, and spec.tls.required makes TLS mandatory'),
  },
  'backups.pgbackrest.jobs': { type: 'object', why: noJob('backups') },
  'backups.pgbackrest.log': {
    type: 'object',
    why: "pgBackRest's log goes to the agent's output in Kanri; there is no log path to set; remove it",
  },
  'backups.pgbackrest.metadata': { type: 'object', why: notYet('labels and annotations on backup objects') },
  'backups.pgbackrest.repoHost': {
    type: 'object',
    why: notYet("the repo host's scheduling and resources", 'it runs with defaults'),
  },
  ...jobFields('backups.pgbackrest.restore', RESTORE_JOB),
  'backups.pgbackrest.restore.clusterName': {
    type: 'string',
    why: OWN_REPOSITORY,
  },
  'backups.pgbackrest.restore.clusterNamespace': {
    type: 'string',
    why: OWN_REPOSITORY,
  },
  'backups.pgbackrest.sidecars': {
    type: 'object',
    why: "Kanri's agent runs pgBackRest itself; there is no pgBackRest sidecar; remove it",
  },
  'backups.snapshots': { type: 'object', why: notYet('backups by VolumeSnapshot') },
  'config.files': {
    type: 'array',
    why: notYet('extra configuration files', 'postgresql.conf settings go in spec.config.parameters'),
  },
  customReplicationTLSSecret: {
    type: 'object',
    why: 'Kanri names this spec.tls.replicationSecret (a Secret with tls.crt, tls.key and ca.crt, whose certificate names streaming_replica); move it there',
  },
  customTLSSecret: {
    type: 'object',
    why: 'Kanri names this spec.tls.serverSecret (a Secret with tls.crt, tls.key and ca.crt, naming <cluster>-primary.<namespace>.svc); move it there',
  },
  ...jobFields('dataSource.pgbackrest', CLONE_JOB),
  ...jobFields('dataSource.postgresCluster', CLONE_JOB),
  'dataSource.postgresCluster.clusterNamespace': {
    type: 'string',
    why: "a clone's source must be in the clone's namespace: a cluster of another namespace cannot lend its backups; remove it",
  },
  'dataSource.volumes': {
    type: 'object',
    why: notYet(
      'starting from existing volumes',
      'clone with spec.dataSource.postgresCluster or restore with spec.dataSource.pgbackrest',
    ),
  },
  'instances[].containers': { type: 'array', why: notYet('extra containers in the instance Pods') },
  'instances[].metadata': { type: 'object', why: notYet('labels and annotations on the instance Pods') },
  'instances[].minAvailable': {
    type: 'int-or-string',
    why: "Kanri's PodDisruptionBudget keeps all but one instance available (minAvailable: instances − 1); remove it",
  },
  'instances[].sidecars': { type: 'object', why: notYet('sidecars in the instance Pods') },
  'instances[].tablespaceVolumes': { type: 'array', why: notYet('tablespace volumes') },
  'instances[].volumes': { type: 'object', why: notYet('extra volumes in the instance Pods') },
  'instances[].walVolumeClaimSpec': {
    type: 'object',
    why: notYet('a separate WAL volume', 'pg_wal is on the data volume'),
  },
  instrumentation: {
    type: 'object',
    why: "OpenTelemetry instrumentation is not part of Kanri: each instance's agent serves Prometheus metrics on port 8000 (/metrics); remove it",
  },
  metadata: { type: 'object', why: notYet("labels and annotations on the cluster's objects") },
  monitoring: {
    type: 'object',
    why: "PGO's pgMonitor exporter is not part of Kanri: each instance's agent serves Prometheus metrics on port 8000 (/metrics); remove it",
  },
  openshift: {
    type: 'boolean',
    why: 'Kanri does not special-case OpenShift: its Pods run as fixed non-root users under the restricted Pod Security Standard; remove it',
  },
  'patroni.dynamicConfiguration': {
    type: 'object',
    why: 'Kanri does not run Patroni: postgresql.conf settings go in spec.config.parameters and high-availability settings in spec.ha (leaseDurationSeconds, synchronous, maximumLagOnFailover, failsafeMode); move them there',
  },
  'patroni.leaderLeaseDurationSeconds': {
    type: 'integer',
    why: "Kanri's leader Lease is set by spec.ha.leaseDurationSeconds; move it there",
  },
  'patroni.logging': { type: 'object', why: 'Kanri does not run Patroni: there is no Patroni log to set; remove it' },
  'patroni.port': {
    type: 'integer',
    why: 'Kanri does not run Patroni: there is no Patroni API port to set; remove it',
  },
  'patroni.syncPeriodSeconds': {
    type: 'integer',
    why: "Kanri's Lease renewals are timed by spec.ha.retryPeriodSeconds; move it there",
  },
  port: { type: 'integer', why: notYet('another port than 5432') },
  postGISVersion: { type: 'string', why: "PostGIS is not in Kanri's image; remove it" },
  proxy: { type: 'object', why: notYet('PgBouncer (spec.proxy.pgBouncer)') },
  standby: {
    type: 'object',
    why: notYet('standby clusters (spec.standby)', 'to copy a cluster, create one with spec.dataSource'),
  },
  userInterface: { type: 'object', why: 'pgAdmin is not part of Kanri; remove it' },
};
