import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DEFAULT_ROLE_ATTRIBUTES, parseRoleOptions, roleAttributeClauses } from './role-options.js';

it('accepts the allow-listed options in any case', () => {
  const result = parseRoleOptions('createdb NOINHERIT Connection Limit 5 SUPERUSER');
  assert.deepEqual(result, {
    ok: true,
    attributes: { ...DEFAULT_ROLE_ATTRIBUTES, createdb: true, inherit: false, connectionLimit: 5, superuser: true },
  });
  assert.deepEqual(parseRoleOptions(undefined), { ok: true, attributes: DEFAULT_ROLE_ATTRIBUTES });
  assert.deepEqual(parseRoleOptions('NOLOGIN'), { ok: true, attributes: { ...DEFAULT_ROLE_ATTRIBUTES, login: false } });
});

it('refuses anything else, naming the offending option', () => {
  for (const [options, message] of [
    ["PASSWORD 'x'", /unsupported option "PASSWORD"/],
    ['VALID UNTIL infinity', /unsupported option "VALID"/],
    ['SUPERUSER; DROP TABLE t', /unsupported option "SUPERUSER;"/],
    ['IN ROLE admin', /unsupported option "IN"/],
    ['CONNECTION LIMIT many', /CONNECTION LIMIT needs an integer/],
    ['CONNECTION LIMIT -2', /CONNECTION LIMIT needs an integer/],
    ['CREATEDB NOCREATEDB', /CREATEDB is given more than once/],
  ] as const) {
    const result = parseRoleOptions(options);
    assert.equal(result.ok, false, options);
    if (!result.ok) assert.match(result.error, message);
  }
});

it('renders attributes as SQL keywords', () => {
  assert.deepEqual(roleAttributeClauses({ createdb: true, login: false, connectionLimit: 3 }), [
    'CREATEDB',
    'NOLOGIN',
    'CONNECTION LIMIT 3',
  ]);
  assert.equal(
    roleAttributeClauses(DEFAULT_ROLE_ATTRIBUTES).join(' '),
    'NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS LOGIN INHERIT CONNECTION LIMIT -1',
  );
});
