/**
 * Issue 37, finding 8: deleting the cluster's TLS Secret or its ConfigMap never weakens what the
 * instances serve. Before, a deleted `<cluster>-postgres-tls` turned TLS off in every instance (with
 * `tls.required`, no network connection got in at all; without, plain ones did), and a deleted
 * `<cluster>-config` fell back to a pg_hba.conf that let the superuser's password in from the
 * network; a Pod that started meanwhile ran postgres with both. The operator is stopped while the
 * objects are gone, so nothing re-creates them under the test; once it runs again it re-creates
 * them and says so (condition SecurityMaterialMissing, Warning Events), and the waiting instance starts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import type { KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { ConfigMap, Pod } from 'kubernetes-types/core/v1.js';
import pg from 'pg';
import { ANNOTATION, LABEL, names, readPodReport } from '../src/contract/index.js';
import {
  clusterManifest,
  clusters,
  type PostgresEnv,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';
import { clusterEvents, waitForClusterEvent } from './support/cluster-observers.js';
import { TEST_PG_BIN } from './support/pg-bin.js';

const CLUSTER = 'closed';
const NS = { namespace: 'default' };
const run = promisify(execFile);

describe('a deleted TLS Secret or ConfigMap: the instances fail closed', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  let dir: string;
  let superuser: string;
  let app: string;
  let caFile: string;
  const psql = join(TEST_PG_BIN, 'psql');
  const pods = () => env.client.resource<Pod & KubeObject>('v1', 'Pod');

  /**
   * psql as `user` with `conninfo` added, through the primary Service or to `address`; whether the
   * session is encrypted (`t`), or the error prefixed `refused: `.
   */
  async function viaPsql(user: string, password: string, conninfo: string, address?: string): Promise<string> {
    const [host, port] = (address ?? (await serviceAddress(env.cp, 'default', `${CLUSTER}-primary`, 5432))).split(':');
    try {
      const { stdout } = await run(
        psql,
        [
          `hostaddr=${host} port=${port} user=${user} dbname=postgres connect_timeout=5 ${conninfo}`,
          '-Atc',
          'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
        ],
        { env: { PATH: process.env.PATH, PGPASSWORD: password }, timeout: 15_000 },
      );
      return stdout.trim();
    } catch (error) {
      return `refused: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`;
    }
  }

  /** Each instance's agent has logged `line` (it saw the change under test). */
  async function everyAgentLogged(line: string): Promise<boolean> {
    for (const pod of [`${CLUSTER}-i-0`, `${CLUSTER}-i-1`])
      if (!(await env.containerOutput(pod)).some((l) => l.includes(line))) return false;
    return true;
  }

  /**
   * Checks `ok` until every agent has logged `seen` and 3 s more have passed; fails at once when
   * `ok` does not hold (what the base code did within a second of the deletion).
   */
  async function holdsAfterAgentsSaw(seen: string, ok: () => Promise<string | undefined>): Promise<void> {
    let sawAt: number | undefined;
    await waitFor(
      `the agents to see the deletion (${seen}) while the check holds`,
      async () => {
        const problem = await ok();
        if (problem) return { problem };
        sawAt ??= (await everyAgentLogged(seen)) ? Date.now() : undefined;
        return sawAt !== undefined && Date.now() - sawAt > 3_000 ? { problem: undefined } : undefined;
      },
      60_000,
      300,
    ).then(({ problem }) => assert.equal(problem, undefined));
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-fail-closed-'));
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 2, {
        // The defaults the finding is about: the superuser's password is refused from the network.
        enableSuperuserAccess: false,
        tls: { required: true },
        users: [{ name: 'app', databases: ['app'] }],
      }),
    );
    await waitReady(env.client, CLUSTER, 2);
    superuser = await secretValue(env.client, names.superuserSecret(CLUSTER), 'password');
    app = await secretValue(env.client, names.userSecret(CLUSTER, 'app'), 'password');
    const clientCa = await env.client
      .resource<ConfigMap & KubeObject>('v1', 'ConfigMap')
      .get(names.clientCa(CLUSTER), NS);
    caFile = join(dir, 'ca.crt');
    await writeFile(caFile, clientCa.data?.['ca.crt'] ?? '');
    // What the deletions must not change.
    assert.equal(await viaPsql('app', app, 'sslmode=require'), 't');
    assert.match(await viaPsql('app', app, 'sslmode=disable'), /refused: .*no encryption/);
    assert.match(
      await viaPsql('postgres', superuser, 'sslmode=require'),
      /refused: .*pg_hba\.conf rejects connection .*user "postgres"/,
    );
    await env.stopOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs())?.split('\n').slice(-200).join('\n'));
    await env?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps refusing the superuser's password from the network when the ConfigMap is deleted", async () => {
    await env.client.resource('v1', 'ConfigMap').delete(names.config(CLUSTER), NS);
    await holdsAfterAgentsSaw('keeping the cluster configuration in force', async () => {
      const superuserLogin = await viaPsql('postgres', superuser, 'sslmode=require');
      if (!superuserLogin.startsWith('refused'))
        return "the superuser's password was accepted from the network after the ConfigMap was deleted";
      const appLogin = await viaPsql('app', app, 'sslmode=require');
      return appLogin === 't' ? undefined : `the app user lost its access: ${appLogin}`;
    });
  });

  it('keeps serving TLS, the certificate clients verify included, when the TLS Secret is deleted, and plain connections stay refused', async () => {
    await env.client.resource('v1', 'Secret').delete(names.postgresTls(CLUSTER), NS);
    await holdsAfterAgentsSaw('keeping the TLS certificates served so far', async () => {
      const overTls = await viaPsql('app', app, 'sslmode=require');
      if (overTls !== 't') return `sslmode=require after the TLS Secret was deleted: ${overTls}`;
      const verified = await viaPsql(
        'app',
        app,
        `host=${CLUSTER}-primary.default.svc sslmode=verify-full sslrootcert=${caFile}`,
      );
      if (verified !== 't') return `verify-full with the cluster's CA: ${verified}`;
      const plain = await viaPsql('app', app, 'sslmode=disable');
      return /^refused: .*no encryption/.test(plain) ? undefined : `a plain connection: ${plain}`;
    });
  });

  it('starts an instance recreated meanwhile only once the operator re-created both, which it says in a condition and Events', async () => {
    // The replica's Pod comes back as the operator would have made it, on its volume, with an empty run volume.
    const primary = (await clusters(env.client).get(CLUSTER, NS)).status?.primary;
    const replica = [`${CLUSTER}-i-0`, `${CLUSTER}-i-1`].find((p) => p !== primary) as string;
    const old = await pods().get(replica, NS);
    await pods().delete(replica, NS);
    await waitFor(
      `${replica} gone`,
      async () => !(await pods().list({ ...NS, fieldSelector: `metadata.name=${replica}` })).items.length,
      60_000,
      250,
    );
    const { [LABEL.role]: _role, ...labels } = old.metadata?.labels ?? {};
    const {
      [ANNOTATION.status]: _status,
      [ANNOTATION.peerCertificate]: _peer,
      ...annotations
    } = old.metadata?.annotations ?? {};
    await pods().create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: replica,
        namespace: 'default',
        labels,
        annotations,
        ownerReferences: old.metadata?.ownerReferences,
      },
      spec: old.spec,
    } as Pod & KubeObject);

    const waiting = await waitFor(
      `${replica} to report that it waits for the ConfigMap and the TLS Secret`,
      async () => {
        const report = readPodReport(await pods().get(replica, NS));
        const message = report?.message ?? '';
        return message.includes(`ConfigMap ${names.config(CLUSTER)} does not exist`) &&
          message.includes(`Secret ${names.postgresTls(CLUSTER)} does not exist`)
          ? report
          : undefined;
      },
      90_000,
      500,
    );
    assert.equal(waiting.ready, false);
    assert.match(
      waiting.message ?? '',
      new RegExp(
        `ConfigMap ${names.config(CLUSTER)} does not exist: postgres does not start without the cluster's pg_hba\\.conf`,
      ),
    );
    assert.match(
      waiting.message ?? '',
      new RegExp(`Secret ${names.postgresTls(CLUSTER)} does not exist: postgres does not start without TLS`),
    );
    const ip = (await pods().get(replica, NS)).status?.podIP ?? '';
    assert.ok(ip);
    assert.equal(await portAnswer(ip, 5432), 'ECONNREFUSED', 'postgres does not listen on the network');
    // EVENT_REASON.waitingForMaterial, as a literal: this file also runs against the code before it.
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Warning',
      reason: 'WaitingForMaterial',
      note: new RegExp(replica),
    });

    // The operator, back, re-creates both and says so; the condition clears on its next pass.
    const seen: { status: string; message: string }[] = [];
    const stopWatch = new AbortController();
    const from = (await clusters(env.client).get(CLUSTER, NS)).metadata?.resourceVersion;
    const watching = (async () => {
      try {
        for await (const event of clusters(env.client).watch({
          ...NS,
          fieldSelector: `metadata.name=${CLUSTER}`,
          ...(from ? { resourceVersion: from } : {}),
          signal: stopWatch.signal,
        })) {
          const condition = event.object.status?.conditions?.find((c) => c.type === 'SecurityMaterialMissing');
          if (condition) seen.push({ status: condition.status, message: condition.message ?? '' });
        }
      } catch {
        // Aborted at the end.
      }
    })();
    try {
      await env.startOperator();
      const raised = await waitFor(
        'SecurityMaterialMissing True',
        async () => seen.find((c) => c.status === 'True'),
        60_000,
        200,
      );
      assert.match(raised.message, new RegExp(`${names.config(CLUSTER)}`));
      assert.match(raised.message, new RegExp(`${names.postgresTls(CLUSTER)}`));
      assert.match(raised.message, /keep serving with the certificates, pg_hba\.conf and parameters they had/);
      await waitReady(env.client, CLUSTER, 2);
      const cleared = await waitFor(
        'SecurityMaterialMissing False again',
        async () => {
          const c = (await clusters(env.client).get(CLUSTER, NS)).status?.conditions?.find(
            (x) => x.type === 'SecurityMaterialMissing',
          );
          return c?.status === 'False' ? c : undefined;
        },
        60_000,
        500,
      );
      assert.equal(cleared.reason, 'Present');
    } finally {
      stopWatch.abort();
      await watching;
    }
    const warnings = (await clusterEvents(env.client, CLUSTER)).filter((e) => e.reason === 'SecurityMaterialRecreated');
    assert.deepEqual(warnings.map((e) => e.note.split(' ')[0]).sort(), [
      names.config(CLUSTER),
      names.postgresTls(CLUSTER),
    ]);
    // The instance that waited serves what the others do: TLS required, the superuser refused.
    const at = `${ip}:5432`;
    assert.equal(await viaPsql('app', app, 'sslmode=require', at), 't');
    assert.match(await viaPsql('app', app, 'sslmode=disable', at), /refused: .*no encryption/);
    assert.match(
      await viaPsql('postgres', superuser, 'sslmode=require', at),
      /refused: .*pg_hba\.conf rejects connection .*user "postgres"/,
    );
  });

  it("replaces the server certificate whose keys are removed (the README's rotation step), with verify-full served throughout", async () => {
    const secret = names.postgresTls(CLUSTER);
    const before = await secretValue(env.client, secret, 'tls.crt');
    assert.equal(await servedCertificate(), fingerprint(before));
    const failures: string[] = [];
    let checks = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        const verified = await viaPsql(
          'app',
          app,
          `host=${CLUSTER}-primary.default.svc sslmode=verify-full sslrootcert=${caFile}`,
        );
        if (verified !== 't') failures.push(verified);
        checks += 1;
      }
    })();
    try {
      await env.client.resource('v1', 'Secret').patch(
        secret,
        [
          { op: 'remove', path: '/data/tls.crt' },
          { op: 'remove', path: '/data/tls.key' },
        ],
        { ...NS, type: 'json' },
      );
      const renewed = await waitFor(
        'a new server certificate in the Secret',
        async () => {
          const cert = await secretValue(env.client, secret, 'tls.crt');
          return cert && cert !== before ? cert : undefined;
        },
        60_000,
        250,
      );
      await waitFor(
        'the new certificate served',
        async () => (await servedCertificate()) === fingerprint(renewed),
        60_000,
        250,
      );
      const servedAt = checks;
      await waitFor('3 more verify-full connections', () => checks >= servedAt + 3, 30_000, 100);
    } finally {
      stop = true;
      await load;
    }
    assert.deepEqual(failures, [], `${failures.length} of ${checks} verify-full connections failed`);
    const events = await clusterEvents(env.client, CLUSTER);
    assert.equal(
      events.filter((e) => e.reason === 'SecurityMaterialRecreated' && e.note.startsWith(`${secret} `)).length,
      1,
      'removing keys is a rotation, not a loss: no further Warning',
    );
  });

  /** The SHA-256 fingerprint of the server certificate the primary presents. */
  async function servedCertificate(): Promise<string> {
    const [host, port] = (await serviceAddress(env.cp, 'default', `${CLUSTER}-primary`, 5432)).split(':');
    const client = new pg.Client({
      host,
      port: Number(port),
      user: 'app',
      password: app,
      database: 'postgres',
      ssl: { rejectUnauthorized: false },
      connectionTimeoutMillis: 5_000,
    });
    await client.connect();
    try {
      const socket = (client as unknown as { connection: { stream: TLSSocket } }).connection.stream;
      return new X509Certificate(socket.getPeerCertificate().raw).fingerprint256;
    } finally {
      await client.end();
    }
  }
});

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** How a TCP connection to `ip:port` ends: `open`, or the error's code. */
function portAnswer(ip: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: ip, port, timeout: 5_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}
