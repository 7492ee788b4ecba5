import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildInstanceRoleRules } from '../../contract/index.js';
import { Redactor } from '../log/redactor.js';
import { planBoot } from './bootstrap-plan.js';
import { lsnDistance, maxLsn, parseLsn } from './lsn.js';
import { planSlots } from './slots-plan.js';
import { quoteIdent, quoteLiteral } from './users/sql-quote.js';

it('plans slots for every other Pod and drops only inactive slots of Pods that are gone', () => {
  const plan = planSlots(
    'pg-a-0',
    ['pg-a-0', 'pg-a-1', 'pg-a-2'],
    [
      { name: 'kanri_pg_a_1', active: true },
      { name: 'kanri_pg_a_9', active: false },
      { name: 'kanri_pg_a_8', active: true },
      { name: 'user_slot', active: false },
    ],
  );
  assert.deepEqual(plan, { create: ['kanri_pg_a_2'], drop: ['kanri_pg_a_9'], recreate: [] });
});

it('recreates an invalidated (lost) slot of a current Pod once no walsender uses it', () => {
  const plan = planSlots(
    'pg-a-0',
    ['pg-a-0', 'pg-a-1', 'pg-a-2'],
    [
      { name: 'kanri_pg_a_1', active: false, lost: true },
      { name: 'kanri_pg_a_2', active: true, lost: true },
      { name: 'kanri_pg_a_9', active: false, lost: true },
    ],
  );
  assert.deepEqual(plan, { create: [], drop: ['kanri_pg_a_9'], recreate: ['kanri_pg_a_1'] });
});

it('plans the boot from the data directory and the Lease', () => {
  const base = {
    self: 'a',
    hasData: false,
    isStandby: false,
    mode: 'initdb' as const,
    leaseExists: false,
    leaseHolder: undefined,
  };
  assert.deepEqual(planBoot(base), { action: 'initdb' });
  assert.deepEqual(planBoot({ ...base, leaseExists: true, leaseHolder: 'b' }), { action: 'basebackup' }, 'never fork');
  assert.deepEqual(planBoot({ ...base, leaseExists: true }), { action: 'basebackup' }, 'a released Lease: initialised');
  assert.deepEqual(planBoot({ ...base, leaseExists: true, leaseHolder: 'a' }), { action: 'basebackup' }, 'lost volume');
  assert.deepEqual(planBoot({ ...base, mode: 'basebackup' }), { action: 'basebackup' });
  assert.deepEqual(planBoot({ ...base, hasData: true }), { action: 'lead' });
  assert.deepEqual(planBoot({ ...base, hasData: true, leaseExists: true, leaseHolder: 'a' }), { action: 'lead' });
  assert.deepEqual(planBoot({ ...base, hasData: true, leaseExists: true }), { action: 'lead' }, 'released by itself');
  assert.deepEqual(planBoot({ ...base, hasData: true, isStandby: true, leaseExists: true, leaseHolder: 'b' }), {
    action: 'follow',
  });
  assert.deepEqual(planBoot({ ...base, hasData: true, leaseExists: true, leaseHolder: 'b' }), {
    action: 'rejoin',
    leader: 'b',
  });
});

it('parses and compares LSNs', () => {
  assert.equal(parseLsn('0/3000060'), 0x3000060);
  assert.equal(parseLsn('1/0'), 2 ** 32);
  assert.equal(parseLsn('nonsense'), undefined);
  assert.equal(parseLsn(null), undefined);
  assert.equal(lsnDistance('0/100', '0/300'), 0x200);
  assert.equal(lsnDistance('0/300', '0/100'), 0);
  assert.equal(lsnDistance(undefined, '0/100'), 0);
  assert.equal(maxLsn('0/100', '1/0'), '1/0');
  assert.equal(maxLsn(undefined, '0/5'), '0/5');
  assert.equal(maxLsn('0/5', null), '0/5');
});

it('redacts secrets in raw, JSON-escaped and URL-encoded form, and in error chains', () => {
  const redactor = new Redactor();
  redactor.add('pa"ss:w\\rd');
  redactor.add('ab');
  const json = JSON.stringify({ msg: 'password is pa"ss:w\\rd' });
  assert.equal(redactor.redact(json).includes('ss:w'), false);
  assert.equal(redactor.redact(`x=${encodeURIComponent('pa"ss:w\\rd')}`), 'x=[REDACTED]');
  assert.equal(redactor.redact('ab stays'), 'ab stays', 'too short to be a secret');
  const error = new Error('outer', { cause: new Error('inner pa"ss:w\\rd') });
  assert.equal(redactor.describe(error), 'outer: inner [REDACTED]');
});

it('quotes identifiers and literals', () => {
  assert.equal(quoteIdent('a"b'), '"a""b"');
  assert.equal(quoteLiteral("it's \\"), "'it''s \\'");
  assert.throws(() => quoteIdent('a\0'), /NUL/);
});

it('pins the instance Role to the cluster’s object names: only its users’ and its certificates’ Secrets', () => {
  const withUsers = buildInstanceRoleRules('pg', ['app']);
  const secretRules = (rules: typeof withUsers) =>
    rules.filter((rule) => rule.resources?.includes('secrets')).map((rule) => [rule.verbs, rule.resourceNames]);
  assert.deepEqual(secretRules(withUsers), [
    [['list', 'watch'], ['pg-postgres-tls']],
    [['get'], ['pg-pguser-app']],
  ]);
  assert.deepEqual(withUsers.find((rule) => rule.resources?.includes('configmaps'))?.resourceNames, ['pg-config']);
  // No Secret of pgBackRest's: each Pod's key is its own (issue 37, finding 4); the older scheme's
  // shared Secret only while a cluster still has it. And no name at all means no rule (not every Secret).
  const withoutUsers = buildInstanceRoleRules('pg', []);
  assert.deepEqual(secretRules(withoutUsers), [[['list', 'watch'], ['pg-postgres-tls']]]);
  assert.deepEqual(secretRules(buildInstanceRoleRules('pg', [], { sharedPgbackrestTls: true })), [
    [['list', 'watch'], ['pg-postgres-tls']],
    [['get'], ['pg-pgbackrest-tls']],
  ]);
  assert.equal(
    withoutUsers.some((rule) => rule.verbs?.includes('*') || rule.resources?.includes('*')),
    false,
  );
});
