#!/usr/bin/env node
// Runs every compiled test file with Node's own test runner. Node 20 does not expand globs in
// `node --test`, so the files are listed here. Arguments filter by substring of the path:
// `npm test -- control-plane` runs only files whose path contains "control-plane".
// `--smoke` selects the unit tests (beside the code, under dist/src/, none needs a control plane;
// and the benchmarks' pure summaries, `bench/**/*.test.mjs` and `scripts/*.test.mjs`, plain
// JavaScript like the benchmarks they check, so nothing compiles them) plus the short integration
// files: the examples (a real control plane each: testenv, client, cache, runtime and api end to
// end), the README's commands (the `kanri` CLI through npx) and its benchmark citations, and the
// PostgreSQL operator's end-to-end suite (operator and agents on process nodes, ~1 min). CI runs
// that on the Node majors other than the oldest, which runs everything.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { judgeSkips } from './test-skips.mjs';

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

function* testFiles(dir, suffix = '.test.js') {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path, suffix);
    else if (entry.name.endsWith(suffix)) yield path;
  }
}

const isScriptTest = (file) => file.endsWith('.test.mjs');
const inSmoke = (file) =>
  file.includes(`${sep}dist${sep}src${sep}`) ||
  isScriptTest(file) ||
  file.startsWith(join(root, 'examples', 'dist') + sep) ||
  file === join(root, 'packages', 'cli', 'dist', 'test', 'readme.test.js') ||
  file === join(root, 'packages', 'cli', 'dist', 'test', 'readme-figures.test.js') ||
  file === join(root, 'packages', 'postgres', 'dist', 'test', 'cluster.test.js');
const distDirs = [
  ...readdirSync(join(root, 'packages')).map((pkg) => join(root, 'packages', pkg, 'dist')),
  join(root, 'examples', 'dist'),
];
const files = [
  ...distDirs.flatMap((dir) => {
    try {
      return [...testFiles(dir)];
    } catch {
      return [];
    }
  }),
  ...testFiles(join(root, 'bench'), '.test.mjs'),
  ...testFiles(join(root, 'scripts'), '.test.mjs'),
]
  .filter((file) => !smoke || inSmoke(file))
  .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
  .sort();

if (files.length === 0) {
  console.error(`No test files matched ${args.join(' ') || '(all)'}; did the build run?`);
  process.exit(1);
}

// Files that bound failover timing on a lease clock (RTO within lease + 2 s, a primary that renews
// or fences within its renew deadline): they hold with one other file beside them on 2 cores and
// missed at 4 files at a time (README, Measured). They run first, two at a time, before the rest:
// much of their time is waiting on a Lease or an outage, which leaves the 2 cores about a quarter
// idle: .ci/run fills that with its smoke sets, one of them at a low CPU weight (see
// KANRI_TIMED_DONE_FILE below).
const TIMED = [
  'agent-fencing',
  'agent-watchdog',
  'failover-failsafe',
  'failover-failsafe-members',
  'failover-fencing',
  'failover-rto',
  'failover-sync',
  'real-nodes',
  // failover-reclone on real nodes where they can run (skipped with the reason elsewhere): the one
  // failover file CI runs on real nodes, a 6 s lease, so timed like the others.
  'failover-reclone-real',
].map((name) => join(root, 'packages', 'postgres', 'dist', 'test', `${name}.test.js`));

// The rest run three times the cores at a time (6 on 2 cores): their bounds are minutes, and much
// of their time is waiting (for a Lease, an outage, a backup). Measured on 2 cores in CI
// (2026-12-04): at 3 the cores were 20–50% idle for the round's last 8 minutes; at 4 the round
// took 940 s, 84% busy; at 6, 861–880 s in four runs, the cores saturated for the first 12
// minutes and the short files up to 3× as long as at 4 (one run failed a test that counted queries
// in a fixed time, since fixed). KANRI_TEST_CONCURRENCY overrides it; the timed files never run
// more than two at a time.
const concurrency = Number(process.env.KANRI_TEST_CONCURRENCY) || Math.min(6, availableParallelism() * 3);

// Longest first, by each file's time in earlier runs on this machine (scripts/test-run-reporter.mjs):
// a long file started last would run alone at the end. Unknown files count as long, then by name.
// One file per Node major: CI's smoke sets run the same files on 22 and 24, one at a time beside
// the suite, and their times would otherwise replace the suite's own.
const durationsFile = join(
  process.env.KANRI_CACHE_DIR || join(homedir(), '.cache', 'kanri'),
  `test-durations-node${process.versions.node.split('.')[0]}.json`,
);
let known = {};
try {
  known = JSON.parse(readFileSync(durationsFile, 'utf8'));
} catch {
  // No earlier run here: alphabetical order.
}
// Node reports a file by its source (.ts) when source maps are on, by the compiled file otherwise.
const sourceOf = (file) => relative(root, file).replace(`${sep}dist${sep}`, sep).replace(/\.js$/, '.ts');
const expected = (file) => known[sourceOf(file)] ?? known[relative(root, file)] ?? Number.POSITIVE_INFINITY;
const longestFirst = (list) => [...list].sort((a, b) => expected(b) - expected(a) || a.localeCompare(b));
mkdirSync(dirname(durationsFile), { recursive: true });

const runs = [
  {
    label: 'the timed failover files',
    files: files.filter((f) => TIMED.includes(f)),
    concurrency: Math.min(2, concurrency),
  },
  { label: 'the rest', files: files.filter((f) => !TIMED.includes(f)), concurrency },
].filter((run) => run.files.length > 0);

// The real-node images are built before the timed files rather than by real-nodes.test.js beside
// failover-rto (see packages/postgres/test/support/build-real-node-images.ts). Real nodes need root.
// Bounded: a build that hangs (a registry, a lock) must not hold the run until CI's own limit. Warm,
// the build takes seconds; cold on 2 cores, 202 s with the node tools (README, "Figures").
const IMAGE_BUILD_TIMEOUT_MS = 15 * 60_000;
const realNodeFiles = ['real-nodes', 'failover-reclone-real'].map((name) =>
  join(root, 'packages', 'postgres', 'dist', 'test', `${name}.test.js`),
);
if (files.some((f) => realNodeFiles.includes(f)) && process.getuid?.() === 0) {
  const started = Date.now();
  const build = spawn(
    process.execPath,
    [join(root, 'packages', 'postgres', 'dist', 'test', 'support', 'build-real-node-images.js')],
    // Its own process group, so that a timeout ends the builders it started too.
    { cwd: root, stdio: 'inherit', detached: true },
  );
  const stopBuild = () => {
    try {
      process.kill(-build.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    console.log(
      `# run-tests: the real-node image build ran out of ${IMAGE_BUILD_TIMEOUT_MS / 60_000} minutes; stopped`,
    );
    stopBuild();
  }, IMAGE_BUILD_TIMEOUT_MS);
  // Outside our process group, Ctrl-C and CI's stop do not reach it by themselves.
  const interrupted = (signal) => {
    stopBuild();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  const code = await new Promise((resolve) => build.once('exit', (c, signal) => resolve(c ?? signal)));
  clearTimeout(timer);
  process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
  console.log(
    `# run-tests: real-node image build exited ${code} after ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
}

// Every skipped test, with its reason: the run's reporter (test-run-reporter.mjs) writes them here, and the end of the run
// prints and counts them (scripts/test-skips.mjs).
const skipsDir = mkdtempSync(join(tmpdir(), 'kanri-test-skips-'));
const skipsFile = join(skipsDir, 'skips.jsonl');
// A root machine with the real nodes' tools installed runs real nodes: a real-node test skipped
// there fails the run.
const realNodesExpected = await (async () => {
  if (process.getuid?.() !== 0) return false;
  try {
    const { cacheRoot, nodeToolsPackages, nodeToolsVersion } = await import('../packages/testenv/dist/src/index.js');
    return existsSync(join(cacheRoot(), `node-tools-${nodeToolsVersion(nodeToolsPackages)}`, 'bin', '.complete'));
  } catch {
    return false;
  }
})();

// CI (.ci/run) runs a smoke set at a low CPU weight beside the timed files and raises it when they
// are done: this file, created once they are (or once nothing of them is left to run), says when.
const timedDone = () => {
  if (process.env.KANRI_TIMED_DONE_FILE)
    writeFileSync(process.env.KANRI_TIMED_DONE_FILE, `${new Date().toISOString()}\n`);
};

const failed = [];
for (const run of runs) {
  if (!run.files.some((f) => TIMED.includes(f))) timedDone();
  if (runs.length > 1)
    console.log(`# run-tests: ${run.label}, ${run.files.length} files, ${run.concurrency} at a time`);
  const result = spawnSync(
    process.execPath,
    [
      '--enable-source-maps',
      '--test',
      `--test-concurrency=${run.concurrency}`,
      `--test-timeout=${FILE_TIMEOUT_MS}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${join(root, 'scripts', 'test-run-reporter.mjs')}`,
      '--test-reporter-destination=stderr',
      ...longestFirst(run.files),
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, KANRI_TEST_DURATIONS: durationsFile, KANRI_TEST_SKIPS: skipsFile },
    },
  );
  if (result.status !== 0) failed.push(`${run.label} (exit ${result.status ?? result.signal})`);
  // Interrupted (Ctrl-C reaches the runner too): stop here rather than start the next run.
  if (result.signal) break;
}
timedDone();
const skipped = existsSync(skipsFile)
  ? readFileSync(skipsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
  : [];
rmSync(skipsDir, { recursive: true, force: true });
const skips = judgeSkips(skipped, { root, realNodesExpected });
console.log(`# run-tests: ${skips.count} skipped${skips.count ? ':' : ''}`);
for (const line of skips.lines) console.log(`#   ${line}`);
if (skips.failures.length > 0) {
  console.log('# run-tests: this machine runs real nodes (root, the node tools installed), yet these were skipped:');
  for (const line of skips.failures) console.log(`#   ${line}`);
  failed.push(`${skips.failures.length} real-node tests skipped`);
}
// Each run ends with its own summary; a failure in an earlier one must not hide behind a later "fail 0".
if (failed.length > 0) console.log(`# run-tests: FAILED: ${failed.join(', ')}; see above`);
process.exit(failed.length > 0 ? 1 : 0);
