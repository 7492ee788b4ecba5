/**
 * Names both sides of the operator ↔ agent protocol use: the API group, labels, annotations,
 * Event reasons and the names of every object the operator creates for a cluster.
 *
 * The operator owns the cluster's shape (Pods, PVCs, Services, Secrets, ConfigMap). The agent
 * owns what happens inside one Pod (postgres, replication, the leader Lease) and reports on its
 * own Pod; the operator aggregates those reports into the cluster's status.
 */

export const GROUP = 'postgres.kanri.dev';
export const VERSION = 'v1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'PostgresCluster';
export const PLURAL = 'postgresclusters';
/** One pgBackRest backup of a cluster, recorded as its own object (`kubectl get pgbackup`). */
export const BACKUP_KIND = 'PostgresBackup';
export const BACKUP_PLURAL = 'postgresbackups';
/** PGO's PGUpgrade: a major upgrade asked for as an object (operator/upgrade/pg-upgrade-controller.ts). */
export const PGUPGRADE_KIND = 'PGUpgrade';
export const PGUPGRADE_PLURAL = 'pgupgrades';
/** PGO's annotation naming the PGUpgrade a cluster lets upgrade it; Kanri reads it beside its own (ANNOTATION.allowUpgrade). */
export const PGO_ALLOW_UPGRADE = 'postgres-operator.crunchydata.com/allow-upgrade';

/** Labels on every object the operator creates, and on instance Pods. */
export const LABEL = {
  cluster: `${GROUP}/cluster`,
  /** The instance set (`spec.instances[].name`). */
  instanceSet: `${GROUP}/instance-set`,
  /** The instance (= Pod name); also on the Pod's PVC. */
  instance: `${GROUP}/instance`,
  /** `primary` or `replica`, set by the agent on its own Pod; Services select on it. */
  role: `${GROUP}/role`,
  /** On a `spec.users` Secret: the user it holds the password of. */
  user: `${GROUP}/user`,
} as const;

export const ROLE = { primary: 'primary', replica: 'replica' } as const;
export type Role = (typeof ROLE)[keyof typeof ROLE];

export const ANNOTATION = {
  /** JSON {@link InstanceReport} written by the agent on its own Pod. */
  status: `${GROUP}/status`,
  /**
   * On an instance Pod, written by the operator only: the certificate it issued for the public key
   * the Pod's agent reports (`InstanceReport.peerKey`), then the issuing CA's, PEM. The agent's
   * identity on the peer API (contract/postgres-tls.ts, peerCommonName).
   */
  peerCertificate: `${GROUP}/peer-certificate`,
  /**
   * On the PostgresCluster, set by the user (or a rolling update): a planned switchover to the
   * named replica Pod, or `*` for the best one. The operator turns it into one
   * {@link ANNOTATION.switchoverOrder} and removes it once that was served or the primary changed.
   */
  switchover: `${GROUP}/switchover`,
  /**
   * On the PostgresCluster: `true` lets a switchover go ahead while WAL archiving fails (it waits
   * otherwise: the new primary would start a timeline whose history the repo lacks).
   */
  switchoverForce: `${GROUP}/switchover-force`,
  /**
   * On the PostgresCluster, written by the operator with the switchover request it serves: the
   * value of PGO's trigger-switchover annotation last handed to a switchover
   * (operator/switchover/pgo-trigger-plan.ts), so each value is served once.
   */
  pgoSwitchoverServed: `${GROUP}/pgo-switchover-served`,
  /**
   * On the primary's Pod, written by the operator only: `<token>:<target>`
   * (contract/switchover-order.ts), one per switchover request. The agent serves each token once
   * and reports it as `switchoverServed`; the operator then removes it.
   */
  switchoverOrder: `${GROUP}/switchover-order`,
  /**
   * On the leader Lease, written by the primary in synchronous mode: the Pods (comma-separated)
   * that hold every acknowledged commit. Only one of them may be promoted by a failover.
   */
  syncStandbys: `${GROUP}/sync-standbys`,
  /**
   * On the leader Lease, written by the primary in failsafe mode when its members change: JSON
   * `{"holder": <pod>, "members": [<pod>, …]}`, the instances it asks to vouch for it while the API
   * server cannot be reached (Patroni's `/failsafe` key). While the holder's own list is there, an
   * instance not on it never takes the Lease from that holder (agent/plan/leadership/failsafe-plan.ts).
   */
  failsafeMembers: `${GROUP}/failsafe-members`,
  /** On the PostgresCluster: any new value asks for a rolling restart of every instance. */
  restart: `${GROUP}/restart`,
  /**
   * On an instance Pod, set by the operator: a token; the agent restarts postgres in place once
   * per new token (restart-only parameters) and reports it as `restartServed`.
   */
  restartPostgres: `${GROUP}/restart-postgres`,
  /**
   * On the PostgresCluster: the major version (e.g. `16`) a raise of `spec.postgresVersion` may
   * upgrade to. Without it (or with another value) a raised version is refused, since a major
   * upgrade stops every instance for a while (operator/upgrade).
   */
  allowMajorUpgrade: `${GROUP}/allow-major-upgrade`,
  /**
   * On the PostgresCluster: `true` lets a major upgrade start without a recent full backup when
   * backups are configured. The pre-flight check runs regardless.
   */
  forceMajorUpgrade: `${GROUP}/force-major-upgrade`,
  /** On the PostgresCluster: the name of the PGUpgrade that may upgrade it (PGO's `allow-upgrade`). */
  allowUpgrade: `${GROUP}/allow-upgrade`,
  /** On an instance Pod: the hash of the Pod template it was created from (operator/rollout). */
  podTemplateHash: `${GROUP}/pod-template-hash`,
  /**
   * On a Secret a PostgresCluster's spec names (`spec.tls`, `configuration[].secret`): the clusters
   * of its namespace that may use it, comma-separated, or `*` for every one (operator/secret-consent.ts).
   */
  allowedClusters: `${GROUP}/allowed-clusters`,
  /**
   * On a data volume's claim, written by the operator: the filesystem size (bytes, as the agent
   * reported it) when auto-grow last raised the claim. It grows again only once that size moved.
   */
  autoGrownFrom: `${GROUP}/auto-grown-from`,
} as const;

/** Reasons of the Events the agent records (on the PostgresCluster, or its own Pod). */
export const EVENT_REASON = {
  promoted: 'Promoted',
  failoverWaiting: 'FailoverWaiting',
  fenced: 'Fenced',
  rewound: 'Rewound',
  rewindFailed: 'RewindFailed',
  recloned: 'Recloned',
  dataVolumeChecked: 'DataVolumeChecked',
  diskFull: 'DiskFull',
  switchover: 'Switchover',
  switchoverRefused: 'SwitchoverRefused',
  synchronousStandbys: 'SynchronousStandbys',
  restarted: 'Restarted',
  failsafe: 'Failsafe',
  failsafeEnded: 'FailsafeEnded',
  steppedDown: 'SteppedDown',
  /** An instance does not start postgres while the cluster's ConfigMap or TLS Secret is missing (agent/start-gate.ts). */
  waitingForMaterial: 'WaitingForMaterial',
  /** The primary ran spec.databaseInitSQL (Normal), or it failed or could not be read (Warning). */
  databaseInitSql: 'DatabaseInitSQL',
  /** The operator raised a data volume's claim (the spec's size, or auto-grow). */
  volumeResizing: 'VolumeResizing',
} as const;

/** Names of the objects the operator creates for a cluster. */
export const names = {
  primaryService: (cluster: string) => `${cluster}-primary`,
  replicasService: (cluster: string) => `${cluster}-replicas`,
  /** Headless Service for the Pods. */
  podsService: (cluster: string) => `${cluster}-pods`,
  superuserSecret: (cluster: string) => `${cluster}-superuser`,
  replicationSecret: (cluster: string) => `${cluster}-replication`,
  userSecret: (cluster: string, user: string) => `${cluster}-pguser-${user}`,
  /**
   * ConfigMap with `postgresql.conf` (parameters) and `pg_hba.conf`, rendered by the operator. The
   * agent reads it through the API and reloads postgres when it changes: no volume propagation delay.
   */
  config: (cluster: string) => `${cluster}-config`,
  /** The leader Lease: its holder (a Pod name) is the primary. */
  leaderLease: (cluster: string) => `${cluster}-leader`,
  /** ServiceAccount, Role and RoleBinding the instance Pods run with. */
  instanceServiceAccount: (cluster: string) => `${cluster}-instance`,
  pdb: (cluster: string) => `${cluster}-pdb`,
  /** Only the cluster's own Pods reach the agents' and pgBackRest's ports (operator/builders/network-policy.ts). */
  networkPolicy: (cluster: string) => `${cluster}-members`,
  /** A clone's way to its source's repo host while it restores (operator/builders/network-policy.ts). */
  cloneSourcePolicy: (cluster: string) => `${cluster}-clone-source`,
  pod: (cluster: string, set: string, ordinal: number) => `${cluster}-${set}-${ordinal}`,
  pvc: (pod: string) => `${pod}-pgdata`,
  /** The repo host Pod (contract/repo-host.ts), present while the spec declares a volume repo. */
  repoHost: (cluster: string) => `${cluster}-repo-host`,
  /**
   * ServiceAccount, Role and RoleBinding the repo host runs with (contract/repo-host-rbac.ts): its
   * own, never the instances'. Named as its Pod, which its admission policy checks.
   */
  repoHostServiceAccount: (cluster: string) => `${cluster}-repo-host`,
  /** The PVC of a volume repo, mounted by the repo host (PGO's name). */
  repoVolume: (cluster: string, repo: string) => `${cluster}-${repo}`,
  /**
   * Every Pod's pgBackRest certificate and key, as clusters from before per-Pod keys have it
   * (contract/repo-host.ts); retired by the operator once every Pod publishes its own key.
   */
  pgbackrestTls: (cluster: string) => `${cluster}-pgbackrest-tls`,
  /** The CA that issues them; the operator alone reads it. */
  pgbackrestCa: (cluster: string) => `${cluster}-pgbackrest-ca`,
  /**
   * What a clone of another cluster's volume repo held before clone grants (contract/clone-gateway.ts):
   * a year-long client certificate from the source's CA, with its key. Deleted by the operator.
   */
  pgbackrestSourceTls: (cluster: string) => `${cluster}-pgbackrest-source-tls`,
  /**
   * PostgreSQL's TLS material (contract/postgres-tls.ts): the server certificate clients verify,
   * and the replication user's client certificate. Read by the agents through the API.
   */
  postgresTls: (cluster: string) => `${cluster}-postgres-tls`,
  /**
   * The CA that issues them (unless the spec names a server Secret); the operator alone reads it.
   * Its ConfigMap namesake, names.clientCa, holds `ca.crt` alone.
   */
  postgresCa: (cluster: string) => `${cluster}-postgres-ca`,
  /**
   * Where versions before issue 37 kept names.postgresCa, moved from on the first reconcile: cluster
   * `x-pgbackrest`'s `x-pgbackrest-ca` was cluster `x`'s names.pgbackrestCa.
   */
  legacyPostgresCa: (cluster: string) => `${cluster}-ca`,
  /**
   * ConfigMap with `ca.crt` alone: what clients verify the server with (the cluster's CA, or the
   * server Secret's `ca.crt`), so an application needs no access to a Secret that holds keys.
   */
  clientCa: (cluster: string) => `${cluster}-postgres-ca`,
  /** Physical replication slot the primary keeps for a replica Pod. */
  slot: (pod: string) => `kanri_${pod.replace(/[^a-z0-9_]/g, '_')}`,
};

/** Database roles the operator manages besides the declared users. */
export const SUPERUSER = 'postgres';
export const REPLICATION_USER = 'streaming_replica';
