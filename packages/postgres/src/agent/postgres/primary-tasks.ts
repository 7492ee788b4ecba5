/**
 * What the primary keeps in order besides serving: the operator's own roles, one replication slot
 * per other Pod, and the declared users and databases. Each task reads the current state and acts
 * on the difference, so running it again is harmless.
 */
import { type KubeClient, NotFoundError } from '@kanri/client';
import pg from 'pg';
import type { PostgresClusterSpec } from '../../api/postgres-cluster.js';
import { names, REPLICATION_USER, SUPERUSER, type UsersReport } from '../../contract/index.js';
import type { AgentConfig } from '../config.js';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import {
  CHECKPOINTED_TIMELINE_SQL,
  type CheckpointedTimelineRow,
  checkpointedTimeline,
} from '../plan/leadership/rejoin-plan.js';
import { planSlots } from '../plan/slots-plan.js';
import {
  MANAGED_ROLE_COMMENT,
  type ManagedRole,
  planMarks,
  planRemovedUsers,
} from '../plan/users/removed-users-plan.js';
import {
  type ExistingRole,
  planRewindGrants,
  planSystemRoles,
  planUsers,
  REWIND_FUNCTIONS,
  readDeclaredUsers,
  type UserStep,
} from '../plan/users/users-plan.js';
import type { LocalDb } from './local-db.js';

interface RoleRow {
  rolname: string;
  rolsuper: boolean;
  rolcreatedb: boolean;
  rolcreaterole: boolean;
  rolreplication: boolean;
  rolbypassrls: boolean;
  rolcanlogin: boolean;
  rolinherit: boolean;
  rolconnlimit: number;
  rolpassword: string | null;
}

async function readRoles(db: LocalDb, roleNames: readonly string[]): Promise<Map<string, ExistingRole>> {
  const rows = await db.query<RoleRow>(
    `SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin,
            rolinherit, rolconnlimit, rolpassword
     FROM pg_authid WHERE rolname = ANY($1::text[])`,
    [roleNames],
  );
  return new Map(
    rows.map((row) => [
      row.rolname,
      {
        password: row.rolpassword,
        attributes: {
          superuser: row.rolsuper,
          createdb: row.rolcreatedb,
          createrole: row.rolcreaterole,
          replication: row.rolreplication,
          bypassrls: row.rolbypassrls,
          login: row.rolcanlogin,
          inherit: row.rolinherit,
          connectionLimit: row.rolconnlimit,
        },
      },
    ]),
  );
}

async function runSteps(db: LocalDb, steps: readonly UserStep[], log: Logger): Promise<void> {
  for (const step of steps) {
    await db.query(step.sql);
    // The SQL itself is not logged: it carries password verifiers.
    log.info({ action: step.action, name: step.name }, 'applied a role or database change');
  }
}

/**
 * Creates streaming_replica, keeps its password and the superuser's equal to the agent's Secrets,
 * and lets it run pg_rewind against this server (planRewindGrants), the only way members rewind.
 */
export async function ensureSystemRoles(db: LocalDb, config: AgentConfig, log: Logger): Promise<void> {
  const roles = await readRoles(db, [SUPERUSER, REPLICATION_USER]);
  await runSteps(db, planSystemRoles(config.superuserPassword, config.replicationPassword, roles), log);
  const granted = await db.query<{ fn: string }>(
    "SELECT fn FROM unnest($1::text[]) AS fn WHERE has_function_privilege($2, fn, 'EXECUTE')",
    [REWIND_FUNCTIONS, REPLICATION_USER],
  );
  await runSteps(db, planRewindGrants(new Set(granted.map((row) => row.fn))), log);
}

/**
 * Checkpoints once pg_control lags the timeline this primary writes on, unless `running` (a
 * checkpoint of this leadership's) is under way: a former primary rewinding from here waits until
 * pg_control has the new timeline (postgres/rewind.ts), and before PostgreSQL 15 only a superuser, which
 * no member is on another's, may ask for a checkpoint. The promotion asks at once (promote.ts);
 * this catches a promotion whose checkpoint never ran (the agent restarted, the query failed).
 * Resolves as soon as a checkpoint is asked for, with its completion (`done`), or undefined.
 */
export async function checkpointIfTimelineLags(
  db: LocalDb,
  running: Promise<void> | undefined,
  log: Logger,
): Promise<{ readonly done: Promise<void> } | undefined> {
  if (running) return undefined;
  const [row] = await db.query<CheckpointedTimelineRow>(CHECKPOINTED_TIMELINE_SQL);
  const state = checkpointedTimeline(row);
  if (!state || state.checkpointed) return undefined;
  log.info({ timeline: state.timeline }, "checkpointing: pg_control lags this primary's timeline");
  const done = db.query('CHECKPOINT').then(
    () => undefined,
    (error: unknown) => log.warn({ err: error }, 'checkpoint failed; the next pass tries again'),
  );
  return { done };
}

/** One physical slot per other Pod of the cluster; slots of Pods that are gone are dropped. */
export async function reconcileSlots(
  db: LocalDb,
  config: AgentConfig,
  podNames: readonly string[],
  log: Logger,
): Promise<void> {
  const slots = await db.query<{ slot_name: string; active: boolean; wal_status: string | null }>(
    `SELECT slot_name, active, wal_status FROM pg_replication_slots WHERE slot_type = 'physical'`,
  );
  const plan = planSlots(
    config.podName,
    podNames,
    slots.map((slot) => ({ name: slot.slot_name, active: slot.active, lost: slot.wal_status === 'lost' })),
  );
  for (const slot of plan.recreate) {
    // Slots are not transactional: a clone that comes between the two fails and tries again.
    await db.query('SELECT pg_drop_replication_slot($1)', [slot]);
    await db.query('SELECT pg_create_physical_replication_slot($1)', [slot]);
    log.warn(
      { slot },
      'recreated a replication slot that max_slot_wal_keep_size had invalidated: its replica fell too far behind and re-clones',
    );
  }
  await createSlots(db, plan.create, log);
  for (const slot of plan.drop) {
    await db.query('SELECT pg_drop_replication_slot($1)', [slot]);
    log.info({ slot }, 'dropped the replication slot of a Pod that is gone');
  }
}

/**
 * Creates the physical slots of `podNames` (other than this Pod) that do not exist yet and drops
 * nothing: a standby about to take the Lease prepares its followers' slots with it. Resolves the
 * slots it created.
 */
export async function ensureSlots(
  db: LocalDb,
  config: AgentConfig,
  podNames: readonly string[],
  log: Logger,
): Promise<string[]> {
  const slots = await db.query<{ slot_name: string }>(
    `SELECT slot_name FROM pg_replication_slots WHERE slot_type = 'physical'`,
  );
  const { create } = planSlots(
    config.podName,
    podNames,
    slots.map((slot) => ({ name: slot.slot_name, active: false })),
  );
  await createSlots(db, create, log);
  return create;
}

/** SQLSTATE of "replication slot … already exists". */
const DUPLICATE_OBJECT = '42710';

async function createSlots(db: LocalDb, slots: readonly string[], log: Logger): Promise<void> {
  for (const slot of slots) {
    try {
      await db.query('SELECT pg_create_physical_replication_slot($1)', [slot]);
      log.info({ slot }, 'created a replication slot');
    } catch (error) {
      // A promotion and the primary's first pass may both make it: made is what was wanted.
      if (!(error instanceof pg.DatabaseError) || error.code !== DUPLICATE_OBJECT) throw error;
    }
  }
}

async function readPassword(
  client: KubeClient,
  config: AgentConfig,
  user: string,
  redactor: Redactor,
): Promise<string | undefined> {
  try {
    const secret = await client
      .resource('v1', 'Secret')
      .get(names.userSecret(config.cluster, user), { namespace: config.namespace });
    const encoded = secret.data?.password;
    if (encoded === undefined) return undefined;
    const password = Buffer.from(encoded, 'base64').toString('utf8');
    redactor.add(password);
    return password;
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/**
 * Roles and databases of `spec.users`, then the roles of users no longer declared
 * (removed-users-plan.ts). Invalid entries are logged (naming the user and the field) and skipped;
 * users whose Secret does not exist yet are skipped until it does. Resolves what the report says.
 */
export async function reconcileUsers(
  db: LocalDb,
  client: KubeClient,
  config: AgentConfig,
  cluster: { readonly spec: PostgresClusterSpec | undefined; readonly generation: number },
  log: Logger,
  redactor: Redactor,
): Promise<UsersReport> {
  const { users, errors } = readDeclaredUsers(cluster.spec, config.cluster);
  for (const error of errors) log.error({ cluster: config.cluster }, `invalid user declaration: ${error}`);
  const passwords = new Map<string, string>();
  for (const user of users) {
    const password = await readPassword(client, config, user.name, redactor);
    if (password === undefined) {
      log.warn(
        { user: user.name, secret: names.userSecret(config.cluster, user.name) },
        'the user has no Secret with a password yet; skipped',
      );
      continue;
    }
    passwords.set(user.name, password);
  }
  const roles = await readRoles(
    db,
    users.map((user) => user.name),
  );
  const databases = new Map(
    (
      await db.query<{ datname: string; owner: string }>(
        'SELECT datname, pg_get_userbyid(datdba) AS owner FROM pg_database',
      )
    ).map((row) => [row.datname, row.owner]),
  );
  await runSteps(db, planUsers(users, passwords, roles, databases), log);
  const managed = await readManagedRoles(db);
  for (const sql of planMarks([...passwords.keys()], new Set(managed.map((role) => role.name)))) await db.query(sql);
  const { drop, kept } = planRemovedUsers(
    managed,
    new Set(users.map((user) => user.name)),
    cluster.spec?.userRemovalPolicy ?? 'Retain',
    { unreadableEntries: errors.length > 0 },
  );
  for (const step of drop) {
    try {
      await db.query(step.sql);
      log.info({ user: step.name }, 'dropped the role of a user removed from spec.users (userRemovalPolicy: Drop)');
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) throw error;
      const reason = `DROP ROLE failed: ${error.message}${error.detail ? ` (${error.detail})` : ''}`;
      kept.push({ name: step.name, reason });
      log.warn({ user: step.name, reason }, 'cannot drop the role of a user removed from spec.users; keeping it');
    }
  }
  return { generation: cluster.generation, removed: kept.sort((a, b) => a.name.localeCompare(b.name)) };
}

/** The roles carrying Kanri's mark, with the databases each owns. */
async function readManagedRoles(db: LocalDb): Promise<ManagedRole[]> {
  const rows = await db.query<{ name: string; owned: string[] }>(
    `SELECT r.rolname AS name,
            ARRAY(SELECT d.datname::text FROM pg_database d WHERE d.datdba = r.oid ORDER BY 1) AS owned
     FROM pg_roles r WHERE shobj_description(r.oid, 'pg_authid') = $1`,
    [MANAGED_ROLE_COMMENT],
  );
  return rows.map((row) => ({ name: row.name, ownedDatabases: row.owned }));
}
