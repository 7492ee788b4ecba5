/**
 * What the primary keeps in order besides serving: the operator's own roles, one replication slot
 * per other Pod, and the declared users and databases. Each task reads the current state and acts
 * on the difference, so running it again is harmless.
 */
import { type KubeClient, NotFoundError } from '@kanri/client';
import { names, REPLICATION_USER, SUPERUSER } from '../../contract/index.js';
import type { AgentConfig } from '../config.js';
import { planSlots } from '../plan/slots-plan.js';
import { type ExistingRole, planSystemRoles, planUsers, readDeclaredUsers, type UserStep } from '../plan/users-plan.js';
import type { LocalDb } from './local-db.js';
import type { Logger } from './logger.js';
import type { Redactor } from './redactor.js';

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

/** Creates streaming_replica and keeps its password and the superuser's equal to the agent's Secrets. */
export async function ensureSystemRoles(db: LocalDb, config: AgentConfig, log: Logger): Promise<void> {
  const roles = await readRoles(db, [SUPERUSER, REPLICATION_USER]);
  await runSteps(db, planSystemRoles(config.superuserPassword, config.replicationPassword, roles), log);
}

/** One physical slot per other Pod of the cluster; slots of Pods that are gone are dropped. */
export async function reconcileSlots(
  db: LocalDb,
  config: AgentConfig,
  podNames: readonly string[],
  log: Logger,
): Promise<void> {
  const slots = await db.query<{ slot_name: string; active: boolean }>(
    `SELECT slot_name, active FROM pg_replication_slots WHERE slot_type = 'physical'`,
  );
  const plan = planSlots(
    config.podName,
    podNames,
    slots.map((slot) => ({ name: slot.slot_name, active: slot.active })),
  );
  for (const slot of plan.create) {
    await db.query('SELECT pg_create_physical_replication_slot($1)', [slot]);
    log.info({ slot }, 'created a replication slot');
  }
  for (const slot of plan.drop) {
    await db.query('SELECT pg_drop_replication_slot($1)', [slot]);
    log.info({ slot }, 'dropped the replication slot of a Pod that is gone');
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
 * Roles and databases of `spec.users`. Invalid entries are logged (naming the user and the field)
 * and skipped; users whose Secret does not exist yet are skipped until it does.
 */
export async function reconcileUsers(
  db: LocalDb,
  client: KubeClient,
  config: AgentConfig,
  spec: unknown,
  log: Logger,
  redactor: Redactor,
): Promise<void> {
  const { users, errors } = readDeclaredUsers(spec);
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
}
