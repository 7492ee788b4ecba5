/**
 * The PostgresCluster API. Field layout follows Crunchy PGO's `postgres-operator.crunchydata.com/v1`
 * so manifests users already have apply with only the apiVersion changed. Bad input is refused at
 * admission by the schema and CEL rules, with messages naming the field.
 */
import { defineResource } from '@kanri/api';
import { z } from 'zod';
import { GROUP, KIND, PLURAL } from '../contract/index.js';
import { backups, dataSource } from './backups.js';
import { ha } from './ha.js';
import { parameterRules, synchronousCommitRule } from './parameter-rules.js';
import { patroni } from './patroni.js';
import { PGO_REFUSED_FIELDS } from './pgo-fields.js';
import { postgresClusterStatus } from './postgres-cluster-status.js';
import { serviceSpec } from './service-spec.js';
import { growableVolumeClaimSpec } from './volume-claim-spec.js';

/** A data volume cannot shrink: Kubernetes cannot shrink a claim, and postgres's files are on it. */
export const DATA_VOLUME_SHRINK_MESSAGE =
  'dataVolumeClaimSpec.resources.requests.storage cannot be lowered: a PersistentVolumeClaim only grows (move to a smaller volume with a new instance set, or a clone)';

const NEW_SET_NAME_MESSAGE =
  "the name of a new instance set must not contain '-': Pods are <cluster>-<set>-<n>, so set b-c of cluster a and set c of cluster a-b would both be a-b-c-0";

/**
 * Major versions the operator can run and upgrade between: every major the instance image carries
 * (packages/postgres/Dockerfile). Not 13: its community support ended in November 2025, and no
 * package registry serves a build of it that the image could carry.
 */
export const SUPPORTED_POSTGRES_VERSIONS = [14, 15, 16, 17] as const;

/**
 * The admission message for a major below the oldest supported, beside the schema's minimum: the
 * minimum alone says "should be greater than or equal to 14", not why.
 */
export const OLD_POSTGRES_VERSION_RULE = {
  rule: `self >= ${SUPPORTED_POSTGRES_VERSIONS[0]}`,
  message: `PostgreSQL 13 and older are past their end of life and no Kanri image carries them: use one of ${SUPPORTED_POSTGRES_VERSIONS.join(', ')}`,
} as const;

/** Instances of one cluster, all sets together (see the rule on spec). */
export const MAX_INSTANCES = 8;

/** Free-form Kubernetes structures (resources, affinity, tolerations) kept as given. */
const passthrough = (description: string) => z.record(z.string(), z.unknown()).describe(description);

const dataVolumeClaimSpec = growableVolumeClaimSpec('the data volume').describe(
  'PersistentVolumeClaim spec for each instance data volume (PGDATA). Required.',
);

const instanceSet = z
  .object({
    name: z
      .string()
      .max(15)
      .regex(/^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/)
      .optional()
      .describe(
        "Instance set name, part of Pod names; a new set's has no '-' (see the rule on spec.instances). Default: instance<N> (1-based position).",
      ),
    replicas: z.number().int().min(1).default(1).describe('Number of PostgreSQL instances in this set (at least 1).'),
    dataVolumeClaimSpec,
    resources: passthrough('CPU and memory requests and limits of the postgres container.').optional(),
    affinity: passthrough('Scheduling affinity of the instance Pods.').optional(),
    tolerations: z.array(passthrough('A toleration.')).optional().describe('Tolerations of the instance Pods.'),
    priorityClassName: z
      .string()
      .min(1)
      .max(253)
      .optional()
      .describe(
        'PriorityClass of the instance Pods (it must exist: the API server refuses a Pod naming one that does not).',
      ),
    topologySpreadConstraints: z
      .array(passthrough('A topology spread constraint, as in a Pod spec.'))
      .max(8)
      .optional()
      .describe(
        "How the instance Pods spread over zones or nodes, as in a Pod spec; beside the default preferred anti-affinity between a cluster's instances (which spec.instances[].affinity replaces).",
      ),
  })
  .describe('A set of identical instances.');

const user = z
  .object({
    name: z
      .string()
      .regex(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/)
      .meta({
        'x-kubernetes-validations': [
          {
            rule: "!(self in ['postgres', 'streaming_replica'])",
            message: 'postgres and streaming_replica are the roles the operator manages itself',
          },
        ],
      })
      .describe(
        "Role name: lower-case letters, digits and '-' (as PGO has it), at most 63; it names the user's Secret <cluster>-pguser-<name>, where '_' is not allowed.",
      ),
    databases: z
      .array(z.string().regex(/^[a-z_][a-z0-9_-]{0,62}$/))
      .optional()
      .describe('Databases owned by this user, created if missing.'),
    password: z
      .object({
        type: z
          .enum(['ASCII', 'AlphaNumeric'])
          .describe(
            "The characters of the user's generated password, as in PGO: ASCII (letters, digits and ()*+,-./:;<=>?@[]^_{|}) or AlphaNumeric, 24 of them.",
          ),
      })
      .optional()
      .describe(
        "How the user's password is generated. Only a password generated from now on follows it: one the user's Secret already holds is kept. Default: 32 URL-safe characters.",
      ),
    options: z
      .string()
      .regex(
        /^(\s*(SUPERUSER|NOSUPERUSER|CREATEDB|NOCREATEDB|CREATEROLE|NOCREATEROLE|INHERIT|NOINHERIT|LOGIN|NOLOGIN|REPLICATION|NOREPLICATION|BYPASSRLS|NOBYPASSRLS|CONNECTION LIMIT -?[0-9]+)\s*)*$/,
      )
      .optional()
      .describe('Role options as in ALTER ROLE, e.g. "CREATEDB CONNECTION LIMIT 10".'),
  })
  .describe('A database user with a generated password kept in Secret <cluster>-pguser-<name>.');

const tls = z
  .object({
    serverSecret: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/)
      .optional()
      .describe(
        "A Secret in the cluster's namespace with tls.crt, tls.key and ca.crt (as cert-manager writes them): the certificate every instance serves, and the CA clients verify it with (PGO's customTLSSecret). It must name <name>-primary.<namespace>.svc, which the instances verify each other's server by; one that does not is refused (TLSSecretInvalid) and the instances keep what they serve. Default: a certificate for the cluster's Service names from the cluster's own CA (Secret <name>-postgres-ca), renewed 30 days before it expires. The Secret must allow the cluster: annotation postgres.kanri.dev/allowed-clusters listing it.",
      ),
    replicationSecret: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/)
      .optional()
      .describe(
        "A Secret in the cluster's namespace with tls.crt and tls.key (a client certificate whose common name is streaming_replica) and ca.crt, the CA that issued it: the certificate replicas log in with (PGO's customReplicationTLSSecret). postgres then trusts that CA for client certificates beside the cluster's, for streaming_replica alone: no other role logs in by certificate. Default: one from the cluster's CA. The Secret must allow the cluster: annotation postgres.kanri.dev/allowed-clusters listing it.",
      ),
    required: z
      .boolean()
      .default(false)
      .describe(
        'Refuse every network connection without TLS (pg_hba hostnossl reject). TLS is always served; this makes it mandatory.',
      ),
  })
  .describe(
    'PostgreSQL TLS. Every instance serves TLS, and replicas stream over TLS with a client certificate of the replication user. The CA clients need is ca.crt in Secret <name>-postgres-tls.',
  );

export const postgresClusterSpec = z
  .object({
    postgresVersion: z
      .number()
      .int()
      .min(SUPPORTED_POSTGRES_VERSIONS[0])
      .max(SUPPORTED_POSTGRES_VERSIONS[SUPPORTED_POSTGRES_VERSIONS.length - 1] as number)
      .meta({ 'x-kubernetes-validations': [OLD_POSTGRES_VERSION_RULE] })
      .describe(`PostgreSQL major version: ${SUPPORTED_POSTGRES_VERSIONS.join(', ')}.`),
    image: z
      .string()
      .min(1)
      .optional()
      .describe('Image with postgres and the Kanri agent. Default: ghcr.io/kanri-dev/postgres:<postgresVersion>.'),
    imagePullPolicy: z
      .enum(['Always', 'Never', 'IfNotPresent'])
      .optional()
      .describe(
        "When the nodes pull the image of the instances and the repo host. Default: Kubernetes' (IfNotPresent for a tag other than latest).",
      ),
    imagePullSecrets: z
      .array(z.object({ name: z.string().min(1).max(253).describe("A Secret in the cluster's namespace.") }))
      .max(16)
      .optional()
      .describe(
        'Secrets with the registry credentials the nodes pull the image of the instances and the repo host with.',
      ),
    supplementalGroups: z
      .array(z.number().int().min(1).max(2147483647))
      .max(32)
      .optional()
      .describe(
        'Supplemental groups of the instance and repo host Pods, as in PGO: for storage that grants access to a group.',
      ),
    disableDefaultPodScheduling: z
      .boolean()
      .optional()
      .describe(
        "Leave out Kanri's default scheduling, a preferred anti-affinity between a cluster's instances (an instance set's affinity replaces it anyway).",
      ),
    instances: z
      .array(instanceSet)
      .min(1)
      .max(8)
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'self.all(a, !has(a.name) || self.exists_one(b, has(b.name) && b.name == a.name))',
            message: 'instance set names must be unique',
          },
          {
            // Sets are matched by name; an unnamed one only when it is the only set before and after
            // (items of a list without keys cannot be matched otherwise). The operator never shrinks
            // a claim either way: Kubernetes cannot.
            rule: 'self.all(i, !has(i.name) || !oldSelf.exists(o, has(o.name) && o.name == i.name && quantity(i.dataVolumeClaimSpec.resources.requests.storage).isLessThan(quantity(o.dataVolumeClaimSpec.resources.requests.storage)))) && !(self.size() == 1 && oldSelf.size() == 1 && !has(self[0].name) && !has(oldSelf[0].name) && quantity(self[0].dataVolumeClaimSpec.resources.requests.storage).isLessThan(quantity(oldSelf[0].dataVolumeClaimSpec.resources.requests.storage)))',
            message: DATA_VOLUME_SHRINK_MESSAGE,
          },
          {
            // On an update (a transition rule); a new cluster's sets are checked on the cluster. See
            // RESERVED_CLUSTER_NAME_PATTERN: a set that exists keeps its name.
            rule: "self.all(i, !has(i.name) || !i.name.contains('-') || oldSelf.exists(o, has(o.name) && o.name == i.name))",
            message: NEW_SET_NAME_MESSAGE,
          },
        ],
      })
      .describe('Instance sets. The cluster has one primary; every other instance is a streaming replica.'),
    users: z
      .array(user)
      .max(64)
      .optional()
      .describe(
        'Database users and the databases they own. Omitted, as in PGO: one user named after the cluster, owning a database of that name (none for a cluster named postgres); [] declares none.',
      ),
    databaseInitSQL: z
      .object({
        name: z.string().min(1).max(253).describe("The ConfigMap, in the cluster's namespace."),
        key: z.string().min(1).max(253).describe('The key of the ConfigMap that holds the SQL.'),
      })
      .optional()
      .describe(
        "SQL that psql runs once on the primary, as the superuser in database postgres, after spec.users' roles and databases exist (PGO's field: psql meta-commands such as \\c work). It stops at the first error (ON_ERROR_STOP), and a failed script runs again only once its text changes; status.databaseInitSQLRun says how the last run went. status.databaseInitSQL names the ConfigMap once it ran; removing this field removes both. To run SQL again, name another key or ConfigMap.",
      ),
    userRemovalPolicy: z
      .enum(['Retain', 'Drop'])
      .default('Retain')
      .describe(
        'What happens to the role of a user removed from users: Retain keeps it and its Secret (listed in status.removedUsers); Drop drops the role, and deletes its Secret, once it owns no database. Databases are never dropped.',
      ),
    config: z
      .object({
        // Values are strings or integers, as in PGO (`on`/`off` for booleans); a typed map lets CEL see its keys.
        parameters: z
          .record(z.string().max(63), z.unknown().meta({ 'x-kubernetes-int-or-string': true, maxLength: 4096 }))
          .optional()
          .meta({ maxProperties: 256, 'x-kubernetes-validations': parameterRules })
          .describe('postgresql.conf parameters, e.g. max_connections: 200. Applied with a reload.'),
      })
      .optional()
      .describe('PostgreSQL configuration.'),
    service: serviceSpec('<name>-primary (read-write)').optional(),
    replicaService: serviceSpec('<name>-replicas (read-only)').optional(),
    patroni: patroni.optional(),
    ha: ha.optional(),
    tls: tls.optional(),
    enableSuperuserAccess: z
      .boolean()
      .default(false)
      .describe(
        "Let the superuser (postgres) log in over the network with the password in Secret <name>-superuser (CloudNativePG's field). Default false: pg_hba refuses it from the network, by password or certificate. No certificate logs the superuser in either way; the instances reach each other's postgres as streaming_replica.",
      ),
    persistentVolumeClaimRetentionPolicy: z
      .object({
        whenScaled: z
          .enum(['Delete', 'Retain'])
          .default('Delete')
          .describe('What happens to the data volume of an instance removed by scaling down.'),
      })
      .optional()
      .describe('Data volumes are always deleted with the cluster (owner references).'),
    backups: backups.optional(),
    dataSource: dataSource.optional(),
    shutdown: z.boolean().optional().describe('Stop every instance, keeping the data volumes.'),
    primaryUpdateStrategy: z
      .enum(['unsupervised', 'supervised'])
      .default('unsupervised')
      .describe(
        'Rolling updates: unsupervised updates the primary after the replicas on its own; supervised waits for a switchover annotation.',
      ),
    primaryUpdateMethod: z
      .enum(['switchover', 'restart'])
      .default('switchover')
      .describe(
        'Rolling updates: switchover hands the primary role to the most up-to-date updated replica first; restart replaces the primary Pod (its shutdown releases the Lease, so the best replica takes over).',
      ),
    paused: z.boolean().optional().describe('Stop reconciling: the operator changes nothing while true.'),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!has(self.ha) || !has(self.ha.synchronous) || self.ha.synchronous.number < self.instances.map(i, i.replicas).sum()',
        message: 'ha.synchronous.number must be less than the number of instances (the primary is not a replica)',
        fieldPath: '.ha.synchronous.number',
      },
      synchronousCommitRule,
      {
        // Each replica streams through one of the primary's WAL senders and slots (10 of each, the
        // agent's), and a replica that re-clones takes two senders meanwhile.
        rule: `self.instances.map(i, i.replicas).sum() <= ${MAX_INSTANCES}`,
        message: `at most ${MAX_INSTANCES} instances in all: each replica takes one of the primary's 10 WAL senders and replication slots, and a clone takes two`,
        fieldPath: '.instances',
      },
    ],
  })
  .describe('Desired state of a PostgreSQL cluster.');

/**
 * The cluster's name is in the names of what the operator makes, each with a limit the API server
 * or postgres would enforce only after the cluster was admitted: Services `<name>-replicas` (a
 * DNS-1035 label: a letter first, at most 63), and replication slots `kanri_<name>_<set>_<n>`
 * (postgres names: at most 63 bytes; two digits kept for the ordinal). An unset set name is
 * `instance<N>`, 9 characters with at most 8 sets.
 */
const MAX_NAME = 63 - '-replicas'.length;
const MAX_NAME_AND_SET = 63 - 'kanri___NN'.length;
/**
 * What would make two clusters' generated names meet (contract/names.test.ts reasons it through
 * for every kind): user `u` of cluster `x` has Secret `x-pguser-u`, so a cluster named
 * `x-pguser[-…]` would share Secret names with `x`'s users; Pods are `<cluster>-<set>-<n>`, so set
 * `b-c` of cluster `a` and set `c` of cluster `a-b` would share `a-b-c-0` (the rule on
 * spec.instances). Refused for new clusters and sets only (`optionalOldSelf`): an existing one
 * keeps working, and an object that is not its own is refused by the operator instead
 * (operator/ownership.ts).
 */
export const RESERVED_CLUSTER_NAME_PATTERN = '-pguser(-|$)';
const nameRules = [
  {
    rule: `self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= ${MAX_NAME}`,
    message: `metadata.name must start with a letter, hold only lower-case letters, digits and '-', and be at most ${MAX_NAME} characters: it names the cluster's Services (<name>-replicas is a DNS label of at most 63)`,
  },
  {
    rule: `self.spec.instances.all(i, self.metadata.name.size() + (has(i.name) ? i.name.size() : 9) <= ${MAX_NAME_AND_SET})`,
    message: `metadata.name and each spec.instances[].name together must be at most ${MAX_NAME_AND_SET} characters: replication slots are named kanri_<name>_<set>_<n>, and postgres names hold at most 63 bytes`,
    fieldPath: '.spec.instances',
  },
  {
    rule: `oldSelf.hasValue() || !self.metadata.name.matches('${RESERVED_CLUSTER_NAME_PATTERN}')`,
    optionalOldSelf: true,
    message:
      "metadata.name must not contain '-pguser-' nor end in '-pguser': user u of cluster x has the Secret x-pguser-u, so a cluster named x-pguser-… would share Secret names with x's users",
  },
  {
    // On create only; on an update, the transition rule on spec.instances.
    rule: "oldSelf.hasValue() || self.spec.instances.all(i, !has(i.name) || !i.name.contains('-'))",
    optionalOldSelf: true,
    message: NEW_SET_NAME_MESSAGE,
    fieldPath: '.spec.instances',
  },
];

/**
 * PostgresCluster, `postgres.kanri.dev/v1` (short name `pgc`).
 *
 * @example
 * ```ts
 * const cluster: PostgresCluster = {
 *   apiVersion: PostgresClusterResource.apiVersion,
 *   kind: 'PostgresCluster',
 *   metadata: { name: 'hippo', namespace: 'default' },
 *   spec: { postgresVersion: 15, instances: [{ replicas: 3, dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] },
 * };
 * ```
 */
export const PostgresClusterResource = defineResource({
  group: GROUP,
  kind: KIND,
  plural: PLURAL,
  shortNames: ['pgc'],
  categories: ['postgres'],
  description: 'A PostgreSQL cluster: one primary and streaming replicas, managed by the Kanri operator.',
  versions: {
    v1: {
      spec: postgresClusterSpec,
      status: postgresClusterStatus,
      validations: nameRules,
      // PGO's fields Kanri does not implement: refused by name for every client, never pruned.
      refusedFields: PGO_REFUSED_FIELDS,
      printerColumns: [
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        { name: 'Instances', type: 'integer', jsonPath: '.status.desiredInstances' },
        { name: 'Ready-Instances', type: 'integer', jsonPath: '.status.readyInstances' },
        { name: 'Primary', type: 'string', jsonPath: '.status.primary' },
        // What runs, from the primary's report, not what the spec asks for.
        { name: 'Version', type: 'string', jsonPath: '.status.postgresVersion' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  },
});

export type PostgresCluster = typeof PostgresClusterResource.$object;
export type PostgresClusterSpec = PostgresCluster['spec'];
export type PostgresClusterStatus = NonNullable<PostgresCluster['status']>;
