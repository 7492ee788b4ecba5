#!/usr/bin/env node
// Makes a fresh clone runnable before `npm test` / `npm start` (their pre-scripts): installs the
// npm dependencies if missing or stale, compiles the TypeScript, and builds the control-plane
// binaries from pinned Go modules unless already cached. Uses only Node built-ins, since it
// runs before node_modules exists.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`kanri needs Node.js 20.19 or newer; this is ${process.version}.`);
  process.exit(1);
}

function run(command, args, what) {
  const started = Date.now();
  console.error(`bootstrap: ${what}…`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(
      `bootstrap: ${what} failed (${command} ${args.join(' ')} exited with ${result.status ?? result.signal}).`,
    );
    process.exit(result.status ?? 1);
  }
  console.error(`bootstrap: ${what} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

const lock = join(root, 'package-lock.json');
const installed = join(root, 'node_modules', '.package-lock.json');
if (!existsSync(installed) || statSync(lock).mtimeMs > statSync(installed).mtimeMs) {
  run('npm', ['ci', '--no-audit', '--no-fund'], 'installing npm dependencies (npm ci)');
}
run(join(root, 'node_modules', '.bin', 'tsc'), ['-b'], 'compiling TypeScript (tsc -b)');
run(process.execPath, [join(root, 'packages/cli/dist/src/main.js'), 'testenv', 'install'], 'control-plane binaries');

// The PostgreSQL operator's tests and demo run real PostgreSQL through process nodes, as the
// `postgres` user (postgres refuses to run as root). Debian's postgresql-15 provides both.
const pgBin = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const hasPostgresUser = spawnSync('getent', ['passwd', 'postgres']).status === 0;
if (!existsSync(join(pgBin, 'postgres')) || !hasPostgresUser) {
  if (process.getuid?.() === 0 && spawnSync('which', ['apt-get']).status === 0) {
    run('apt-get', ['update'], 'refreshing apt package lists');
    run('apt-get', ['install', '-y', '--no-install-recommends', 'postgresql-15'], 'installing PostgreSQL 15 (apt)');
  } else {
    console.error(
      `bootstrap: PostgreSQL 15 server binaries (${pgBin}/postgres) and a "postgres" OS user are needed; ` +
        'install Debian/Ubuntu package postgresql-15 (or set PG_BIN to a PostgreSQL bin directory).',
    );
    process.exit(1);
  }
}
