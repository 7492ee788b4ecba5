/**
 * Issue 37, findings 2 and 9, against real PostgreSQL (no control plane): postgres processes on
 * loopback addresses, configured by the agent's and the operator's own builders, with the TLS
 * material of the operator's plan for a cluster whose spec names a replication Secret from another
 * CA (a shared issuer, say), which postgres then trusts for client certificates.
 * - Finding 2: a certificate that names postgres, from that CA or the cluster's own, logs nobody
 *   in; a certificate of that CA authenticates streaming_replica alone, for replication and
 *   pg_rewind only. Before, `hostssl all postgres all cert` let either in as the superuser.
 * - Finding 9: a forger serving a certificate from the CA the members trust, but for another
 *   cluster's name, is refused by pg_basebackup, pg_rewind and a standby's walreceiver before any
 *   password goes out (its log shows none). Before (verify-ca), each handed it a password, the
 *   superuser's for pg_rewind. Against the real members the same code clones, streams and rewinds
 *   by verify-full as streaming_replica, with a wrong password in hand.
 * Once per major: 14 is where CHECKPOINT needs a superuser, 17 the newest pg_rewind.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type CertificateAuthority, createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import { leaseLoopbackBlock, postgresInstallations, waitFor } from '@kanri/testenv';
import { pino } from 'pino';
import type { AgentConfig } from '../src/agent/config.js';
import type { MemberTarget } from '../src/agent/plan/member-connection.js';
import { buildAgentSettings, renderKanriConf, renderPgHba, withKanriInclude } from '../src/agent/plan/postgres-conf.js';
import { LocalDb } from '../src/agent/postgres/local-db.js';
import { writePostgresTlsFiles } from '../src/agent/postgres/postgres-tls-files.js';
import { checkpointIfTimelineLags, ensureSystemRoles } from '../src/agent/postgres/primary-tasks.js';
import type { PostgresCluster } from '../src/api/postgres-cluster.js';
import {
  CONFIG_KEY,
  memberServerName,
  names,
  type PostgresTlsFiles,
  postgresServerDnsNames,
  REPLICATION_USER,
} from '../src/contract/index.js';
import { postgresConfig } from '../src/operator/builders/postgres-config.js';
import { nextPostgresTlsData, planPostgresTls } from '../src/operator/tls/postgres-tls-plan.js';
import { chownToPostgres, makePassword } from './fixtures/agent-cluster.js';
import { runMemberTool } from './support/member-tools.js';

const CLUSTER = 'hippo';
const NAMESPACE = 'db';
const SERVER_NAME = memberServerName(CLUSTER, NAMESPACE);
const run = promisify(execFile);
const silent = pino({ level: 'silent' });
/** Each WAL sender, with the TLS state of its connection. */
const STREAMING = `SELECT r.application_name AS name, r.usename, r.state, s.ssl, s.client_dn, s.issuer_dn
  FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)`;

interface Member {
  readonly name: string;
  readonly ip: string;
  /** Run directory and socket directory. */
  readonly dir: string;
  readonly pgdata: string;
  readonly logFile: string;
  process?: ChildProcess;
  db?: LocalDb;
}

interface Pair {
  readonly certPem: string;
  readonly keyPem: string;
}

/** Each major's programs, runnable by the postgres user. */
const installations = await postgresInstallations('postgres');

for (const major of ['14', '15', '17']) {
  describe(`member trust on PostgreSQL ${major}: certificates that name roles, servers that must name the cluster`, {
    timeout: 600_000,
  }, () => {
    const bin = installations[major] ?? '';
    let root = '';
    const superuser = makePassword('');
    const replication = makePassword('');
    let release: (() => Promise<void>) | undefined;
    let ca: CertificateAuthority;
    let replicationCa: CertificateAuthority;
    let files: PostgresTlsFiles;
    let members: { primary: Member; standby: Member; forger: Member };
    /** Client certificates an attacker may hold, each in a 0600 file pair (libpq insists). */
    const attacker: Record<string, { cert: string; key: string }> = {};

    const member = (name: string, ip: string): Member => {
      const dir = join(root, name);
      mkdirSync(dir, { mode: 0o700 });
      chownToPostgres(dir);
      return { name, ip, dir, pgdata: join(dir, 'pgdata'), logFile: join(root, `${name}.log`) };
    };
    const target = (m: Member): MemberTarget => ({ ip: m.ip, serverName: SERVER_NAME, tls: files });
    const tool = (m: Member, pgdata = m.pgdata) => ({ pgBin: bin, pgdata, runDir: m.dir });
    const log = (m: Member) => readFileSync(m.logFile, 'utf8');
    const writeAsPostgres = (path: string, text: string) => {
      writeFileSync(path, text, { mode: 0o600 });
      chownToPostgres(path);
    };
    const cluster = (enableSuperuserAccess: boolean) =>
      ({
        metadata: { name: CLUSTER, namespace: NAMESPACE },
        spec: { instances: [], enableSuperuserAccess, tls: { replicationSecret: 'corp-repl' } },
      }) as unknown as PostgresCluster;

    /** The configuration files the agent writes, from the operator's ConfigMap for `cluster`. */
    function configure(m: Member, options: { follow?: Member; superuserAccess?: boolean } = {}): void {
      const config = postgresConfig(cluster(options.superuserAccess ?? false)).data ?? {};
      const follow = options.follow;
      const settings = buildAgentSettings({
        podIP: m.ip,
        podName: m.name,
        socketDir: m.dir,
        archiveCommand: '/bin/true',
        tls: files,
        ...(follow
          ? {
              primary: {
                ...target(follow),
                slot: names.slot(m.name),
                passfile: join(m.dir, 'replication.pgpass'),
                applicationName: m.name,
              },
            }
          : {}),
      });
      writeAsPostgres(join(m.pgdata, 'kanri.conf'), renderKanriConf(config[CONFIG_KEY.parameters], settings).text);
      const conf = join(m.pgdata, 'postgresql.conf');
      writeAsPostgres(conf, withKanriInclude(readFileSync(conf, 'utf8')));
      writeAsPostgres(
        join(m.pgdata, 'pg_hba.conf'),
        renderPgHba(config[CONFIG_KEY.hba], { serving: true, required: false }),
      );
    }

    async function start(m: Member): Promise<LocalDb> {
      const fd = openSync(m.logFile, 'a');
      try {
        m.process = spawn(
          '/usr/bin/setpriv',
          ['--reuid=postgres', '--regid=postgres', '--init-groups', '--pdeathsig', 'KILL', '--'].concat([
            join(bin, 'postgres'),
            '-D',
            m.pgdata,
          ]),
          { stdio: ['ignore', fd, fd] },
        );
      } finally {
        closeSync(fd);
      }
      const db = new LocalDb(m.dir, silent);
      m.db = db;
      await waitFor(`${m.name} to accept connections`, () => db.ping(), 60_000, 100);
      return db;
    }

    async function stop(m: Member): Promise<void> {
      await m.db?.close();
      m.db = undefined;
      const child = m.process;
      m.process = undefined;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // a fast shutdown: clean, as pg_rewind needs
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }

    /** psql to `m` by verify-full; its output, or why it could not connect. */
    async function attempt(
      m: Member,
      as: { user: string; dbname?: string; cert?: string; password?: string; replication?: boolean },
      sql = 'SELECT current_user',
    ): Promise<{ ok: boolean; out: string }> {
      const client = as.cert ? attacker[as.cert] : undefined;
      const conninfo = [
        `host=${SERVER_NAME} hostaddr=${m.ip} port=5432 user=${as.user} dbname=${as.dbname ?? 'postgres'}`,
        `sslmode=verify-full sslrootcert=${files.serverCa} connect_timeout=5`,
        client ? `sslcert=${client.cert} sslkey=${client.key}` : '',
        as.replication ? 'replication=true' : '',
      ].join(' ');
      const env = { PATH: process.env.PATH, ...(as.password ? { PGPASSWORD: as.password } : {}) };
      try {
        const { stdout } = await run(join(bin, 'psql'), ['-w', '-Atc', sql, conninfo], { env, timeout: 15_000 });
        return { ok: true, out: stdout.trim() };
      } catch (error) {
        return { ok: false, out: String((error as { stderr?: string }).stderr ?? error) };
      }
    }

    before(async () => {
      root = mkdtempSync(join(tmpdir(), 'kanri-member-trust-'));
      chmodSync(root, 0o711);
      const block = await leaseLoopbackBlock();
      release = block.release;
      const ip = (n: number) => `127.${block.block}.0.${n}`;
      members = {
        primary: member('primary', ip(1)),
        standby: member('standby', ip(2)),
        forger: member('forger', ip(3)),
      };

      // The cluster's TLS Secret as the operator's plan makes it, the spec naming a replication
      // Secret of another CA: postgres trusts both CAs for client certificates.
      ca = await createCertificateAuthority({ commonName: `${CLUSTER}-ca` });
      replicationCa = await createCertificateAuthority({ commonName: 'shared-issuer' });
      const issue = (issuer: CertificateAuthority, commonName: string) =>
        createServingCertificate({ ca: issuer, commonName, dnsNames: ['client'], clientAuth: true });
      const userReplication = await issue(replicationCa, REPLICATION_USER);
      const dnsNames = postgresServerDnsNames(CLUSTER, NAMESPACE);
      const plan = planPostgresTls({
        cluster: CLUSTER,
        caCertPem: ca.caCertPem,
        data: {},
        dnsNames,
        memberServerName: SERVER_NAME,
        userReplicationSecret: {
          name: 'corp-repl',
          data: {
            'ca.crt': replicationCa.caCertPem,
            'tls.crt': userReplication.certPem,
            'tls.key': userReplication.keyPem,
          },
        },
      });
      assert.equal(plan.userReplicationSecretProblem, undefined);
      const server = await createServingCertificate({ ca, commonName: names.primaryService(CLUSTER), dnsNames });
      const data = nextPostgresTlsData({}, plan, ca.caCertPem, { server });
      const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
      const tlsDir = join(root, 'tls');
      const written = await writePostgresTlsFiles(encoded, tlsDir, { what: 'Secret trust-postgres-tls', known: true });
      assert.ok(written.files, 'the Secret is complete for the agent');
      files = written.files;
      chownToPostgres(tlsDir);
      for (const path of Object.values(files)) chownToPostgres(path);

      const attackerDir = join(root, 'attacker');
      mkdirSync(attackerDir, { mode: 0o700 });
      const hold = (name: string, pair: Pair) => {
        attacker[name] = { cert: join(attackerDir, `${name}.crt`), key: join(attackerDir, `${name}.key`) };
        writeFileSync(attacker[name].cert, pair.certPem, { mode: 0o600 });
        writeFileSync(attacker[name].key, pair.keyPem, { mode: 0o600 });
      };
      hold('postgres-from-shared-issuer', await issue(replicationCa, 'postgres'));
      hold('postgres-from-cluster-ca', await issue(ca, 'postgres'));
      hold('app-from-shared-issuer', await issue(replicationCa, 'app'));
      hold('replica', userReplication);

      // The primary, made and configured as the agent makes it, with the roles its agent keeps.
      const { primary, forger } = members;
      const made = await runMemberTool(tool(primary), { tool: 'initdb', superuserPassword: superuser.password });
      assert.ok(made.ok, JSON.stringify(made));
      configure(primary);
      const db = await start(primary);
      await ensureSystemRoles(
        db,
        { superuserPassword: superuser.password, replicationPassword: replication.password } as AgentConfig,
        silent,
      );
      await db.query(`CREATE ROLE app LOGIN PASSWORD '${makePassword('').core}'`);
      await db.query('SELECT pg_create_physical_replication_slot($1)', [names.slot(members.standby.name)]);

      // The forger: a certificate from the CA the members trust, for another cluster's names, and
      // pg_hba asking every client for its password in clear.
      const forgerMade = await runMemberTool(tool(forger), {
        tool: 'initdb',
        superuserPassword: makePassword('').password,
      });
      assert.ok(forgerMade.ok, JSON.stringify(forgerMade));
      const forged = await createServingCertificate({
        ca,
        commonName: names.primaryService('other'),
        dnsNames: postgresServerDnsNames('other', NAMESPACE),
      });
      const forgedFiles = { ...files, serverCert: join(forger.dir, 'tls.crt'), serverKey: join(forger.dir, 'tls.key') };
      writeAsPostgres(forgedFiles.serverCert, forged.certPem);
      writeAsPostgres(forgedFiles.serverKey, forged.keyPem);
      const settings = buildAgentSettings({
        podIP: forger.ip,
        podName: forger.name,
        socketDir: forger.dir,
        archiveCommand: '/bin/true',
        tls: forgedFiles,
      });
      writeAsPostgres(join(forger.pgdata, 'kanri.conf'), renderKanriConf('log_connections = on\n', settings).text);
      const conf = join(forger.pgdata, 'postgresql.conf');
      writeAsPostgres(conf, withKanriInclude(readFileSync(conf, 'utf8')));
      writeAsPostgres(
        join(forger.pgdata, 'pg_hba.conf'),
        ['local all all trust', 'host all all all password', 'host replication all all password', ''].join('\n'),
      );
      await start(forger);
    });

    after(async () => {
      try {
        for (const m of Object.values(members ?? {})) await stop(m);
        if (process.exitCode)
          for (const m of Object.values(members ?? {}))
            if (existsSync(m.logFile)) console.log(`---- ${m.name} ----\n${log(m).split('\n').slice(-40).join('\n')}`);
      } finally {
        await release?.();
        if (root) rmSync(root, { recursive: true, force: true });
      }
    });

    it('logs nobody in as the superuser by certificate, from the replication CA or the cluster CA, nor by password', async () => {
      const { primary } = members;
      for (const cert of ['postgres-from-shared-issuer', 'postgres-from-cluster-ca']) {
        const answer = await attempt(primary, { user: 'postgres', cert });
        assert.equal(answer.ok, false, `${cert} logged in: ${answer.out}`);
        assert.match(answer.out, /pg_hba\.conf rejects connection for host .*user "postgres"/);
      }
      const password = await attempt(primary, { user: 'postgres', password: superuser.password });
      assert.match(password.out, /pg_hba\.conf rejects connection for host .*user "postgres"/);
    });

    it("authenticates streaming_replica alone with a certificate of the replication CA, for replication and pg_rewind's database only", async () => {
      const { primary } = members;
      assert.deepEqual(await attempt(primary, { user: REPLICATION_USER, cert: 'replica' }), {
        ok: true,
        out: REPLICATION_USER,
      });
      const stream = await attempt(
        primary,
        { user: REPLICATION_USER, cert: 'replica', replication: true },
        'IDENTIFY_SYSTEM',
      );
      assert.equal(stream.ok, true, stream.out);
      const otherDatabase = await attempt(primary, { user: REPLICATION_USER, cert: 'replica', dbname: 'template1' });
      assert.match(
        otherDatabase.out,
        /pg_hba\.conf rejects connection .*user "streaming_replica", database "template1"/,
      );

      // The same CA names another role: its certificate is no way in for that role.
      const app = await attempt(primary, { user: 'app', cert: 'app-from-shared-issuer' });
      assert.equal(app.ok, false, app.out);
      assert.match(app.out, /no password supplied/);
      const misnamed = await attempt(primary, { user: REPLICATION_USER, cert: 'app-from-shared-issuer' });
      assert.match(misnamed.out, /certificate authentication failed for user "streaming_replica"/);
    });

    it('lets the superuser in from the network with spec.enableSuperuserAccess by its password only, never a certificate', async () => {
      const { primary } = members;
      try {
        configure(primary, { superuserAccess: true });
        await primary.db?.query('SELECT pg_reload_conf()');
        const byPassword = await waitFor(
          'the superuser password accepted',
          async () => {
            const answer = await attempt(primary, { user: 'postgres', password: superuser.password });
            return answer.ok ? answer : undefined;
          },
          10_000,
          200,
        );
        assert.equal(byPassword.out, 'postgres');
        const byCertificate = await attempt(primary, { user: 'postgres', cert: 'postgres-from-cluster-ca' });
        assert.equal(byCertificate.ok, false, byCertificate.out);
        assert.match(byCertificate.out, /no password supplied/);
      } finally {
        configure(primary);
        await primary.db?.query('SELECT pg_reload_conf()');
      }
    });

    it("refuses to clone from or rewind from a server certified for another cluster's name, and sends it no password", async () => {
      const { forger, standby } = members;
      const logBefore = log(forger).length;
      const clone = await runMemberTool(tool(standby, join(standby.dir, 'forged')), {
        tool: 'basebackup',
        target: target(forger),
        slot: names.slot(standby.name),
        applicationName: standby.name,
        replicationPassword: replication.password,
      });
      assert.equal(clone.ok, false, 'cloned the forger');
      assert.match(clone.ok ? '' : clone.error, /does not match host name "hippo-primary\.db\.svc"/);
      const rewound = await runMemberTool(tool(standby), {
        tool: 'rewind',
        source: target(forger),
        replicationPassword: replication.password,
      });
      assert.equal(rewound.ok, false, 'rewound from the forger');
      assert.match(rewound.ok ? '' : rewound.error, /does not match certificate's altnames/);
      const seen = log(forger).slice(logBefore);
      assert.ok((seen.match(/connection received/g) ?? []).length >= 2, 'both reached the forger');
      assert.doesNotMatch(seen, /password authentication failed|connection authorized/);
    });

    it('clones, streams and rewinds from the real members by verify-full as streaming_replica, holding a wrong password', async () => {
      const { primary, standby, forger } = members;
      const wrong = 'not-the-replication-password';
      const clone = await runMemberTool(tool(standby), {
        tool: 'basebackup',
        target: target(primary),
        slot: names.slot(standby.name),
        applicationName: standby.name,
        replicationPassword: wrong,
      });
      assert.ok(clone.ok, JSON.stringify(clone));
      configure(standby, { follow: primary });
      const standbyDb = await start(standby);
      const streaming = async (on: LocalDb, name: string) =>
        waitFor(
          `${name} streaming over TLS`,
          async () => {
            const rows = await on.query(STREAMING);
            return rows.find((row) => row.name === name && row.state === 'streaming');
          },
          60_000,
          200,
        );
      assert.deepEqual(await streaming(primary.db as LocalDb, standby.name), {
        name: standby.name,
        usename: REPLICATION_USER,
        state: 'streaming',
        ssl: true,
        client_dn: `/CN=${REPLICATION_USER}`,
        issuer_dn: '/CN=shared-issuer',
      });

      // The standby's walreceiver, sent to the forger, refuses it too.
      const forgerLogBefore = log(forger).length;
      configure(standby, { follow: forger });
      await standbyDb.query('SELECT pg_reload_conf()');
      await waitFor(
        "the walreceiver refusing the forger's certificate",
        () => /does not match host name "hippo-primary\.db\.svc"/.test(log(standby)),
        30_000,
        200,
      );
      assert.doesNotMatch(log(forger).slice(forgerLogBefore), /password authentication failed|connection authorized/);
      configure(standby, { follow: primary });
      await standbyDb.query('SELECT pg_reload_conf()');
      await streaming(primary.db as LocalDb, standby.name);

      // A failover: the standby is promoted while the old primary writes on, past the fork.
      await primary.db?.query('CREATE TABLE before_failover AS SELECT 1 AS x');
      await waitFor(
        'the standby to replay it',
        async () => (await standbyDb.query("SELECT to_regclass('before_failover') AS t"))[0]?.t,
        30_000,
        100,
      );
      await standbyDb.query('SELECT pg_promote()');
      await primary.db?.query('CREATE TABLE diverged AS SELECT 1 AS x');
      await stop(primary);
      // The new primary checkpoints its timeline itself, as its agent does; the old one waits for it.
      const started = await checkpointIfTimelineLags(standbyDb, undefined, silent);
      await started?.done;
      await standbyDb.query('SELECT pg_create_physical_replication_slot($1)', [names.slot(primary.name)]);
      const rewound = await runMemberTool(tool(primary), {
        tool: 'rewind',
        source: target(standby),
        replicationPassword: wrong,
      });
      assert.ok(rewound.ok, JSON.stringify(rewound));
      assert.equal(rewound.result?.needed, true, 'the histories had diverged');

      // The old primary rejoins as the new one's standby, without what it wrote past the fork.
      writeAsPostgres(join(primary.pgdata, 'standby.signal'), '');
      configure(primary, { follow: standby });
      const rejoined = await start(primary);
      await streaming(standbyDb, primary.name);
      const [row] = await rejoined.query("SELECT to_regclass('diverged') AS d, to_regclass('before_failover') AS b");
      assert.deepEqual(row, { d: null, b: 'before_failover' });
    });
  });
}
