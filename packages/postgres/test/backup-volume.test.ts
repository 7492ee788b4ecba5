/**
 * A `volume` repo, as PGO's starter example declares one: the repo host Pod mounts its PVC and
 * serves it over pgBackRest's TLS server; the instances archive and restore through it; it runs
 * the backups against the primary's own TLS server. A clone reads it through the repo host's
 * read-only clone port, with a grant that goes once the clone has restored. End to end on the real
 * control plane, PostgreSQL 15 and pgBackRest, with no S3 server at all.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { certifyPublicKey, createServingCertificate } from '@kanri/runtime';
import { ensurePgBackRest, waitFor } from '@kanri/testenv';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import {
  ANNOTATION,
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_KEY,
  BACKUP_ANNOTATION,
  CLONE_COMMON_NAME,
  CLONE_GRANT_PREFIX,
  cloneToken,
  names,
  PGBACKREST_CA_KEY,
  PGBACKREST_CLONE_PORT,
  pgbackrestClientName,
  readCloneGrants,
  readServerInfo,
  splitPeerCertificate,
} from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import {
  backupStatus,
  backupsOf,
  markers,
  restoreInPlace,
  sqlOn,
  switchWal,
  targetTime,
  writeMarkers,
} from './support/backup-fixtures.js';
import { waitForClusterEvent } from './support/cluster-observers.js';

const CLUSTER = 'vault';
const REPO_HOST = names.repoHost(CLUSTER);
const COPY = 'vault-copy';
const volumeRepo = {
  name: 'repo1',
  volume: { volumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};

/** Every file under `root` with its size and modification time: what a write, an expire or a delete would change. */
function repoSnapshot(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const info = statSync(path);
        files[path.slice(root.length)] = `${info.size}:${info.mtimeMs}`;
      }
    }
  };
  walk(root);
  return files;
}

/** Every file that was in the repo is still there, unchanged (the primary goes on archiving new WAL beside them). */
function assertUntouched(before: Record<string, string>, after: Record<string, string>): void {
  // A segment being pushed as the snapshot was taken is renamed into place: not one of the repo's files yet.
  const changed = Object.keys(before).filter(
    (file) => !file.endsWith('.pgbackrest.tmp') && after[file] !== before[file],
  );
  assert.deepEqual(changed, [], 'files of the repo deleted or rewritten');
}

/** The status the clone port answers a listing with, for `token`. */
function gatewayStatus(address: string, ca: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: address,
        port: PGBACKREST_CLONE_PORT,
        path: '/storage/v1/b/repo1/o?delimiter=%2F&prefix=backup%2F',
        ca,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** Runs pgBackRest here (as this user), never rejecting for its exit code. */
async function runPgBackRest(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = await ensurePgBackRest();
  return new Promise((resolve) => {
    execFile(bin, args, { timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('a volume repo behind the repo host', { timeout: 25 * 60_000 }, () => {
  let env: PostgresEnv;
  let repoPath: string;
  const annotate = (key: string, value: string) =>
    clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { [key]: value } } },
      { namespace: 'default', type: 'merge' },
    );
  const pod = (name: string) =>
    env.client.resource<Pod & { metadata: { name: string } }>('v1', 'Pod').get(name, { namespace: 'default' });
  /** Requests a backup by annotation; resolves its PostgresBackup once finished. */
  const backUp = async (id: string) => {
    const known = new Set((await backupsOf(env, CLUSTER)).map((b) => b.metadata.name));
    await annotate(BACKUP_ANNOTATION.backup, id);
    return waitFor(
      `backup ${id} to finish`,
      async () => {
        const b = (await backupsOf(env, CLUSTER)).find((x) => !known.has(x.metadata.name));
        return b?.status?.phase === 'Succeeded' || b?.status?.phase === 'Failed' ? b : undefined;
      },
      300_000,
      1_000,
    );
  };
  /** Whether segment `wal` is in the repo's archive, on the repo host's volume. */
  const archived = (wal: string) => {
    const archive = join(repoPath, 'archive', 'db');
    if (!existsSync(archive)) return false;
    for (const version of readdirSync(archive).filter((d) => /^\d+-\d+$/.test(d))) {
      const dir = join(archive, version, wal.slice(0, 16));
      if (existsSync(dir) && readdirSync(dir).some((f) => f.startsWith(wal))) return true;
    }
    return false;
  };

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, pgbackrest: true });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 2, {
        backups: { pgbackrest: { repos: [volumeRepo], manual: { repoName: 'repo1', options: ['--type=full'] } } },
      } as never),
    );
    await waitReady(env.client, CLUSTER, 2, 240_000);
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('runs a full backup on the repo host into its volume, and archives WAL there', async () => {
    const host = await waitFor(
      'the repo host to serve',
      async () => {
        const p = await pod(REPO_HOST);
        const info = readServerInfo(p);
        return info?.repoPaths?.repo1 && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
          ? { pod: p, info }
          : undefined;
      },
      180_000,
      1_000,
    );
    repoPath = host.info.repoPaths?.repo1 ?? '';
    await waitFor(
      'the stanza on the volume repo',
      async () => ((await backupStatus(env, CLUSTER)).pgbackrest?.repos?.[0]?.stanzaCreated ? true : undefined),
      120_000,
      1_000,
    );
    assert.ok(existsSync(join(repoPath, 'backup', 'db', 'backup.info')), `backup.info in ${repoPath}`);

    const first = await backUp('first');
    assert.equal(first.status?.phase, 'Succeeded', first.status?.message);
    assert.match(first.status?.label ?? '', /^\d{8}-\d{6}F$/);
    assert.equal((first.status as { instance?: string }).instance, REPO_HOST, 'the repo host ran it');
    assert.ok(
      existsSync(join(repoPath, 'backup', 'db', first.status?.label ?? '', 'backup.manifest')),
      'the backup is on the repo volume',
    );

    const wal = await switchWal(env, CLUSTER);
    await waitFor(`WAL ${wal} on the repo volume`, async () => (archived(wal) ? true : undefined), 120_000, 500);
    const status = await backupStatus(env, CLUSTER);
    assert.equal(status.conditions?.find((c) => c.type === 'WALArchiving')?.status, 'True');
  });

  it('serves only clients holding a certificate of the cluster’s CA; its own certificate names its Pod IP', async () => {
    const host = await pod(REPO_HOST);
    const info = readServerInfo(host);
    // The repo host's own key and certificate, in its run volume (this test runs on its node).
    const own = join(dirname(info?.config ?? ''), 'pgbackrest-tls');
    const dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-client-'));
    try {
      const write = async (name: string, text: string) => {
        await writeFile(join(dir, name), text, { mode: 0o600 });
        return join(dir, name);
      };
      // A certificate of another CA, with the cluster's common name: what a foreign client would forge.
      const foreign = await createServingCertificate({
        ipAddresses: ['127.0.0.1'],
        commonName: pgbackrestClientName(CLUSTER),
        clientAuth: true,
      });
      const list = async (cert: string, key: string) =>
        runPgBackRest([
          `--stanza=db`,
          `--repo1-host=${host.status?.podIP}`,
          '--repo1-host-type=tls',
          `--repo1-host-ca-file=${join(own, 'ca.crt')}`,
          `--repo1-host-cert-file=${cert}`,
          `--repo1-host-key-file=${key}`,
          `--repo1-host-config=${info?.config}`,
          '--log-level-console=off',
          '--log-level-stderr=error',
          'repo-ls',
        ]);
      // The cluster's own certificate (the repo host's, as a client) lists the repo: the control.
      // Copied: pgBackRest wants a key file owned by whoever runs it.
      const allowed = await list(
        await write('own.crt', readFileSync(join(own, 'tls.crt'), 'utf8')),
        await write('own.key', readFileSync(join(own, 'tls.key'), 'utf8')),
      );
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.match(allowed.stdout, /archive/);
      const refused = await list(
        await write('foreign.crt', foreign.certPem),
        await write('foreign.key', foreign.keyPem),
      );
      assert.notEqual(refused.code, 0, 'a foreign CA is refused');
      assert.doesNotMatch(refused.stdout, /archive/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const { cert } = splitPeerCertificate(host.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE]);
    const served = new X509Certificate(cert ?? '');
    assert.ok(served.subjectAltName?.split(', ').includes(`IP Address:${host.status?.podIP}`), served.subjectAltName);
  });

  it('after a switchover, backs up the new primary, and restores in place to a time T through the repo host', async () => {
    const before = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
    const oldPrimary = before.status?.primary ?? '';
    await annotate(ANNOTATION.switchover, '*');
    await waitFor(
      'a new primary',
      async () => {
        const c = await clusters(env.client).get(CLUSTER, { namespace: 'default' });
        return c.status?.primary && c.status.primary !== oldPrimary ? c : undefined;
      },
      120_000,
      500,
    );
    await waitReady(env.client, CLUSTER, 2, 180_000);
    const second = await backUp('second');
    assert.equal(second.status?.phase, 'Succeeded', second.status?.message);
    assert.equal((second.status as { instance?: string }).instance, REPO_HOST);
    assert.ok(
      (second.status?.walStart ?? '').startsWith('00000002'),
      `backed up timeline 2: ${second.status?.walStart}`,
    );

    const t = await writeMarkers(env, CLUSTER, 20, 10);
    const wal = await switchWal(env, CLUSTER);
    await waitFor(`WAL ${wal} on the repo volume`, async () => (archived(wal) ? true : undefined), 120_000, 500);

    const hostUid = (await pod(REPO_HOST)).metadata?.uid;
    const done = await restoreInPlace(env, CLUSTER, 'to-t', targetTime(t));
    assert.equal(done.phase, 'Succeeded', done.message);
    assert.equal(done.succeeded, 1);
    await waitReady(env.client, CLUSTER, 2, 300_000);
    assert.deepEqual(
      await markers(env, CLUSTER),
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
    // The repo host lived through the restore (the instances were fenced, never it), and the
    // restored primary archives its new timeline there.
    assert.equal((await pod(REPO_HOST)).metadata?.uid, hostUid, 'the same repo host Pod');
    const next = await switchWal(env, CLUSTER);
    assert.notEqual(next.slice(0, 8), wal.slice(0, 8), 'a new timeline');
    await waitFor(`WAL ${next} on the repo volume`, async () => (archived(next) ? true : undefined), 120_000, 500);
  });

  it('lets a granted reader of the clone port read the repo, never write, expire or delete it; a grant removed reads nothing (issue 37, finding 4)', async () => {
    const host = await pod(REPO_HOST);
    const served = splitPeerCertificate(host.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE]);
    const caSecret = await env.client
      .resource<Secret & { metadata: { name: string } }>('v1', 'Secret')
      .get(names.pgbackrestCa(CLUSTER), { namespace: 'default' });
    const decoded = (key: string) => Buffer.from(caSecret.data?.[key] ?? '', 'base64').toString('utf8');
    const ca = { caCertPem: decoded(PGBACKREST_CA_KEY.cert), caKeyPem: decoded(PGBACKREST_CA_KEY.key) };
    // The test stands for a restoring clone's Pod: its own key, granted as the operator grants one.
    // The operator is stopped meanwhile: the source's reconcile drops a grant of no clone it knows.
    await env.stopOperator();
    const dir = await mkdtemp(join(tmpdir(), 'kanri-clone-reader-'));
    const grantKey = `${CLONE_GRANT_PREFIX}reader-0`;
    const setGrant = (value: string | null) =>
      env.client
        .resource('v1', 'Pod')
        .patch(
          REPO_HOST,
          { metadata: { annotations: { [grantKey]: value } } },
          { namespace: 'default', type: 'merge' },
        );
    try {
      const reader = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const certificate = await certifyPublicKey({
        publicKeyPem: reader.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        commonName: CLONE_COMMON_NAME,
        dnsNames: ['reader-0'],
        ca,
        validityDays: 1 / 24,
      });
      await setGrant(JSON.stringify({ cluster: 'reader', certificate }));
      const token = cloneToken(
        diffieHellman({ privateKey: reader.privateKey, publicKey: new X509Certificate(served.cert ?? '').publicKey }),
        'reader-0',
      );
      const caFile = join(dir, 'ca.crt');
      await writeFile(caFile, served.ca ?? '');
      // What the clone's agent writes (pgBackRest takes the key from a file, never the command line).
      const conf = join(dir, 'pgbackrest.conf');
      await writeFile(conf, ['[global]', `repo1-gcs-key=Bearer ${token}`, ''].join('\n'), { mode: 0o600 });
      // repo-ls takes no lock (and refuses the option); the stanza commands do.
      const gcs = (args: string[]) =>
        runPgBackRest([
          ...(args.includes('repo-ls') ? [] : [`--lock-path=${dir}`]),
          `--config=${conf}`,
          '--stanza=db',
          '--repo1-type=gcs',
          '--repo1-gcs-bucket=repo1',
          `--repo1-gcs-endpoint=${host.status?.podIP}:${PGBACKREST_CLONE_PORT}`,
          '--repo1-gcs-key-type=token',
          `--repo1-storage-ca-file=${caFile}`,
          '--repo1-path=/',
          `--log-path=${dir}`,
          '--log-level-console=off',
          '--log-level-stderr=error',
          ...args,
        ]);
      const before = repoSnapshot(repoPath);
      const info = await waitFor(
        'the grant to let the reader list the backups',
        async () => {
          const r = await gcs(['--output=json', 'info']);
          if (r.code !== 0 || !r.stdout.includes('"backup"')) throw new Error(r.stderr || r.stdout);
          return r;
        },
        30_000,
        500,
      );
      const backups = (JSON.parse(info.stdout) as { backup: unknown[] }[])[0]?.backup ?? [];
      assert.ok(backups.length >= 2, `the reader sees the backups: ${info.stdout.slice(0, 200)}`);
      const listed = await gcs(['repo-ls', 'backup/db']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /backup\.info/);
      const expire = await gcs(['--repo1-retention-full=1', 'expire']);
      assert.notEqual(expire.code, 0, 'expire refused');
      assert.match(`${expire.stdout}${expire.stderr}`, /403|read-only/);
      // stanza-delete runs only on a stopped stanza (a local stop file, nothing in the repo).
      const stopped = await runPgBackRest(['--stanza=db', `--lock-path=${dir}`, '--log-level-console=off', 'stop']);
      assert.equal(stopped.code, 0, stopped.stdout + stopped.stderr);
      const deleted = await gcs([`--pg1-path=${dir}`, '--force', 'stanza-delete']);
      assert.notEqual(deleted.code, 0, 'stanza-delete refused');
      assert.match(`${deleted.stdout}${deleted.stderr}`, /403|read-only/);
      assertUntouched(before, repoSnapshot(repoPath));
      await setGrant(null);
      await waitFor(
        'the removed grant to be refused',
        async () => {
          // repo-ls, not info: info reports an unreadable repo in its output and exits 0.
          const r = await gcs(['repo-ls']);
          if (r.code === 0) throw new Error(`still reads: ${r.stdout}`);
          return r;
        },
        30_000,
        250,
      );
    } finally {
      await setGrant(null).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      await env.startOperator();
    }
  });

  it("clones another cluster from the volume repo, read-only through the source's clone port, granted by the source alone; the grant goes once it has restored (issue 37, finding 4)", async () => {
    await sqlOn(env, CLUSTER, 'INSERT INTO markers (n) VALUES (100)');
    const wal = await switchWal(env, CLUSTER);
    await waitFor(`WAL ${wal} on the repo volume`, async () => (archived(wal) ? true : undefined), 120_000, 500);
    const before = repoSnapshot(repoPath);
    const clonePod = names.pod(COPY, 'i', 0);
    const grantOf = async () => readCloneGrants((await pod(REPO_HOST)).metadata?.annotations).get(clonePod);
    // The grant is the source's to give, on its own repo host: while the source is paused, its
    // operator changes nothing of it, and a clone's reconcile writes nothing of another cluster's.
    const pause = (paused: boolean) =>
      clusters(env.client).patch(CLUSTER, { spec: { paused } }, { namespace: 'default', type: 'merge' });
    await pause(true);
    await clusters(env.client).create(
      clusterManifest(COPY, 1, {
        dataSource: { postgresCluster: { clusterName: CLUSTER, repoName: 'repo1' } },
      } as never),
    );
    await waitFor(
      'the clone Pod to publish its pgBackRest key',
      async () => (await pod(clonePod).catch(() => undefined))?.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY],
      180_000,
      250,
    );
    // A few of the clone's reconciles (its Pod's key wakes it).
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    assert.equal(await grantOf(), undefined, 'no grant while the source is paused');
    await pause(false);
    const granted = await waitFor('the clone Pod’s grant', async () => grantOf(), 180_000, 100);
    assert.equal(granted.cluster, COPY);
    const grantCert = new X509Certificate(granted.certificate);
    assert.equal(grantCert.subject, `CN=${CLONE_COMMON_NAME}`);
    assert.ok(Date.parse(grantCert.validTo) - Date.now() <= 3_600_000 + 5_000, `short-lived: ${grantCert.validTo}`);
    await waitReady(env.client, COPY, 1, 300_000);
    assert.deepEqual(await markers(env, COPY), [...Array.from({ length: 10 }, (_, i) => i + 1), 100]);
    await waitFor(
      'the grant to be removed once the clone restored',
      async () => ((await grantOf()) ? undefined : true),
      60_000,
      250,
    );
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: 'SourceAccessRevoked',
      note: new RegExp(`${clonePod} of ${COPY} read its repo: it has restored`),
    });
    // The source's repo host now refuses the clone Pod's token (derived as the repo host derives it).
    const info = readServerInfo(await pod(REPO_HOST));
    const hostKey = createPrivateKey(
      readFileSync(join(dirname(info?.config ?? ''), 'pgbackrest-tls', 'tls.key'), 'utf8'),
    );
    const cloneKey = (await pod(clonePod)).metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY] ?? '';
    const token = cloneToken(diffieHellman({ privateKey: hostKey, publicKey: createPublicKey(cloneKey) }), clonePod);
    const host = await pod(REPO_HOST);
    const status = await gatewayStatus(
      host.status?.podIP ?? '',
      splitPeerCertificate(host.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE]).ca ?? '',
      token,
    );
    assert.equal(status, 403, 'the finished clone is refused');
    const legacy = await env.client
      .resource('v1', 'Secret')
      .get(names.pgbackrestSourceTls(COPY), { namespace: 'default' })
      .then(
        () => 'exists',
        () => 'absent',
      );
    assert.equal(legacy, 'absent', 'no Secret holds a certificate of the source’s');
    assertUntouched(before, repoSnapshot(repoPath));
  });
});
