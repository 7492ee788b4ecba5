/** The README's main command: `npm start` brings up a Ready 3-instance cluster; `npm stop` removes it all. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { isProcessAlive } from '@kanri/testenv';
import pg from 'pg';

const run = promisify(execFile);
const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
let stateDir: string | undefined;

after(async () => {
  if (stateDir) {
    await run(process.execPath, [main, 'down'], { env: { ...process.env, KANRI_STATE_DIR: stateDir } }).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  }
});

it('up prints kubectl get pgc and a psql line that connects; down stops every process and removes its files', {
  timeout: 300_000,
}, async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'kanri-demo-test-'));
  const env = { ...process.env, KANRI_STATE_DIR: stateDir };
  const { stdout } = await run(process.execPath, [main, 'up'], { env, timeout: 240_000 });
  assert.match(stdout, /hippo\s+True\s+3\s+3\s+hippo-instance1-\d/);
  const psql = /PGPASSFILE=(\S+) psql -h (\S+) -p (\d+) -U app app/.exec(stdout);
  assert.ok(psql, `a psql line in:\n${stdout}`);
  const [, pgpass, host, port] = psql as unknown as [string, string, string, string];
  const password = (await readFile(pgpass, 'utf8')).trim().split(':').slice(4).join(':');
  assert.equal(stdout.includes(password), false, 'the password is not printed');
  const db = new pg.Client({
    host,
    port: Number(port),
    user: 'app',
    password,
    database: 'app',
    connectionTimeoutMillis: 5000,
  });
  await db.connect();
  try {
    assert.deepEqual((await db.query('select current_user as u, pg_is_in_recovery() as r')).rows, [
      { u: 'app', r: false },
    ]);
  } finally {
    await db.end();
  }
  const state = JSON.parse(await readFile(join(stateDir, 'postgres-demo', 'state.json'), 'utf8')) as { pid: number };
  // Running `up` again reports the running demo instead of starting another.
  const again = await run(process.execPath, [main, 'up'], { env, timeout: 60_000 });
  assert.match(again.stdout, /hippo\s+True/);
  await run(process.execPath, [main, 'down'], { env, timeout: 120_000 });
  assert.equal(isProcessAlive(state.pid), false);
  assert.equal(existsSync(join(stateDir, 'postgres-demo')), false);
});
