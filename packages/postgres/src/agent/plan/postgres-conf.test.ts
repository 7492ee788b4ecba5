import assert from 'node:assert/strict';
import { it } from 'node:test';
import { quoteConfValue } from '../../contract/index.js';
import {
  buildAgentSettings,
  buildPassfile,
  buildPrimaryConninfo,
  INCLUDE_LINE,
  renderKanriConf,
  renderPgHba,
  withKanriInclude,
} from './postgres-conf.js';

const primary = {
  ip: '127.1.0.1',
  serverName: 'db-primary.ns.svc',
  slot: 'kanri_db_1',
  passfile: '/run/postgresql/replication.pgpass',
  applicationName: 'db-1',
};

it('sets the agent-owned settings; replicas also name their primary and slot', () => {
  const onPrimary = buildAgentSettings({
    podIP: '127.1.0.1',
    podName: 'db-0',
    socketDir: '/run/postgresql',
    archiveCommand: 'archive %p',
  });
  assert.equal(onPrimary.listen_addresses, '127.1.0.1');
  assert.equal(onPrimary.port, '5432');
  assert.equal(onPrimary.unix_socket_directories, '/run/postgresql');
  assert.equal(onPrimary.wal_log_hints, 'on');
  assert.equal(onPrimary.hot_standby, 'on');
  assert.equal(onPrimary.wal_level, 'replica');
  assert.equal(onPrimary.primary_conninfo, '');
  assert.equal(onPrimary.primary_slot_name, '');
  const onReplica = buildAgentSettings({
    podIP: '127.1.0.2',
    podName: 'db-1',
    socketDir: '/s',
    primary,
    archiveCommand: 'archive %p',
  });
  assert.equal(onReplica.primary_slot_name, 'kanri_db_1');
  assert.match(
    onReplica.primary_conninfo ?? '',
    /^host=127\.1\.0\.1 port=5432 user=streaming_replica sslmode=prefer passfile=\/run\/postgresql\/replication\.pgpass application_name=db-1 /,
  );
});

it('keeps the password out of primary_conninfo and quotes odd values', () => {
  const conninfo = buildPrimaryConninfo({ ...primary, passfile: "/a b/it's" });
  assert.match(conninfo, / passfile='\/a b\/it\\'s' /);
  assert.equal(conninfo.includes('password'), false);
});

it('escapes the passfile fields', () => {
  assert.equal(buildPassfile('a:b\\c'), '*:*:*:streaming_replica:a\\:b\\\\c\n');
});

it('renders kanri.conf with the operator parameters first and agent settings last, dropping overrides', () => {
  const { text, overridden } = renderKanriConf(
    "shared_buffers = '64MB'\nPort = 6000\n# port = 1\nlisten_addresses '*'\n",
    {
      port: '5432',
      listen_addresses: '127.1.0.1',
    },
  );
  assert.deepEqual(overridden, ['port', 'listen_addresses']);
  assert.ok(text.indexOf("shared_buffers = '64MB'") < text.indexOf("port = '5432'"));
  assert.ok(text.includes('# port = 1'), 'comments are kept');
  assert.equal(text.includes('6000'), false);
  assert.ok(text.includes("listen_addresses = '127.1.0.1'"));
  assert.equal(quoteConfValue("a'b\\c"), "'a''b\\\\c'");
});

it("puts the agent's rules first in pg_hba.conf, then the operator's or the default", () => {
  const custom = renderPgHba('hostssl all all 10.0.0.0/8 scram-sha-256');
  const lines = custom.split('\n').filter((line) => line && !line.startsWith('#'));
  assert.deepEqual(lines, [
    'local all postgres trust',
    'local replication postgres trust',
    'host replication streaming_replica all scram-sha-256',
    'host postgres streaming_replica all scram-sha-256',
    'host all streaming_replica all reject',
    'hostssl all all 10.0.0.0/8 scram-sha-256',
  ]);
  // Without the cluster's rules nothing from the network gets past the agent's own lines.
  assert.match(renderPgHba(undefined), /host all all all reject/);
  assert.doesNotMatch(renderPgHba(undefined), /^host(ssl)? all .*scram-sha-256/m);
});

it('adds the include line to postgresql.conf once', () => {
  const once = withKanriInclude('max_connections = 100\n');
  assert.equal(once, `max_connections = 100\n${INCLUDE_LINE}\n`);
  assert.equal(withKanriInclude(once), once);
});

const tls = {
  serverCa: '/run/postgresql/postgres-tls/ca.crt',
  serverCert: '/run/postgresql/postgres-tls/tls.crt',
  serverKey: '/run/postgresql/postgres-tls/tls.key',
  clientCa: '/run/postgresql/postgres-tls/client-ca.crt',
  replicationCert: '/run/postgresql/postgres-tls/replication.crt',
  replicationKey: '/run/postgresql/postgres-tls/replication.key',
};

it("serves TLS once the cluster files are there, and replicas then verify the primary's name and present a certificate, no password", () => {
  const base = { podIP: '127.1.0.2', podName: 'db-1', socketDir: '/s', archiveCommand: 'a %p' };
  const without = buildAgentSettings({ ...base, primary });
  assert.equal(without.ssl, 'off');
  assert.match(without.primary_conninfo, /sslmode=prefer/);
  assert.doesNotMatch(without.primary_conninfo, /sslcert/);

  const withTls = buildAgentSettings({ ...base, primary: { ...primary, tls }, tls });
  assert.equal(withTls.ssl, 'on');
  assert.equal(withTls.ssl_cert_file, tls.serverCert);
  assert.equal(withTls.ssl_key_file, tls.serverKey);
  assert.equal(withTls.ssl_ca_file, tls.clientCa, 'client certificates are checked against the cluster CA');
  assert.match(
    withTls.primary_conninfo,
    /^host=db-primary\.ns\.svc hostaddr=127\.1\.0\.1 port=5432 user=streaming_replica sslmode=verify-full sslrootcert=\S+\/ca\.crt sslcert=\S+\/replication\.crt sslkey=\S+\/replication\.key application_name=db-1 /,
  );
  assert.doesNotMatch(withTls.primary_conninfo, /passfile|verify-ca/, 'the certificate is the only credential');
});

it('authenticates the replication user by certificate over TLS, and refuses plain connections when TLS is required', () => {
  const lines = (text: string) => text.split('\n');
  const plain = lines(renderPgHba('host all all all scram-sha-256'));
  assert.ok(!plain.some((line) => line.startsWith('hostssl') || line.includes('all all reject')));

  const serving = lines(renderPgHba('host all all all scram-sha-256', { serving: true, required: false }));
  for (const database of ['replication', 'postgres']) {
    const cert = serving.indexOf(`hostssl ${database} streaming_replica all cert`);
    const password = serving.indexOf(`host ${database} streaming_replica all scram-sha-256`);
    assert.ok(cert >= 0 && cert < password, `${database}: over TLS the certificate rule matches first`);
  }
  assert.ok(!serving.includes('hostnossl all all all reject'));
  assert.deepEqual(
    serving.filter((line) => / cert$/.test(line)).map((line) => line.split(' ')[2]),
    ['streaming_replica', 'streaming_replica'],
    'no other role is authenticated by certificate',
  );
  const elsewhere = serving.indexOf('host all streaming_replica all reject');
  assert.ok(elsewhere >= 0 && elsewhere < serving.indexOf('host all all all scram-sha-256'), 'nowhere else');

  const required = lines(renderPgHba('host all all all scram-sha-256', { serving: true, required: true }));
  const reject = required.indexOf('hostnossl all all all reject');
  assert.ok(reject >= 0);
  assert.ok(
    required.every((line, i) => !/^host(ssl)? /.test(line) || i > reject),
    'no network rule comes before the refusal of plain connections',
  );
  assert.ok(required.indexOf('local all postgres trust') < reject, "the agent's socket stays open");
});
