// Helpers shared by the benchmark drivers (bench-*.mjs) and the fault scripts: statistics (with
// the sign test for paired trials; pure, in bench-stats.mjs, re-exported here), number
// formatting, a seeded RNG, an undici request that rides out API-server overload, the environment every benchmark's JSON records, and the installers of
// contenders that are not npm packages (a Debian package, a Python virtual environment).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { cacheRoot } from '../packages/testenv/dist/src/index.js';
import { Backoff } from '../packages/timing/dist/src/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export { FAILED, median, pairedDifferences, ratio, round1, signTest } from './bench-stats.mjs';

/** mulberry32: small, seedable, good enough for reproducible fault plans and kill times. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export const mib = (bytes) => (bytes == null ? '-' : (bytes / 2 ** 20).toFixed(1));

/** An undici Agent (`connections` at most) with the kubeconfig's CA and client certificate, and the server URL. */
export function connect(kubeconfig, connections) {
  const decode = (b64) => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);
  const context = kubeconfig.contexts.find((c) => c.name === kubeconfig['current-context'])?.context;
  const cluster = kubeconfig.clusters.find((c) => c.name === context?.cluster)?.cluster;
  const user = kubeconfig.users.find((u) => u.name === context?.user)?.user;
  if (!cluster || !user) throw new Error('kubeconfig: the current context is incomplete');
  const dispatcher = new Agent({
    connections,
    connect: {
      ca: decode(cluster['certificate-authority-data']),
      cert: decode(user['client-certificate-data']),
      key: decode(user['client-key-data']),
    },
  });
  return { dispatcher, server: cluster.server };
}

/** The line of a failed child's stderr that says what went wrong (a Node crash ends with a stack and "Node.js vX"). */
export const failureReason = (stderr) =>
  stderr.split('\n').find((l) => /^\w*Error\b|^Error:/.test(l)) ??
  stderr
    .trim()
    .split('\n')
    .filter((l) => l && !/^Node\.js v\d/.test(l))
    .at(-1) ??
  '(no stderr)';

/** undici's `request` with retries for overload (429, 5xx) and dropped connections. */
export async function send(dispatcher, url, method, body, contentType = 'application/json') {
  const backoff = new Backoff({ initialMs: 100, maxMs: 500, jitter: 0 });
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await request(url, {
        method,
        dispatcher,
        headers: { accept: 'application/json', ...(body ? { 'content-type': contentType } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.body.text();
      if ((res.statusCode === 429 || res.statusCode >= 500) && attempt < 6) {
        await sleep(backoff.next());
        continue;
      }
      return { status: res.statusCode, text };
    } catch (error) {
      if (attempt >= 6) throw error;
      await sleep(backoff.next());
    }
  }
}

/**
 * On SIGINT or SIGTERM: `onStop()` (so loops stop starting work), then `cleanUp()` (every process
 * the script started, by PID), then exit 130 or 143 as a shell expects.
 */
export function exitOnSignals(log, cleanUp, onStop) {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      onStop();
      log(`${signal}: stopping`);
      cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
}

const loadAverage = () => loadavg().map((l) => Math.round(l * 100) / 100);
const quietly = (command, args, options = {}) => {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], ...options }).trim();
  } catch {
    return null;
  }
};

/**
 * Call when a benchmark starts; `finish()` gives what its JSON records about where it ran: the
 * commit at the start (and whether tracked files differed from it), Node, Go and Python versions, the cores and the
 * load averages at start and end. Other work on the machine skews every figure, so a figure
 * quoted without its load average cannot be judged.
 *
 * @example
 * const environment = benchEnvironment();
 * // … the benchmark …
 * console.log(JSON.stringify({ ...figures, environment: environment.finish({ python: venv.python }) }));
 */
export function benchEnvironment() {
  const loadAtStart = loadAverage();
  const startedAt = new Date().toISOString();
  // Read at the start: the code that runs is the code checked out when it started.
  const commit = quietly('git', ['rev-parse', 'HEAD'], { cwd: root });
  const status = quietly('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root });
  return {
    finish({ python = process.env.BENCH_PYTHON ?? 'python3' } = {}) {
      return {
        commit,
        workTreeChanged: status == null ? null : status.length > 0,
        node: process.version,
        go: quietly('go', ['env', 'GOVERSION']),
        python: quietly(python, ['-c', 'import sys; print(sys.version.split()[0])']),
        cpus: availableParallelism(),
        kernel: release(),
        startedAt,
        loadAverageAtStart: loadAtStart,
        loadAverageAtEnd: loadAverage(),
      };
    },
  };
}

/**
 * Makes sure `binary` exists, installing Debian package `pkg` with apt when it is missing and we
 * are root (as the bootstrap does for PostgreSQL); throws with the command to run otherwise.
 */
export function ensureAptPackage(binary, pkg, log) {
  if (existsSync(binary)) return;
  if (process.getuid?.() !== 0)
    throw new Error(`${binary} is missing: install Debian's ${pkg} package (apt-get install ${pkg})`);
  log(`installing Debian's ${pkg} package (apt-get install -y ${pkg})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env,
  });
  if (!existsSync(binary)) throw new Error(`apt-get installed ${pkg} but ${binary} is still missing`);
}

/**
 * A Python virtual environment in the Kanri cache (`~/.cache/kanri/bench-venv/<name>-<hash>`)
 * with the pinned packages of `requirements` (a path relative to the repository) installed by
 * pip; built once, and again whenever the file or the interpreter changes (both are in the hash).
 * It is built beside its final place and renamed into it, so a run killed half-way leaves no
 * half-built environment that a later run would trust. Returns the environment's interpreter.
 * `BENCH_PYTHON` (default `python3`) picks the interpreter it is made from.
 *
 * @example
 * const { python } = await ensureVenv('kopf', 'bench/converge/requirements.txt', { log });
 * spawn(python, ['-m', 'kopf', 'run', …]);
 */
export async function ensureVenv(
  name,
  requirements,
  { log = () => {}, python = process.env.BENCH_PYTHON ?? 'python3' } = {},
) {
  // The interpreter's real path, so that the environment does not depend on a pyenv shim.
  const base = quietly(python, ['-c', 'import sys; print(sys.executable); print(sys.version.split()[0])']);
  if (!base) throw new Error(`${python} does not run: set BENCH_PYTHON to a Python 3 interpreter`);
  const [executable, version] = base.split('\n');
  const pins = readFileSync(join(root, requirements), 'utf8');
  const hash = createHash('sha256').update(`${executable}\n${version}\n${pins}`).digest('hex').slice(0, 12);
  const dir = join(cacheRoot(), 'bench-venv', `${name}-${hash}`);
  const venvPython = join(dir, 'bin', 'python');
  if (existsSync(join(dir, '.complete'))) return { python: venvPython, dir, pythonVersion: version };

  const building = `${dir}.building-${process.pid}`;
  await mkdir(dirname(dir), { recursive: true });
  await rm(building, { recursive: true, force: true });
  log(`creating a Python ${version} virtual environment for ${name} in ${dir} (pip install -r ${requirements})`);
  try {
    const run = (command, args) =>
      execFileSync(command, args, {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, PIP_NO_INPUT: '1' },
      });
    run(executable, ['-m', 'venv', building]);
    run(join(building, 'bin', 'python'), [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '-r',
      join(root, requirements),
    ]);
    await writeFile(join(building, '.complete'), `${new Date().toISOString()}\n`);
    // A directory without the marker is what a run killed before it left; one with it, another run's.
    if (!existsSync(join(dir, '.complete'))) await rm(dir, { recursive: true, force: true });
    await rename(building, dir);
  } catch (error) {
    await rm(building, { recursive: true, force: true });
    if (existsSync(join(dir, '.complete'))) return { python: venvPython, dir, pythonVersion: version }; // another run won
    throw new Error(`installing ${requirements} into a virtual environment failed: ${error.message}`);
  }
  return { python: venvPython, dir, pythonVersion: version };
}
