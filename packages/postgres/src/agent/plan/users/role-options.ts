/**
 * The `options` of a declared user (`spec.users[].options`, as in Crunchy PGO), checked against an
 * allow-list and turned into role attributes. Anything outside the list (PASSWORD, VALID UNTIL,
 * IN ROLE, SQL fragments) is refused: the text is never pasted into SQL.
 */

/** The attributes the agent manages on a declared role, with postgres's defaults for CREATE ROLE … LOGIN. */
export interface RoleAttributes {
  readonly superuser: boolean;
  readonly createdb: boolean;
  readonly createrole: boolean;
  readonly replication: boolean;
  readonly bypassrls: boolean;
  readonly login: boolean;
  readonly inherit: boolean;
  /** -1: no limit. */
  readonly connectionLimit: number;
}

export const DEFAULT_ROLE_ATTRIBUTES: RoleAttributes = {
  superuser: false,
  createdb: false,
  createrole: false,
  replication: false,
  bypassrls: false,
  login: true,
  inherit: true,
  connectionLimit: -1,
};

type Flag = Exclude<keyof RoleAttributes, 'connectionLimit'>;
const FLAGS: Record<string, [Flag, boolean]> = {};
for (const [flag, keyword] of [
  ['superuser', 'SUPERUSER'],
  ['createdb', 'CREATEDB'],
  ['createrole', 'CREATEROLE'],
  ['replication', 'REPLICATION'],
  ['bypassrls', 'BYPASSRLS'],
  ['login', 'LOGIN'],
  ['inherit', 'INHERIT'],
] as const) {
  FLAGS[keyword] = [flag, true];
  FLAGS[`NO${keyword}`] = [flag, false];
}

export type RoleOptionsResult =
  | { readonly ok: true; readonly attributes: RoleAttributes }
  | { readonly ok: false; readonly error: string };

/**
 * Parses an options string such as `CREATEDB CONNECTION LIMIT 10` (case-insensitive).
 *
 * @example
 * ```ts
 * parseRoleOptions('CREATEDB NOINHERIT');     // { ok: true, attributes: { createdb: true, inherit: false, … } }
 * parseRoleOptions('SUPERUSER; DROP TABLE x'); // { ok: false, error: 'unsupported option "SUPERUSER;" …' }
 * ```
 */
export function parseRoleOptions(options: string | undefined): RoleOptionsResult {
  const attributes: { -readonly [K in keyof RoleAttributes]: RoleAttributes[K] } = { ...DEFAULT_ROLE_ATTRIBUTES };
  const seen = new Set<string>();
  const tokens = (options ?? '').trim().split(/\s+/).filter(Boolean);
  const allowed =
    'SUPERUSER, CREATEDB, CREATEROLE, REPLICATION, BYPASSRLS, LOGIN, INHERIT (each also as NO…), CONNECTION LIMIT <n>';
  for (let i = 0; i < tokens.length; i++) {
    const token = (tokens[i] ?? '').toUpperCase();
    const flag = FLAGS[token];
    if (flag) {
      const [name, value] = flag;
      if (seen.has(name)) return { ok: false, error: `option ${name.toUpperCase()} is given more than once` };
      seen.add(name);
      attributes[name] = value;
      continue;
    }
    if (token === 'CONNECTION' && (tokens[i + 1] ?? '').toUpperCase() === 'LIMIT') {
      const raw = tokens[i + 2] ?? '';
      if (!/^-?\d{1,9}$/.test(raw) || Number(raw) < -1)
        return { ok: false, error: `CONNECTION LIMIT needs an integer of -1 or more, not "${raw}"` };
      if (seen.has('connectionLimit')) return { ok: false, error: 'CONNECTION LIMIT is given more than once' };
      seen.add('connectionLimit');
      attributes.connectionLimit = Number(raw);
      i += 2;
      continue;
    }
    return { ok: false, error: `unsupported option "${tokens[i]}" (allowed: ${allowed})` };
  }
  return { ok: true, attributes };
}

/** The SQL keywords that set `attributes` (for CREATE ROLE / ALTER ROLE … WITH). */
export function roleAttributeClauses(attributes: Partial<RoleAttributes>): string[] {
  const clauses: string[] = [];
  for (const [keyword, [flag, on]] of Object.entries(FLAGS)) {
    if (on && attributes[flag] !== undefined) clauses.push(attributes[flag] ? keyword : `NO${keyword}`);
  }
  if (attributes.connectionLimit !== undefined) clauses.push(`CONNECTION LIMIT ${attributes.connectionLimit}`);
  return clauses;
}
