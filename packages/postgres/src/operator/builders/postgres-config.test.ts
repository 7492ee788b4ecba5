import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { CONFIG_KEY } from '../../contract/index.js';
import { postgresConfig } from './postgres-config.js';

const cluster = (spec: Record<string, unknown>) =>
  ({ metadata: { name: 'hippo', namespace: 'db' }, spec: { instances: [], ...spec } }) as unknown as PostgresCluster;
const hbaOf = (spec: Record<string, unknown>) =>
  (postgresConfig(cluster(spec)).data?.[CONFIG_KEY.hba] ?? '').split('\n');

it("refuses the superuser's password from the network unless the spec allows it; the agents' certificate still gets in", () => {
  const closed = hbaOf({});
  const cert = closed.indexOf('hostssl all postgres all cert');
  const reject = closed.indexOf('host all postgres all reject');
  const everyone = closed.indexOf('host all all all scram-sha-256');
  assert.ok(cert >= 0 && cert < reject && reject < everyone, closed.join('\n'));

  const open = hbaOf({ enableSuperuserAccess: true });
  assert.ok(!open.some((line) => line.includes('postgres all reject') || line.includes('postgres all cert')));
  assert.ok(open.includes('host all all all scram-sha-256'), 'the superuser logs in with its password like any user');
});
