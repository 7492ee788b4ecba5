import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DEFAULT_ROLE_ATTRIBUTES } from './role-options.js';
import { buildScramVerifier } from './scram.js';
import {
  type ExistingRole,
  planRewindGrants,
  planSystemRoles,
  planUsers,
  REWIND_FUNCTIONS,
  readDeclaredUsers,
} from './users-plan.js';

const verifier = (password: string) => `V(${password.length})`;

it('reads spec.users, leaving out each invalid entry with an error naming the user and field', () => {
  const { users, errors } = readDeclaredUsers(
    {
      users: [
        { name: 'app', databases: ['app', 'reports'], options: 'CREATEDB' },
        { name: 'bad', options: 'SUPERUSER VALID UNTIL now' },
        { name: 'postgres' },
        { name: 'pg_monitor2' },
        { name: 'app' },
        { name: 'x', databases: ['template1'] },
        { name: 'y', options: 7 },
        { name: '' },
        { name: 'z'.repeat(64) },
      ],
    },
    'db',
  );
  assert.deepEqual(users, [
    { name: 'app', databases: ['app', 'reports'], attributes: { ...DEFAULT_ROLE_ATTRIBUTES, createdb: true } },
  ]);
  assert.equal(errors.length, 8);
  assert.match(
    errors[0] ?? '',
    /user "bad" \(spec\.users\[1\]\): spec\.users\[1\]\.options: unsupported option "VALID"/,
  );
  assert.match(errors[1] ?? '', /user "postgres".*reserved/);
  assert.match(errors[2] ?? '', /user "pg_monitor2".*reserved/);
  assert.match(errors[3] ?? '', /user "app" \(spec\.users\[4\]\).*declared twice/);
  assert.match(errors[4] ?? '', /spec\.users\[5\]\.databases\[0\] "template1" is reserved/);
  assert.match(errors[5] ?? '', /spec\.users\[6\]\.options must be a string/);
  assert.match(errors[6] ?? '', /spec\.users\[7\]\.name must be a non-empty string/);
  assert.match(errors[7] ?? '', /spec\.users\[8\]\.name must be at most 63 bytes/);
  // Omitted: PGO's default user, named after the cluster and owning its database; [] declares none.
  assert.deepEqual(readDeclaredUsers({}, 'hippo'), {
    users: [
      {
        name: 'hippo',
        databases: ['hippo'],
        attributes: readDeclaredUsers({ users: [{ name: 'x' }] }, 'db').users[0]?.attributes,
      },
    ],
    errors: [],
  });
  assert.deepEqual(readDeclaredUsers({ users: [] }, 'hippo'), { users: [], errors: [] });
  assert.deepEqual(readDeclaredUsers({}, 'postgres'), { users: [], errors: [] });
  assert.deepEqual(readDeclaredUsers({ users: 'app' }, 'db').errors, ['spec.users must be a list']);
});

it('creates missing roles and databases with quoted names and a password verifier', () => {
  const { users } = readDeclaredUsers(
    {
      users: [{ name: 'We"ird', databases: ['my db'], options: 'CONNECTION LIMIT 2' }],
    },
    'db',
  );
  const steps = planUsers(users, new Map([['We"ird', "p'w"]]), new Map(), new Map(), verifier);
  assert.deepEqual(steps, [
    {
      action: 'create-role',
      name: 'We"ird',
      sql: `CREATE ROLE "We""ird" WITH NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS LOGIN INHERIT CONNECTION LIMIT 2 PASSWORD 'V(3)'`,
    },
    { action: 'create-database', name: 'my db', sql: 'CREATE DATABASE "my db" OWNER "We""ird"' },
  ]);
});

it('is idempotent: nothing to do when roles, passwords and owners match', () => {
  const { users } = readDeclaredUsers({ users: [{ name: 'app', databases: ['app'] }] }, 'db');
  const roles = new Map<string, ExistingRole>([
    ['app', { attributes: DEFAULT_ROLE_ATTRIBUTES, password: buildScramVerifier('pw') }],
  ]);
  assert.deepEqual(planUsers(users, new Map([['app', 'pw']]), roles, new Map([['app', 'app']])), []);
});

it('alters only what differs: attributes, password, database owner', () => {
  const { users } = readDeclaredUsers({ users: [{ name: 'app', databases: ['app'], options: 'CREATEDB' }] }, 'db');
  const roles = new Map<string, ExistingRole>([
    ['app', { attributes: { ...DEFAULT_ROLE_ATTRIBUTES, inherit: false }, password: buildScramVerifier('old') }],
  ]);
  const steps = planUsers(users, new Map([['app', 'new']]), roles, new Map([['app', 'postgres']]), verifier);
  assert.deepEqual(
    steps.map((step) => step.sql),
    [
      'ALTER ROLE "app" WITH CREATEDB INHERIT',
      `ALTER ROLE "app" WITH PASSWORD 'V(3)'`,
      'ALTER DATABASE "app" OWNER TO "app"',
    ],
  );
});

it('skips users without a known password, and keeps the first owner of a shared database', () => {
  const { users } = readDeclaredUsers(
    {
      users: [
        { name: 'a', databases: ['shared'] },
        { name: 'b', databases: ['shared'] },
        { name: 'c', databases: ['c'] },
      ],
    },
    'db',
  );
  const steps = planUsers(
    users,
    new Map([
      ['a', 'x'],
      ['b', 'y'],
    ]),
    new Map(),
    new Map(),
    verifier,
  );
  assert.deepEqual(
    steps.map((step) => [step.action, step.name]),
    [
      ['create-role', 'a'],
      ['create-database', 'shared'],
      ['create-role', 'b'],
    ],
  );
});

it('plans streaming_replica and the superuser password, and nothing once they match', () => {
  const first = planSystemRoles('su', 'repl', new Map(), verifier);
  assert.deepEqual(
    first.map((step) => step.sql),
    [
      `CREATE ROLE "streaming_replica" WITH NOSUPERUSER NOCREATEDB NOCREATEROLE REPLICATION NOBYPASSRLS LOGIN INHERIT CONNECTION LIMIT -1 PASSWORD 'V(4)'`,
      `ALTER ROLE "postgres" WITH PASSWORD 'V(2)'`,
    ],
  );
  const roles = new Map<string, ExistingRole>([
    [
      'streaming_replica',
      { attributes: { ...DEFAULT_ROLE_ATTRIBUTES, replication: true }, password: buildScramVerifier('repl') },
    ],
    ['postgres', { attributes: { ...DEFAULT_ROLE_ATTRIBUTES, superuser: true }, password: buildScramVerifier('su') }],
  ]);
  assert.deepEqual(planSystemRoles('su', 'repl', roles), []);
});

it('grants streaming_replica the functions pg_rewind reads files with, and nothing once it may run them', () => {
  assert.deepEqual(
    planRewindGrants(new Set(['pg_catalog.pg_stat_file(text, boolean)'])).map((step) => step.sql),
    [
      'GRANT EXECUTE ON FUNCTION pg_catalog.pg_ls_dir(text, boolean, boolean) TO "streaming_replica"',
      'GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text) TO "streaming_replica"',
      'GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO "streaming_replica"',
    ],
  );
  assert.deepEqual(planRewindGrants(new Set(REWIND_FUNCTIONS)), []);
});
