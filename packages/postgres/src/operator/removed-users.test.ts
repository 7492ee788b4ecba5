import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { ANNOTATION, LABEL, type UsersReport } from '../contract/index.js';
import { primaryUsersReport, userSecretsToDelete } from './removed-users.js';

const cluster = (policy: 'Retain' | 'Drop', users: string[], generation = 4): PostgresCluster =>
  ({
    metadata: { name: 'db', namespace: 'default', generation },
    spec: { userRemovalPolicy: policy, users: users.map((name) => ({ name })) },
  }) as unknown as PostgresCluster;
const secret = (user: string | undefined, name = `db-pguser-${user}`): Secret => ({
  metadata: { name, labels: user ? { [LABEL.user]: user } : {} },
});
const secrets = [secret('app'), secret('temp'), secret('owner'), secret(undefined, 'db-superuser')];

describe('userSecretsToDelete', () => {
  const report: UsersReport = { generation: 4, removed: [{ name: 'owner', reason: 'owns database "o"' }] };

  it('deletes the Secret of a dropped user once the primary reported a pass over this generation', () => {
    assert.deepEqual(userSecretsToDelete(cluster('Drop', ['app']), secrets, report), ['db-pguser-temp']);
  });

  it('deletes nothing under Retain, before a pass over this generation, or without a report', () => {
    assert.deepEqual(userSecretsToDelete(cluster('Retain', ['app']), secrets, report), []);
    assert.deepEqual(userSecretsToDelete(cluster('Drop', ['app'], 5), secrets, report), []);
    assert.deepEqual(userSecretsToDelete(cluster('Drop', ['app']), secrets, undefined), []);
  });
});

describe('primaryUsersReport', () => {
  const pod = (role: string, users?: UsersReport): Pod => ({
    metadata: {
      name: `db-${role}`,
      labels: { [LABEL.role]: role },
      annotations: {
        [ANNOTATION.status]: JSON.stringify({
          role,
          ready: true,
          timeline: 1,
          systemIdentifier: '1',
          receivedLsn: '0/1',
          replayedLsn: '0/1',
          lagBytes: 0,
          updatedAt: new Date().toISOString(),
          ...(users ? { users } : {}),
        }),
      },
    },
  });

  it("reads the status's primary's report, not a replica's", () => {
    const stale: UsersReport = { generation: 1, removed: [] };
    const current: UsersReport = { generation: 2, removed: [] };
    assert.deepEqual(primaryUsersReport([pod('replica', stale), pod('primary', current)], 'db-primary'), current);
    assert.equal(primaryUsersReport([pod('replica', stale)], undefined), undefined);
  });
});
