/**
 * A `volume` repo, as PGO's starter example declares one: the repo host Pod mounts its PVC and
 * serves it over pgBackRest's TLS server; the instances archive and restore through it; it runs
 * the backups against the primary's own TLS server. End to end on the real control plane,
 * PostgreSQL 15 and pgBackRest, with no S3 server at all.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createServingCertificate } from '@kanri/runtime';
import { ensurePgBackRest, waitFor } from '@kanri/testenv';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import {
  ANNOTATION,
  BACKUP_ANNOTATION,
  names,
  PGBACKREST_TLS_KEY,
  pgbackrestClientName,
  readServerInfo,
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

const CLUSTER = 'vault';
const REPO_HOST = names.repoHost(CLUSTER);
const COPY = 'vault-copy';
const volumeRepo = {
  name: 'repo1',
  volume: { volumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};

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
    const secret = await env.client
      .resource<Secret & { metadata: { name: string } }>('v1', 'Secret')
      .get(names.pgbackrestTls(CLUSTER), { namespace: 'default' });
    const data = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
    const dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-client-'));
    try {
      const write = async (name: string, text: string) => {
        await writeFile(join(dir, name), text, { mode: 0o600 });
        return join(dir, name);
      };
      const ca = await write('ca.crt', data(PGBACKREST_TLS_KEY.ca));
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
          `--repo1-host-ca-file=${ca}`,
          `--repo1-host-cert-file=${cert}`,
          `--repo1-host-key-file=${key}`,
          `--repo1-host-config=${info?.config}`,
          '--log-level-console=off',
          '--log-level-stderr=error',
          'repo-ls',
        ]);
      // The cluster's own certificate (the repo host's, as a client) lists the repo: the control.
      const own = await list(
        await write('own.crt', data(PGBACKREST_TLS_KEY.cert(REPO_HOST))),
        await write('own.key', data(PGBACKREST_TLS_KEY.key(REPO_HOST))),
      );
      assert.equal(own.code, 0, own.stderr);
      assert.match(own.stdout, /archive/);
      const refused = await list(
        await write('foreign.crt', foreign.certPem),
        await write('foreign.key', foreign.keyPem),
      );
      assert.notEqual(refused.code, 0, 'a foreign CA is refused');
      assert.doesNotMatch(refused.stdout, /archive/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const served = new X509Certificate(data(PGBACKREST_TLS_KEY.cert(REPO_HOST)));
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

  it("clones another cluster from the volume repo, through the source's repo host with a certificate of its CA", async () => {
    await sqlOn(env, CLUSTER, 'INSERT INTO markers (n) VALUES (100)');
    const wal = await switchWal(env, CLUSTER);
    await waitFor(`WAL ${wal} on the repo volume`, async () => (archived(wal) ? true : undefined), 120_000, 500);
    const before = readdirSync(join(repoPath, 'backup', 'db')).sort();
    await clusters(env.client).create(
      clusterManifest(COPY, 1, {
        dataSource: { postgresCluster: { clusterName: CLUSTER, repoName: 'repo1' } },
      } as never),
    );
    await waitReady(env.client, COPY, 1, 300_000);
    assert.deepEqual(await markers(env, COPY), [...Array.from({ length: 10 }, (_, i) => i + 1), 100]);
    // Its certificate is the source CA's, with the source's name: what the source's repo host admits.
    const secret = await env.client
      .resource<Secret & { metadata: { name: string } }>('v1', 'Secret')
      .get(names.pgbackrestSourceTls(COPY), { namespace: 'default' });
    const cert = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString());
    assert.match(cert.subject, new RegExp(`CN=${pgbackrestClientName(CLUSTER)}`));
    assert.deepEqual(readdirSync(join(repoPath, 'backup', 'db')).sort(), before, "the source's backups are untouched");
  });
});
