/**
 * Users that left `spec.users`. The agent marks every role it creates for `spec.users` with a
 * comment, so that the database itself remembers which roles are Kanri's: a role the operator
 * never declared (made by hand, or by an extension) is never reported, let alone dropped.
 *
 * `userRemovalPolicy: Retain` (the default, as PGO) keeps a removed user's role and reports it;
 * `Drop` drops the role once no database it owns remains. Databases are never dropped: the user
 * drops them (or hands them to another owner), and the role follows on the next pass. Pure.
 */
import type { RemovedUser } from '../../../contract/index.js';
import { quoteIdent, quoteLiteral } from './sql-quote.js';

/** The comment on every role Kanri created or adopted for `spec.users` (pg_shdescription). */
export const MANAGED_ROLE_COMMENT = 'Kanri: declared in spec.users';

/** What `userRemovalPolicy` says about a role whose entry left `spec.users`. */
export type UserRemovalPolicy = 'Retain' | 'Drop';

/** A role carrying {@link MANAGED_ROLE_COMMENT}, with the databases it owns. */
export interface ManagedRole {
  readonly name: string;
  readonly ownedDatabases: readonly string[];
}

/** One DROP ROLE to run; its failure (objects the role still owns) keeps it, with the error as reason. */
export interface DropRoleStep {
  readonly name: string;
  readonly sql: string;
}

/**
 * The SQL that marks a declared role as Kanri's.
 *
 * @example
 * ```ts
 * markRoleSql('app'); // COMMENT ON ROLE "app" IS 'Kanri: declared in spec.users'
 * ```
 */
export function markRoleSql(role: string): string {
  return `COMMENT ON ROLE ${quoteIdent(role)} IS ${quoteLiteral(MANAGED_ROLE_COMMENT)}`;
}

/**
 * The marks missing on declared roles: those just created, and those made before Kanri marked
 * its roles (adopted on the first pass that sees them declared).
 *
 * @example
 * ```ts
 * planMarks(['app', 'reports'], new Set(['app'])); // [markRoleSql('reports')]
 * ```
 */
export function planMarks(declaredWithRole: readonly string[], managed: ReadonlySet<string>): string[] {
  return declaredWithRole.filter((name) => !managed.has(name)).map(markRoleSql);
}

/**
 * Which of Kanri's roles are no longer declared, which to drop, and why each of the others is kept.
 *
 * @example
 * ```ts
 * const { drop, kept } = planRemovedUsers([{ name: 'old', ownedDatabases: ['old'] }], new Set(['app']), 'Drop');
 * // drop: [], kept: [{ name: 'old', reason: 'owns database "old": drop it or change its owner, and the role is dropped' }]
 * ```
 */
export function planRemovedUsers(
  managed: readonly ManagedRole[],
  declared: ReadonlySet<string>,
  policy: UserRemovalPolicy,
  { unreadableEntries = false }: { readonly unreadableEntries?: boolean } = {},
): { drop: DropRoleStep[]; kept: RemovedUser[] } {
  const drop: DropRoleStep[] = [];
  const kept: RemovedUser[] = [];
  for (const role of [...managed].sort((a, b) => a.name.localeCompare(b.name))) {
    if (declared.has(role.name)) continue;
    if (policy === 'Retain') {
      kept.push({ name: role.name, reason: 'userRemovalPolicy is Retain: the role and its Secret are kept' });
    } else if (unreadableEntries) {
      // An entry that failed to read is no removal: a typo must never drop a role.
      kept.push({ name: role.name, reason: 'spec.users has invalid entries: nothing is dropped until they are fixed' });
    } else if (role.ownedDatabases.length > 0) {
      const owned = role.ownedDatabases.map((db) => `"${db}"`).join(', ');
      kept.push({
        name: role.name,
        reason: `owns database ${owned}: drop it or change its owner, and the role is dropped`,
      });
    } else {
      drop.push({ name: role.name, sql: `DROP ROLE ${quoteIdent(role.name)}` });
    }
  }
  return { drop, kept };
}
