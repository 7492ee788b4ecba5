/**
 * End to end: the pinned pgBackRest, run as the `postgres` OS user, archives WAL from a throwaway
 * PostgreSQL 15 to the testenv S3 server and takes a full backup there, over TLS trusted through
 * the server's CA file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFile, chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../src/free-port.js';
import { ensurePgBackRest, runnableFileAs, type S3Server, startS3Server, waitFor } from '../src/index.js';
import { type ManagedProcess, startProcess } from '../src/managed-process.js';
import { readPasswd } from '../src/process-node/users.js';

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const USER = 'postgres';
const BUCKET = 'pgbackrest';
const STANZA = 'db';

describe('pgBackRest to the testenv S3 server', { timeout: 600_000 }, () => {
  let s3: S3Server;
  let dir: string;
  let postgres: ManagedProcess | undefined;
  let asPostgres: string[];
  let pgbackrest: string;
  let config: string;

  /** Runs `command` as the postgres OS user, as a process node would. */
  const runAsPostgres = (command: string, args: string[], timeout = 300_000) =>
    run('setpriv', [...asPostgres, '--', command, ...args], { timeout, maxBuffer: 16 * 1024 * 1024 });
  const pgbackrestAs = (...args: string[]) =>
    runAsPostgres(pgbackrest, [`--config=${config}`, `--stanza=${STANZA}`, ...args]);

  before(async () => {
    const user = (await readPasswd()).find((entry) => entry.name === USER);
    assert.ok(user, `the ${USER} OS user exists`);
    asPostgres = [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups'];
    s3 = await startS3Server();
    await s3.createBucket(BUCKET);
    pgbackrest = runnableFileAs(USER, await ensurePgBackRest());

    dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-e2e-'));
    await chmod(dir, 0o755);
    const paths = {
      pgdata: join(dir, 'pgdata'),
      run: join(dir, 'run'),
      log: join(dir, 'log'),
      lock: join(dir, 'lock'),
    };
    // The postgres user cannot create entries in a root-owned directory: make each of its own.
    for (const d of Object.values(paths)) {
      await mkdir(d, { mode: 0o700 });
      await chown(d, user.uid, user.gid);
    }
    const port = await freePort();
    config = join(dir, 'pgbackrest.conf');
    await writeFile(
      config,
      [
        '[global]',
        'repo1-type=s3',
        `repo1-s3-bucket=${BUCKET}`,
        'repo1-s3-endpoint=localhost',
        `repo1-storage-port=${s3.port}`,
        `repo1-s3-region=${s3.region}`,
        'repo1-s3-uri-style=path',
        `repo1-s3-key=${s3.accessKeyId}`,
        `repo1-s3-key-secret=${s3.secretAccessKey}`,
        `repo1-storage-ca-file=${s3.caFile}`,
        'repo1-path=/repo',
        'repo1-retention-full=1',
        `log-path=${paths.log}`,
        `lock-path=${paths.lock}`,
        'log-level-console=warn',
        'log-level-file=detail',
        'start-fast=y',
        '',
        `[${STANZA}]`,
        `pg1-path=${paths.pgdata}`,
        `pg1-socket-path=${paths.run}`,
        `pg1-port=${port}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    await chown(config, user.uid, user.gid);

    await runAsPostgres(join(PG_BIN, 'initdb'), ['-D', paths.pgdata, '-U', USER, '--auth=trust', '--no-sync']);
    await appendFile(
      join(paths.pgdata, 'postgresql.conf'),
      [
        '',
        "listen_addresses = ''", // unix socket only
        `port = ${port}`,
        `unix_socket_directories = '${paths.run}'`,
        'wal_level = replica',
        'archive_mode = on',
        `archive_command = '${pgbackrest} --config=${config} --stanza=${STANZA} archive-push %p'`,
        'fsync = off',
        '',
      ].join('\n'),
    );
    postgres = startProcess({
      name: 'postgres',
      command: 'setpriv',
      args: [...asPostgres, '--', join(PG_BIN, 'postgres'), '-D', paths.pgdata],
      logFile: join(paths.log, 'postgres.log'),
    });
    await waitFor(
      'PostgreSQL to accept connections',
      async () => {
        if (!postgres?.running) throw new Error(`postgres exited:\n${await postgres?.logTail()}`);
        return run(join(PG_BIN, 'pg_isready'), ['-h', paths.run, '-p', String(port)]).then(
          () => true,
          () => false,
        );
      },
      60_000,
    );
  });

  after(async () => {
    await postgres?.stop(30_000);
    await s3?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates the stanza, archives WAL and takes a full backup into the bucket', async (t) => {
    await pgbackrestAs('stanza-create');
    const started = Date.now();
    await pgbackrestAs('backup', '--type=full');
    const backupMs = Date.now() - started;

    const { stdout } = await pgbackrestAs('info', '--output=json');
    const [stanza] = JSON.parse(stdout) as { status: { code: number }; backup: { type: string }[] }[];
    assert.equal(stanza?.status.code, 0, `stanza status: ${stdout}`);
    assert.deepEqual(
      stanza?.backup.map((b) => b.type),
      ['full'],
    );

    const objects = await s3.listObjects(BUCKET, 'repo/');
    const keys = objects.map((o) => o.key);
    assert.ok(keys.includes('repo/archive/db/archive.info'), keys.join('\n'));
    assert.ok(keys.includes('repo/backup/db/backup.info'));
    assert.ok(
      keys.some((k) => /^repo\/archive\/db\/15-1\/[0-9A-F]{16}\/[0-9A-F]{24}-[0-9a-f]{40}/.test(k)),
      'WAL segments went through archive_command',
    );
    assert.ok(keys.some((k) => /^repo\/backup\/db\/\d{8}-\d{6}F\/backup\.manifest$/.test(k)));
    const bytes = objects.reduce((sum, o) => sum + o.size, 0);
    assert.ok(
      keys.some((k) => k.includes('/pg_data/')),
      'the data files are in the bucket',
    );
    t.diagnostic(`full backup in ${backupMs} ms; ${objects.length} objects, ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  });
});
