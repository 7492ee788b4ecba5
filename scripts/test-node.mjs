#!/usr/bin/env node
// Runs the test suite under another Node.js major: `npm run test:node -- 22 [--smoke] [filter...]`
// (`--smoke`: the unit tests and the short integration files only; see scripts/run-tests.mjs).
// Node's official binaries are published on the npm registry as `node-<platform>-<arch>`
// packages, so this needs no download site: the newest release of the major is packed with npm
// and unpacked once into the Kanri cache (`~/.cache/kanri/node-v<version>`). The build stays
// the one `tsc -b` made; the tests, and every process they start with `process.execPath` (the
// agents on process nodes, the operator), then run on that Node. Exit status is the suite's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from '../packages/testenv/dist/src/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [major, ...filters] = process.argv.slice(2);
if (!/^\d+$/.test(major ?? '')) {
  console.error('usage: node scripts/test-node.mjs <major, e.g. 22> [--smoke] [test path filter...]');
  process.exit(2);
}

const run = (cmd, args, options = {}) => {
  const result = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${result.status}): ${result.stderr || result.error?.message}`);
  }
  return result.stdout;
};

const pkg = `node-${process.platform}-${process.arch}`;
const versions = [JSON.parse(run('npm', ['view', `${pkg}@${major}`, 'version', '--json']))].flat();
const version = versions.at(-1);
if (!version) throw new Error(`${pkg} has no release ${major}.x on the registry`);
const dir = join(cacheRoot(), `node-v${version}`);
const bin = join(dir, 'bin');
if (!existsSync(join(bin, 'node'))) {
  console.error(`[test:node] fetching ${pkg}@${version} from the npm registry`);
  const work = mkdtempSync(join(tmpdir(), 'kanri-node-'));
  try {
    const tarball = run('npm', ['pack', `${pkg}@${version}`, '--pack-destination', work, '--silent']).trim();
    run('tar', ['-xzf', join(work, tarball.split('\n').at(-1)), '-C', work]);
    mkdirSync(dirname(dir), { recursive: true });
    // Renamed into place whole, so an interrupted fetch never leaves a half-unpacked Node behind.
    renameSync(join(work, 'package'), dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
const node = join(bin, 'node');
console.error(`[test:node] ${run(node, ['--version']).trim()} (${node})`);
const result = spawnSync(node, [join(root, 'scripts', 'run-tests.mjs'), ...filters], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    // npm start (the README's commands) on process nodes: they run its agents on the Node under
    // test, where real nodes would run the image's Node 20 whatever Node this is.
    KANRI_DEMO_NODES: process.env.KANRI_DEMO_NODES ?? 'process',
  },
});
process.exit(result.status ?? 1);
