/**
 * What the operator's Pod builder gives the agent's container: ports, paths, and the environment,
 * which carries only the instance's identity and its secrets. Every setting comes from the typed
 * spec instead (see ha-defaults.ts), so a spec change reaches running agents.
 */

/** The agent image's argument that runs the repo host (contract/repo-host.ts) instead of an instance. */
export const REPO_HOST_ARG = 'repo-host';

/**
 * `agent` serves the probes and metrics over plain HTTP (and the peer API while the agent has no
 * peer certificate); `peer` serves the peer API over mutual TLS (contract/postgres-tls.ts).
 */
export const PORT = { postgres: 5432, agent: 8000, peer: 8001 } as const;

/** Paths inside the instance container (the process node maps them to local directories). */
export const PATH = {
  /** PVC mount; PGDATA is `${data}/pgdata`. */
  data: '/pgdata',
  /** emptyDir for the unix socket and lock files. */
  run: '/run/postgresql',
  /**
   * The passwords, as files of a read-only projected Secret volume (CREDENTIAL_FILE): in the
   * environment they would be readable in /proc/<pid>/environ by anything of the same user.
   */
  credentials: '/etc/kanri/credentials',
} as const;

/** The files under PATH.credentials, each the `password` key of its Secret. */
export const CREDENTIAL_FILE = {
  superuser: 'superuser-password',
  replication: 'replication-password',
} as const;

/**
 * Environment of the agent container, set by the operator's Pod builder: the instance's identity,
 * how it bootstraps, and its secrets. Settings never travel here (they would be frozen at Pod
 * creation): the agent reads them from the typed PostgresCluster spec.
 */
export const ENV = {
  cluster: 'PGC_CLUSTER',
  podName: 'POD_NAME',
  namespace: 'POD_NAMESPACE',
  podIP: 'POD_IP',
  /** `initdb` on the very first instance of a never-initialised cluster, else `basebackup`. */
  bootstrap: 'PGC_BOOTSTRAP',
  /**
   * The passwords in the environment, for an agent run outside a Pod (the agent tests). The
   * operator never sets them: Pods get the files under PATH.credentials, read when these are unset.
   */
  superuserPassword: 'PGC_SUPERUSER_PASSWORD',
  replicationPassword: 'PGC_REPLICATION_PASSWORD',
  /**
   * `true` for an agent run outside the operator's Pods (the agent tests, with no operator to issue
   * names.postgresTls): postgres may start without TLS while the agent has none. The operator never
   * sets it: its instances never start postgres on the network without the cluster's TLS material.
   */
  tlsOptional: 'PGC_TLS_OPTIONAL',
  /** With bootstrap `restore`: which restore (the annotation's value, or `clone`); each id runs once. */
  restoreId: 'PGC_RESTORE_ID',
  /**
   * On the one Pod a major upgrade creates: the major its PGDATA holds (e.g. `15`). Only with it
   * does the agent run `pg_upgrade` on data of an older major (agent/roles/major-upgrade.ts).
   */
  majorUpgradeFrom: 'PGC_MAJOR_UPGRADE_FROM',
  /**
   * Set by the image, not the operator: where the image keeps other majors' programs, as
   * `14=/usr/lib/postgresql/14/bin;16=…`. Without it, Debian's layout `/usr/lib/postgresql/<major>/bin`.
   */
  pgBinDirs: 'KANRI_PG_BIN_DIRS',
} as const;

/**
 * `initdb` on the first instance of a new cluster, `restore` on the instance that restores from a
 * repo (a clone's first instance, or the instance an in-place restore keeps), else `basebackup`.
 */
export type Bootstrap = 'initdb' | 'basebackup' | 'restore';

/** The keys of the ConfigMap names.config(cluster) the operator renders and the agent reads. */
export const CONFIG_KEY = {
  parameters: 'postgresql.conf',
  hba: 'pg_hba.conf',
  /** JSON RestoreSource (restore-source.ts), present while an instance must restore from a repo. */
  restoreSource: 'restore-source.json',
} as const;
