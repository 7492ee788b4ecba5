/**
 * Users removed from `spec.users`, end to end (real control plane, operator, agent and
 * PostgreSQL): kept by default and listed in the status; with `userRemovalPolicy: Drop` the role
 * is dropped and its Secret deleted, but only once it owns no database; a role made by hand is
 * never touched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NotFoundError } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import { names } from '../src/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  primarySql,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';

const CLUSTER = 'crew';

describe('users removed from spec.users', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  const sql = (text: string) => primarySql(env, CLUSTER, text);
  const roles = async () =>
    (await sql("select rolname from pg_roles where rolname in ('app', 'temp', 'owner', 'handmade')"))
      .map((r) => r.rolname as string)
      .sort();
  const secretExists = (user: string) =>
    env.client
      .resource('v1', 'Secret')
      .get(names.userSecret(CLUSTER, user), { namespace: 'default' })
      .then(
        () => true,
        (error: unknown) => {
          if (error instanceof NotFoundError) return false;
          throw error;
        },
      );
  const removedUsers = async () =>
    (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).status?.removedUsers ?? [];
  const setUsers = (spec: Record<string, unknown>) =>
    clusters(env.client).patch(CLUSTER, { spec }, { namespace: 'default', type: 'merge' });

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1 });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 1, {
        users: [{ name: 'app', databases: ['appdb'] }, { name: 'temp' }, { name: 'owner', databases: ['ownerdb'] }],
      }),
    );
    await waitReady(env.client, CLUSTER, 1);
    await waitFor('the three roles', async () => (await roles()).length === 3, 60_000, 500);
    await sql('create role handmade login');
  });
  after(async () => {
    await env?.stop();
  });

  it('keeps a removed user by default (userRemovalPolicy: Retain): role and Secret stay, the status says so', async () => {
    await setUsers({
      users: [
        { name: 'app', databases: ['appdb'] },
        { name: 'owner', databases: ['ownerdb'] },
      ],
    });
    const listed = await waitFor('temp in status.removedUsers', async () => {
      const removed = await removedUsers();
      return removed.length > 0 ? removed : undefined;
    });
    assert.deepEqual(
      listed.map((u) => u.name),
      ['temp'],
      'only the removed user: not the declared ones, nor the role made by hand',
    );
    assert.match(listed[0]?.reason ?? '', /userRemovalPolicy is Retain/);
    assert.deepEqual(await roles(), ['app', 'handmade', 'owner', 'temp']);
    assert.equal(await secretExists('temp'), true);
  });

  it('with Drop, drops a removed role and deletes its Secret, but keeps one that owns a database until it is gone', async () => {
    await setUsers({ userRemovalPolicy: 'Drop', users: [{ name: 'app', databases: ['appdb'] }] });
    await waitFor('temp dropped and its Secret deleted', async () => {
      return !(await roles()).includes('temp') && !(await secretExists('temp'));
    });
    const listed = await waitFor('owner kept in status.removedUsers', async () => {
      const removed = await removedUsers();
      return removed.length === 1 && removed[0]?.name === 'owner' ? removed : undefined;
    });
    assert.match(listed[0]?.reason ?? '', /owns database "ownerdb"/);
    assert.deepEqual(await roles(), ['app', 'handmade', 'owner']);
    assert.equal(await secretExists('owner'), true, 'a kept role keeps its password');

    await sql('drop database ownerdb');
    await waitFor(
      'owner dropped once its database is gone',
      async () => !(await roles()).includes('owner'),
      60_000,
      500,
    );
    await waitFor('its Secret deleted', async () => !(await secretExists('owner')), 30_000, 250);
    await waitFor('status.removedUsers cleared', async () => (await removedUsers()).length === 0, 30_000, 250);
    assert.deepEqual(await roles(), ['app', 'handmade'], 'the declared role and the one made by hand remain');
    assert.equal(await secretExists('app'), true);
  });

  it('creates a user declared again, with a new Secret that logs in', async () => {
    await setUsers({ users: [{ name: 'app', databases: ['appdb'] }, { name: 'temp' }] });
    const password = await waitFor('a new Secret for temp', () =>
      secretValue(env.client, names.userSecret(CLUSTER, 'temp'), 'password').catch(() => undefined),
    );
    const address = await serviceAddress(env.cp, 'default', `${CLUSTER}-primary`, 5432);
    const db = await waitFor(
      'temp to log in',
      () => connect(address, 'temp', password).catch(() => undefined),
      60_000,
      500,
    );
    try {
      assert.deepEqual((await db.query('select current_user as u')).rows, [{ u: 'temp' }]);
    } finally {
      await db.end();
    }
  });
});
