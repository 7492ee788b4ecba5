import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { CONFIG_KEY } from '../../contract/index.js';
import { postgresConfig } from './postgres-config.js';

const cluster = (spec: Record<string, unknown>) =>
  ({ metadata: { name: 'hippo', namespace: 'db' }, spec: { instances: [], ...spec } }) as unknown as PostgresCluster;
const hbaOf = (spec: Record<string, unknown>) =>
  (postgresConfig(cluster(spec)).data?.[CONFIG_KEY.hba] ?? '').split('\n');

it('refuses the superuser from the network unless the spec allows it, by password or certificate alike', () => {
  const closed = hbaOf({});
  const reject = closed.indexOf('host all postgres all reject');
  const everyone = closed.indexOf('host all all all scram-sha-256');
  assert.ok(reject >= 0 && reject < everyone, closed.join('\n'));
  // `host` matches TLS connections too: nothing before the refusal lets the superuser in.
  const user = (line: string) => line.split(/\s+/)[2] ?? '';
  assert.ok(
    closed.slice(0, reject).every((line) => !line.startsWith('host') || !['all', 'postgres'].includes(user(line))),
    closed.join('\n'),
  );

  const open = hbaOf({ enableSuperuserAccess: true });
  assert.ok(!open.some((line) => line.includes('postgres all reject')));
  assert.ok(open.includes('host all all all scram-sha-256'), 'the superuser logs in with its password like any user');
});

it('authenticates no role by certificate: the agent adds the replication user, the only one a certificate may name', () => {
  for (const spec of [{}, { enableSuperuserAccess: true }, { tls: { replicationSecret: 'corp-repl' } }]) {
    const lines = hbaOf(spec);
    assert.deepEqual(
      lines.filter((line) => /\scert(\s|$)/.test(line)),
      [],
      `${JSON.stringify(spec)}:\n${lines.join('\n')}`,
    );
  }
});
