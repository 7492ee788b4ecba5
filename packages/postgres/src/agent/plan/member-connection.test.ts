import assert from 'node:assert/strict';
import { it } from 'node:test';
import { memberConnectionPairs, memberConninfo, usesPassword } from './member-connection.js';

const tls = {
  serverCa: '/run/tls/ca.crt',
  serverCert: '/run/tls/tls.crt',
  serverKey: '/run/tls/tls.key',
  clientCa: '/run/tls/client-ca.crt',
  replicationCert: '/run/tls/replication.crt',
  replicationKey: '/run/tls/replication.key',
};
const target = { ip: '10.0.0.7', serverName: 'hippo-primary.db.svc' };

it("dials the Pod IP and checks the certificate against the cluster's name, with the replication certificate as the only credential", () => {
  assert.deepEqual(memberConnectionPairs({ ...target, tls }), [
    ['host', 'hippo-primary.db.svc'],
    ['hostaddr', '10.0.0.7'],
    ['port', '5432'],
    ['user', 'streaming_replica'],
    ['sslmode', 'verify-full'],
    ['sslrootcert', tls.serverCa],
    ['sslcert', tls.replicationCert],
    ['sslkey', tls.replicationKey],
  ]);
  assert.equal(usesPassword({ ...target, tls }), false);
});

it('uses the password before the cluster has certificates, when there is no name to check', () => {
  assert.deepEqual(memberConnectionPairs(target), [
    ['host', '10.0.0.7'],
    ['port', '5432'],
    ['user', 'streaming_replica'],
    ['sslmode', 'prefer'],
  ]);
  assert.equal(usesPassword(target), true);
});

it('quotes odd values and appends the caller’s keywords', () => {
  const conninfo = memberConninfo({ ...target, tls: { ...tls, serverCa: "/a b/it's" } }, [['dbname', 'postgres']]);
  assert.match(conninfo, / sslrootcert='\/a b\/it\\'s' /);
  assert.match(conninfo, / dbname=postgres$/);
});
