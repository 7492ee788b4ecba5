#!/usr/bin/env node
// Runs every compiled test file with Node's own test runner. Node 20 does not expand globs in
// `node --test`, so the files are listed here. Arguments filter by substring of the path:
// `npm test -- control-plane` runs only files whose path contains "control-plane".
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const filters = process.argv.slice(2);

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path);
    else if (entry.name.endsWith('.test.js')) yield path;
  }
}

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
  .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
  .sort();

if (files.length === 0) {
  console.error(`No test files matched ${filters.join(' ') || '(all)'}; did the build run?`);
  process.exit(1);
}

// Each integration file starts its own control plane; two at a time fits a 2-core machine.
const concurrency = Math.max(1, Math.min(2, availableParallelism()));
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
