#!/usr/bin/env node
// Runs every compiled test file with Node's own test runner. Node 20 does not expand globs in
// `node --test`, so the files are listed here. Arguments filter by substring of the path:
// `npm test -- control-plane` runs only files whose path contains "control-plane".
// `--smoke` selects the unit tests (beside the code, under dist/src/, none needs a control plane)
// plus the short integration files: the examples (a real control plane each: testenv, client,
// cache, runtime and api end to end), the README's commands (the `kanri` CLI through npx) and the
// PostgreSQL operator's end-to-end suite (operator and agents on process nodes, ~1 min). CI runs
// that on the Node majors other than the oldest, which runs everything.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const filters = args.filter((a) => a !== '--smoke');

// A hang fails the file instead of hanging CI. Under `node --test`, Node (20 to 24) applies
// --test-timeout to each test file as a whole and kills the file's process when it expires (run
// directly, Node 20 and 22 ignore the flag), so this bounds files, not single tests. It equals
// the longest timeout a suite declares for itself (30 min, the failover suites, which allow for a
// loaded machine), so it cuts no suite short. Awaits that could hang carry their own, much
// shorter bounds in the tests (`within`, `waitFor`, an AbortSignal) and fail fast with a message.
const FILE_TIMEOUT_MS = 30 * 60_000;

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path);
    else if (entry.name.endsWith('.test.js')) yield path;
  }
}

const inSmoke = (file) =>
  file.includes(`${sep}dist${sep}src${sep}`) ||
  file.startsWith(join(root, 'examples', 'dist') + sep) ||
  file === join(root, 'packages', 'cli', 'dist', 'test', 'readme.test.js') ||
  file === join(root, 'packages', 'postgres', 'dist', 'test', 'cluster.test.js');
const distDirs = [
  ...readdirSync(join(root, 'packages')).map((pkg) => join(root, 'packages', pkg, 'dist')),
  join(root, 'examples', 'dist'),
];
const files = distDirs
  .flatMap((dir) => {
    try {
      return [...testFiles(dir)];
    } catch {
      return [];
    }
  })
  .filter((file) => !smoke || inSmoke(file))
  .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
  .sort();

if (files.length === 0) {
  console.error(`No test files matched ${args.join(' ') || '(all)'}; did the build run?`);
  process.exit(1);
}

// Each integration file starts its own control plane; two at a time fits a 2-core machine.
// KANRI_TEST_CONCURRENCY overrides it: at 4 on 2 cores the suite ran 25% faster with both cores
// 95% busy, and failover bounds that hold at 2 failed (README, Measured).
const concurrency = Number(process.env.KANRI_TEST_CONCURRENCY) || Math.max(1, Math.min(2, availableParallelism()));
const result = spawnSync(
  process.execPath,
  [
    '--enable-source-maps',
    '--test',
    `--test-concurrency=${concurrency}`,
    `--test-timeout=${FILE_TIMEOUT_MS}`,
    '--test-reporter=spec',
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
