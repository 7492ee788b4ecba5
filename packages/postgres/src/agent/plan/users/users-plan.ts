/**
 * Declared users and databases (`spec.users[]`) → the SQL that makes postgres match them. Pure: the
 * caller reads the PostgresCluster, the users' Secrets and the catalogs, and runs the steps.
 * Roles and databases that leave the spec are kept (dropping data is never automatic).
 */
import { effectiveUsers, REPLICATION_USER, SUPERUSER } from '../../../contract/index.js';
import {
  DEFAULT_ROLE_ATTRIBUTES,
  parseRoleOptions,
  type RoleAttributes,
  roleAttributeClauses,
} from './role-options.js';
import { buildScramVerifier, scramVerifierMatches } from './scram.js';
import { quoteIdent, quoteLiteral } from './sql-quote.js';

/** One entry of `spec.users[]`, checked. */
export interface DeclaredUser {
  readonly name: string;
  readonly databases: readonly string[];
  readonly attributes: RoleAttributes;
}

/** A role as the catalog shows it (pg_authid). */
export interface ExistingRole {
  readonly attributes: RoleAttributes;
  /** pg_authid.rolpassword: a SCRAM verifier, or null. */
  readonly password: string | null;
}

export interface UserStep {
  readonly action: 'create-role' | 'alter-role' | 'set-password' | 'create-database' | 'set-database-owner' | 'grant';
  /** The role or database concerned. */
  readonly name: string;
  /** SQL to run; passwords appear only as SCRAM verifiers. */
  readonly sql: string;
}

const RESERVED_ROLES = new Set([SUPERUSER, REPLICATION_USER]);
const RESERVED_DATABASES = new Set(['postgres', 'template0', 'template1']);
/** NAMEDATALEN - 1: postgres would silently truncate longer names. */
const MAX_NAME_BYTES = 63;

function checkName(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'must be a non-empty string';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  if (name.includes('\0')) return 'must not contain NUL';
  return undefined;
}

/**
 * Reads `spec.users` of a PostgresCluster (PGO's default user, named after `cluster`, when it is
 * omitted: contract/default-user.ts). Each invalid entry is left out with an error that names the
 * user and the field, so one bad entry does not block the others.
 *
 * @example
 * ```ts
 * const { users, errors } = readDeclaredUsers({ users: [{ name: 'app', databases: ['app'], options: 'CREATEDB' }] });
 * ```
 */
export function readDeclaredUsers(spec: unknown, cluster: string): { users: DeclaredUser[]; errors: string[] } {
  const users: DeclaredUser[] = [];
  const errors: string[] = [];
  const given = (spec as { users?: unknown } | undefined)?.users;
  const list = given === undefined || given === null ? effectiveUsers(undefined, cluster) : given;
  if (!Array.isArray(list)) return { users, errors: ['spec.users must be a list'] };
  const seen = new Set<string>();
  list.forEach((entry: unknown, index) => {
    const user = readUser(entry, `spec.users[${index}]`, seen);
    if (typeof user === 'string') errors.push(user);
    else users.push(user);
  });
  return { users, errors };
}

/** One entry of spec.users, or the error that names what is wrong with it. */
function readUser(entry: unknown, field: string, seen: Set<string>): DeclaredUser | string {
  const raw = (entry ?? {}) as { name?: unknown; databases?: unknown; options?: unknown };
  const nameProblem = checkName(raw.name);
  if (nameProblem) return `${field}.name ${nameProblem}`;
  const name = raw.name as string;
  const who = `user "${name}" (${field})`;
  if (RESERVED_ROLES.has(name) || name.startsWith('pg_'))
    return `${who}: ${field}.name is reserved for postgres or the operator`;
  if (seen.has(name)) return `${who}: ${field}.name is declared twice`;
  seen.add(name);
  if (raw.options !== undefined && typeof raw.options !== 'string') return `${who}: ${field}.options must be a string`;
  const options = parseRoleOptions(raw.options as string | undefined);
  if (!options.ok) return `${who}: ${field}.options: ${options.error}`;
  const databases = raw.databases ?? [];
  if (!Array.isArray(databases)) return `${who}: ${field}.databases must be a list`;
  for (const [i, db] of databases.entries()) {
    const problem = checkName(db);
    if (problem) return `${who}: ${field}.databases[${i}] ${problem}`;
    if (RESERVED_DATABASES.has(db as string)) return `${who}: ${field}.databases[${i}] "${db}" is reserved`;
  }
  return { name, databases: databases as string[], attributes: options.attributes };
}

function changedAttributes(want: RoleAttributes, have: RoleAttributes): Partial<RoleAttributes> {
  const diff: Partial<Record<keyof RoleAttributes, unknown>> = {};
  for (const key of Object.keys(want) as (keyof RoleAttributes)[]) {
    if (want[key] !== have[key]) diff[key] = want[key];
  }
  return diff as Partial<RoleAttributes>;
}

/**
 * The steps that bring roles and databases to the declared state. A user whose password is not
 * known yet (its Secret is missing) is left out by the caller. A database already owned by another
 * declared user keeps its first owner.
 *
 * @example
 * ```ts
 * const steps = planUsers(users, new Map([['app', 'pw']]), existingRoles, existingDatabases);
 * for (const step of steps) await db.query(step.sql);
 * ```
 */
export function planUsers(
  users: readonly DeclaredUser[],
  passwords: ReadonlyMap<string, string>,
  roles: ReadonlyMap<string, ExistingRole>,
  databases: ReadonlyMap<string, string>,
  makeVerifier: (password: string) => string = (password) => buildScramVerifier(password),
): UserStep[] {
  const steps: UserStep[] = [];
  const owners = new Map<string, string>();
  for (const user of users) {
    const password = passwords.get(user.name);
    if (password === undefined) continue;
    const role = quoteIdent(user.name);
    const existing = roles.get(user.name);
    if (!existing) {
      const clauses = roleAttributeClauses(user.attributes).join(' ');
      steps.push({
        action: 'create-role',
        name: user.name,
        sql: `CREATE ROLE ${role} WITH ${clauses} PASSWORD ${quoteLiteral(makeVerifier(password))}`,
      });
    } else {
      const diff = changedAttributes(user.attributes, existing.attributes);
      if (Object.keys(diff).length > 0)
        steps.push({
          action: 'alter-role',
          name: user.name,
          sql: `ALTER ROLE ${role} WITH ${roleAttributeClauses(diff).join(' ')}`,
        });
      if (!scramVerifierMatches(existing.password, password))
        steps.push({
          action: 'set-password',
          name: user.name,
          sql: `ALTER ROLE ${role} WITH PASSWORD ${quoteLiteral(makeVerifier(password))}`,
        });
    }
    for (const db of user.databases) {
      if (owners.has(db)) continue;
      owners.set(db, user.name);
      const owner = databases.get(db);
      if (owner === undefined)
        steps.push({ action: 'create-database', name: db, sql: `CREATE DATABASE ${quoteIdent(db)} OWNER ${role}` });
      else if (owner !== user.name)
        steps.push({
          action: 'set-database-owner',
          name: db,
          sql: `ALTER DATABASE ${quoteIdent(db)} OWNER TO ${role}`,
        });
    }
  }
  return steps;
}

/**
 * The roles the operator itself relies on: `streaming_replica` (REPLICATION LOGIN) and the
 * superuser's password, both kept equal to the Secrets the agent was started with.
 */
export function planSystemRoles(
  superuserPassword: string,
  replicationPassword: string,
  roles: ReadonlyMap<string, ExistingRole>,
  makeVerifier: (password: string) => string = (password) => buildScramVerifier(password),
): UserStep[] {
  const replication: DeclaredUser = {
    name: REPLICATION_USER,
    databases: [],
    attributes: { ...DEFAULT_ROLE_ATTRIBUTES, replication: true },
  };
  const steps = planUsers(
    [replication],
    new Map([[REPLICATION_USER, replicationPassword]]),
    roles,
    new Map(),
    makeVerifier,
  );
  if (!scramVerifierMatches(roles.get(SUPERUSER)?.password, superuserPassword))
    steps.push({
      action: 'set-password',
      name: SUPERUSER,
      sql: `ALTER ROLE ${quoteIdent(SUPERUSER)} WITH PASSWORD ${quoteLiteral(makeVerifier(superuserPassword))}`,
    });
  return steps;
}

/**
 * The functions pg_rewind reads the source's files with, which PostgreSQL documents as all a
 * non-superuser needs: members rewind as streaming_replica, which may read every file through
 * replication already, so no superuser logs in over the network. Privileges on functions are per
 * database: these are granted in `postgres`, the database pg_rewind connects to.
 */
export const REWIND_FUNCTIONS = [
  'pg_catalog.pg_ls_dir(text, boolean, boolean)',
  'pg_catalog.pg_stat_file(text, boolean)',
  'pg_catalog.pg_read_binary_file(text)',
  'pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean)',
] as const;

/**
 * The grants that let streaming_replica run pg_rewind against this server, given the functions of
 * {@link REWIND_FUNCTIONS} it may execute already.
 *
 * @example
 * ```ts
 * planRewindGrants(new Set()); // four GRANT EXECUTE steps
 * planRewindGrants(new Set(REWIND_FUNCTIONS)); // []
 * ```
 */
export function planRewindGrants(granted: ReadonlySet<string>): UserStep[] {
  return REWIND_FUNCTIONS.filter((fn) => !granted.has(fn)).map((fn) => ({
    action: 'grant',
    name: REPLICATION_USER,
    sql: `GRANT EXECUTE ON FUNCTION ${fn} TO ${quoteIdent(REPLICATION_USER)}`,
  }));
}
