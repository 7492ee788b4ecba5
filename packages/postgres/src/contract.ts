/**
 * The contract between the operator and the instance agent: object names, labels, annotations,
 * environment variables and ports. Both sides import it, so they cannot drift apart.
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

/** Labels on every object the operator creates, and on instance Pods. */
export const LABEL = {
  cluster: `${GROUP}/cluster`,
  /** The instance set (`spec.instances[].name`). */
  instanceSet: `${GROUP}/instance-set`,
  /** The instance (= Pod name); also on the Pod's PVC. */
  instance: `${GROUP}/instance`,
  /** `primary` or `replica`, set by the agent on its own Pod; Services select on it. */
  role: `${GROUP}/role`,
} as const;

export const ROLE = { primary: 'primary', replica: 'replica' } as const;
export type Role = (typeof ROLE)[keyof typeof ROLE];

export const ANNOTATION = {
  /** JSON {@link InstanceReport} written by the agent on its own Pod. */
  status: `${GROUP}/status`,
  /**
   * On the PostgresCluster: a planned switchover to the named replica Pod, or `*` for the best one.
   * The primary's agent serves each value once (see {@link ANNOTATION.switchoverServed}); the
   * operator removes the annotation once the primary changed.
   */
  switchover: `${GROUP}/switchover`,
  /** On the leader Lease: the last switchover annotation value the primary served (or refused). */
  switchoverServed: `${GROUP}/switchover-served`,
  /**
   * On the leader Lease, written by the primary in synchronous mode: the Pods (comma-separated)
   * that hold every acknowledged commit. Only one of them may be promoted by a failover.
   */
  syncStandbys: `${GROUP}/sync-standbys`,
} as const;

/** What the agent reports on its Pod (annotation {@link ANNOTATION.status}). */
export interface InstanceReport {
  role: Role;
  /** postgres accepts connections (and, on a replica, is streaming from the primary). */
  ready: boolean;
  /** Timeline of the instance (`pg_control_checkpoint()` or `pg_stat_wal_receiver`). */
  timeline: number;
  /** Database system identifier: every member of one cluster shares it. */
  systemIdentifier: string;
  /** Primary: `pg_current_wal_lsn()`. Replica: last received LSN. */
  receivedLsn: string;
  /** Replica: last replayed LSN. Primary: same as receivedLsn. */
  replayedLsn: string;
  /** Replica: bytes between the primary's current LSN (as last seen) and replayed LSN. 0 on the primary. */
  lagBytes: number;
  /** ISO time of the report. */
  updatedAt: string;
  /** Human-readable reason when not ready. */
  message?: string;
  /**
   * The agent's latest failover decision, e.g. `waiting: no replica within lag limit (db-i-2 lags
   * 20 MiB > 16 MiB)` on a replica, or `promoted: took over from db-i-0 (expired Lease)`.
   */
  failover?: string;
  /** The last switchover this instance took part in, e.g. `switched over to db-i-1 in 1.2 s`. */
  switchover?: string;
  /** How this instance last rejoined after losing the primary role: `pg_rewind …` or `re-cloned …`. */
  rejoin?: string;
  /** Primary in synchronous mode: the published synchronous standbys (see ANNOTATION.syncStandbys). */
  synchronousStandbys?: string[];
}

/** Reasons of the Events the agent records (on the PostgresCluster, or its own Pod). */
export const EVENT_REASON = {
  promoted: 'Promoted',
  failoverWaiting: 'FailoverWaiting',
  fenced: 'Fenced',
  rewound: 'Rewound',
  rewindFailed: 'RewindFailed',
  recloned: 'Recloned',
  switchover: 'Switchover',
  switchoverRefused: 'SwitchoverRefused',
  synchronousStandbys: 'SynchronousStandbys',
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
  pod: (cluster: string, set: string, ordinal: number) => `${cluster}-${set}-${ordinal}`,
  pvc: (pod: string) => `${pod}-pgdata`,
  /** Physical replication slot the primary keeps for a replica Pod. */
  slot: (pod: string) => `kanri_${pod.replace(/[^a-z0-9_]/g, '_')}`,
};

/** Database roles the operator manages besides the declared users. */
export const SUPERUSER = 'postgres';
export const REPLICATION_USER = 'streaming_replica';

export const PORT = { postgres: 5432, agent: 8000 } as const;

/** Paths inside the instance container (the process node maps them to local directories). */
export const PATH = {
  /** PVC mount; PGDATA is `${data}/pgdata`. */
  data: '/pgdata',
  /** emptyDir for the unix socket and lock files. */
  run: '/run/postgresql',
} as const;

/** Environment of the agent container, set by the operator's Pod builder. */
export const ENV = {
  cluster: 'PGC_CLUSTER',
  podName: 'POD_NAME',
  namespace: 'POD_NAMESPACE',
  podIP: 'POD_IP',
  /** `initdb` on the very first instance of a never-initialised cluster, else `basebackup`. */
  bootstrap: 'PGC_BOOTSTRAP',
  superuserPassword: 'PGC_SUPERUSER_PASSWORD',
  replicationPassword: 'PGC_REPLICATION_PASSWORD',
  postgresVersion: 'PGC_POSTGRES_VERSION',
  leaseDurationSeconds: 'PGC_LEASE_DURATION_SECONDS',
  renewDeadlineSeconds: 'PGC_RENEW_DEADLINE_SECONDS',
  retryPeriodSeconds: 'PGC_RETRY_PERIOD_SECONDS',
} as const;

export type Bootstrap = 'initdb' | 'basebackup';

/** The keys of the ConfigMap names.config(cluster) the operator renders and the agent reads. */
export const CONFIG_KEY = { parameters: 'postgresql.conf', hba: 'pg_hba.conf' } as const;

/**
 * Settings the agent always sets itself (replication, fencing and the Pod's network depend on
 * them). The API refuses them in `spec.config.parameters`, so no value is silently dropped.
 */
export const AGENT_OWNED_SETTINGS = [
  'listen_addresses',
  'port',
  'unix_socket_directories',
  'unix_socket_permissions',
  'cluster_name',
  'hot_standby',
  'wal_level',
  'max_wal_senders',
  'max_replication_slots',
  'wal_log_hints',
  'logging_collector',
  'log_destination',
  'primary_conninfo',
  'primary_slot_name',
  'synchronous_standby_names',
] as const;
export type AgentOwnedSetting = (typeof AGENT_OWNED_SETTINGS)[number];
