/**
 * Issue 16, finding 4: a user's `statement_timeout` (and `lock_timeout`) in
 * `spec.config.parameters` must not hit the agent's own sessions or the tools it runs (a
 * pg_rewind, a base backup waiting for the archive). Against a real postgres whose server-wide
 * statement_timeout is 1 ms: a plain session is cut off, the agent's pool and a tool with the
 * agent's environment are not.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import pg from 'pg';
import { pino } from 'pino';
import { LocalDb } from '../src/agent/postgres/local-db.js';
import { applySessionOptionsToTools } from '../src/agent/postgres/session-options.js';
import { PORT, SUPERUSER } from '../src/contract/index.js';
import { chownToPostgres } from './fixtures/agent-cluster.js';
import { TEST_PG_BIN } from './support/pg-bin.js';

const asPostgres = (program: string, args: string[]) =>
  [
    '/usr/bin/setpriv',
    ['--reuid=postgres', '--regid=postgres', '--init-groups', '--pdeathsig', 'KILL', '--', program, ...args],
  ] as const;

describe('the agent’s sessions under a server-wide statement_timeout', () => {
  const bin = TEST_PG_BIN;
  const dir = mkdtempSync(join(tmpdir(), 'kanri-session-'));
  const pgdata = join(dir, 'data');
  let postgres: ChildProcess | undefined;
  let db: LocalDb | undefined;

  before(async () => {
    chownToPostgres(dir);
    execFileSync(...asPostgres(join(bin, 'initdb'), ['-D', pgdata, '-A', 'trust', '-U', SUPERUSER, '--no-sync']), {
      stdio: 'ignore',
    });
    const [command, args] = asPostgres(join(bin, 'postgres'), [
      '-D',
      pgdata,
      '-k',
      dir,
      '-c',
      'listen_addresses=',
      '-c',
      'statement_timeout=1',
      '-c',
      'lock_timeout=1',
    ]);
    postgres = spawn(command, args, { stdio: 'ignore' });
    await waitFor('postgres to listen', () => existsSync(join(dir, `.s.PGSQL.${PORT.postgres}`)), 30_000);
    db = new LocalDb(dir, pino({ level: 'silent' }));
    await waitFor('postgres to accept connections', () => db?.ping(), 30_000);
  });
  after(async () => {
    await db?.close();
    if (postgres?.pid !== undefined && postgres.exitCode === null) {
      const exited = new Promise((resolve) => postgres?.once('exit', resolve));
      process.kill(postgres.pid, 'SIGINT');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('cuts off a plain session after 1 ms: the setting is in force', async () => {
    const plain = new pg.Client({ host: dir, port: PORT.postgres, user: SUPERUSER, database: 'postgres' });
    await plain.connect();
    try {
      await assert.rejects(plain.query('SELECT pg_sleep(0.05)'), /statement timeout/);
    } finally {
      await plain.end();
    }
  });

  it('leaves the agent’s pool without a timeout', async () => {
    assert.deepEqual(await db?.query('SELECT pg_sleep(0.05)::text AS slept'), [{ slept: '' }]);
    const [row] = (await db?.query<{ s: string; l: string }>(
      "SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l",
    )) ?? [{}];
    assert.deepEqual(row, { s: '0', l: '0' });
  });

  it('gives the tools it runs the same settings through PGOPTIONS', () => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    applySessionOptionsToTools(env);
    const out = execFileSync(
      join(bin, 'psql'),
      ['-h', dir, '-U', SUPERUSER, '-d', 'postgres', '-Atc', 'SELECT pg_sleep(0.05); SHOW statement_timeout'],
      { env, encoding: 'utf8' },
    );
    assert.equal(out.trim().split('\n').pop(), '0');
  });
});
