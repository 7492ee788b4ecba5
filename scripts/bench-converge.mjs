#!/usr/bin/env node
// Operator convergence benchmark, side by side: controller-runtime (Go), kopf (Python), a raw
// client with no controller (the lower bound) and Kanri each reconcile N Items (a CRD,
// bench/converge/crd.yaml; default 5,000) to one owned ConfigMap and a status, against one local
// control plane. Each contender is its own child process in its own fresh namespace, whose Items
// exist before it starts; the driver measures the wall time from spawn until it sees every Item
// converged (through a watch, confirmed by a list; or by listing every 250 ms with
// BENCH_OBSERVE=poll), and the child's CPU seconds and peak RSS from /proc. ROUNDS runs
// (default 1) in rotating order give medians. The last line of stdout is one JSON object with
// every figure. Run with `npm run bench:converge` or `node scripts/bench-converge.mjs [items]`;
// see bench/README.md.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { startControlPlane } from '../packages/testenv/dist/src/index.js';
import { exitOnSignals, median, mib, ratio, round1, send } from './bench-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const items = Number(process.argv[2] ?? 5_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const workers = Number(process.env.BENCH_WORKERS ?? 4);
const runTimeoutMs = Number(process.env.BENCH_TIMEOUT_S ?? 600) * 1000;
const python = process.env.BENCH_PYTHON ?? 'python3';
const inFlight = 32;
const pollEveryMs = 250;
const observe = process.env.BENCH_OBSERVE ?? 'watch';
/** How long a contender that exited 0 by itself (raw) gets for the driver to see its writes. */
const exitGraceMs = 10_000;
/** How long a contender gets to exit after SIGTERM before SIGKILL. */
const stopTimeoutMs = 15_000;
const fieldManager = 'bench-converge-driver';
if (
  !Number.isInteger(items) ||
  items < 1 ||
  !Number.isInteger(rounds) ||
  rounds < 1 ||
  !Number.isInteger(workers) ||
  workers < 1 ||
  !(runTimeoutMs > 0) ||
  !['watch', 'poll'].includes(observe)
) {
  console.error(
    'usage: node scripts/bench-converge.mjs [items, default 5000]   ' +
      '(env BENCH_ROUNDS default 1, BENCH_WORKERS default 4, BENCH_TIMEOUT_S default 600, ' +
      'BENCH_PYTHON default python3, BENCH_OBSERVE watch (default) or poll, ' +
      'BENCH_CONTENDERS a comma-separated subset)',
  );
  process.exit(2);
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const live = new Set();
/** Set by SIGINT/SIGTERM: nothing new starts, and the main flow returns quietly while the handler cleans up. */
let stopping = false;
class Stopping extends Error {}
/** The API server has not answered for `apiGoneMs`: no later run could succeed, so the benchmark ends. */
class ControlPlaneGone extends Error {}
const apiGoneMs = 30_000;
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const log = (line) => console.error(`[bench:converge] ${line}`);
const round3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));

/**
 * Spawns a child that dies with us (parent-death signal; setpriv execs, so the PID is the
 * command's own), collecting its output. `exited` resolves when it has exited.
 */
function start(command, args, { cwd = root, env = process.env, echoStderr = false } = {}) {
  const [cmd, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
  if (stopping) throw new Stopping();
  const started = performance.now();
  const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const proc = { child, pid: child.pid, started, stdout: '', stderr: '', exit: null };
  child.stdout.setEncoding('utf8').on('data', (d) => {
    proc.stdout = (proc.stdout + d).slice(-65536);
  });
  child.stderr.setEncoding('utf8').on('data', (d) => {
    proc.stderr = (proc.stderr + d).slice(-8192);
    if (echoStderr) process.stderr.write(d);
  });
  proc.exited = new Promise((resolve) => {
    const finish = (code, signal, spawnError) => {
      live.delete(child);
      proc.exit ??= { code, signal, spawnError, wallMs: performance.now() - started };
      resolve(proc.exit);
    };
    child.on('error', (error) => finish(null, null, error));
    child.on('close', (code, signal) => finish(code, signal));
  });
  return proc;
}

/** Runs a command to its end (killed after `timeoutMs`). */
async function run(command, args, { timeoutMs = 10 * 60_000, ...options } = {}) {
  const proc = start(command, args, options);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), timeoutMs);
  const exit = await proc.exited;
  clearTimeout(timer);
  return { ...exit, stdout: proc.stdout, stderr: proc.stderr };
}

/** The last line of a child's stderr that says what went wrong. */
const reason = (stderr) =>
  stderr.split('\n').find((l) => /^\w*Error\b|^Error:/.test(l)) ??
  stderr
    .trim()
    .split('\n')
    .filter((l) => l && !/^Node\.js v\d/.test(l))
    .at(-1) ??
  '(no stderr)';

const clockTicks = Number((await run('getconf', ['CLK_TCK'], { timeoutMs: 10_000 })).stdout.trim()) || 100;

/** CPU seconds (utime + stime, all threads) and peak RSS (VmHWM) of a live process, or null. */
function sampleProcess(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, state
    const kb = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
    if (fields[0] === 'Z' || kb == null) return null; // a zombie has no memory left to read
    return { cpuSeconds: (Number(fields[11]) + Number(fields[12])) / clockTicks, maxRssBytes: Number(kb) * 1024 };
  } catch {
    return null;
  }
}

/** An undici Agent with the kubeconfig's CA and client certificate, and the server URL. */
function connect(kubeconfig) {
  const decode = (b64) => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);
  const context = kubeconfig.contexts.find((c) => c.name === kubeconfig['current-context'])?.context;
  const cluster = kubeconfig.clusters.find((c) => c.name === context?.cluster)?.cluster;
  const user = kubeconfig.users.find((u) => u.name === context?.user)?.user;
  if (!cluster || !user) throw new Error('kubeconfig: the current context is incomplete');
  const dispatcher = new Agent({
    connections: inFlight,
    connect: {
      ca: decode(cluster['certificate-authority-data']),
      cert: decode(user['client-certificate-data']),
      key: decode(user['client-key-data']),
    },
  });
  return { dispatcher, server: cluster.server };
}

/** Installs the Item CRD (bench/converge/crd.json) and waits until it is established and served. */
async function installCrd({ dispatcher, server }) {
  const crd = JSON.parse(readFileSync(join(root, 'bench/converge/crd.json'), 'utf8'));
  const url = `${server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
  const res = await send(
    dispatcher,
    `${url}/${crd.metadata.name}?fieldManager=${fieldManager}`,
    'PATCH',
    crd,
    'application/apply-patch+yaml',
  );
  if (res.status !== 200 && res.status !== 201) throw new Error(`installing the CRD: HTTP ${res.status} ${res.text}`);
  const deadline = performance.now() + 60_000;
  for (;;) {
    const got = await send(dispatcher, `${url}/${crd.metadata.name}`, 'GET');
    const established = JSON.parse(got.text).status?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    );
    const served = established && (await send(dispatcher, `${server}/apis/bench.kanri.dev/v1`, 'GET')).status === 200;
    if (served) return;
    if (performance.now() > deadline) throw new Error('the CRD was not established within 60 s');
    await sleep(100);
  }
}

const itemsPath = (ns) => `/apis/bench.kanri.dev/v1/namespaces/${ns}/items`;

/** Creates namespace `ns` and `count` Items in it with `inFlight` requests at a time. */
async function createItems({ dispatcher, server }, ns, count) {
  const res = await send(dispatcher, `${server}/api/v1/namespaces`, 'POST', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: ns },
  });
  if (res.status !== 201) throw new Error(`creating namespace ${ns}: HTTP ${res.status} ${res.text}`);
  const width = String(count - 1).length;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      if (stopping) throw new Stopping();
      const i = next++;
      const created = await send(dispatcher, `${server}${itemsPath(ns)}`, 'POST', {
        apiVersion: 'bench.kanri.dev/v1',
        kind: 'Item',
        metadata: { name: `item-${String(i).padStart(width, '0')}` },
        spec: { value: `v${i}-${randomBytes(6).toString('hex')}` },
      });
      if (created.status !== 201)
        throw new Error(`creating Item ${i}: HTTP ${created.status} ${created.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}

/**
 * One look at namespace `ns`: how many Items have status.observedValue == spec.value, and, once
 * all of them do, whether every Item's ConfigMap exists with data.value == spec.value and a
 * controller ownerReference to the Item.
 */
async function inspect({ dispatcher, server }, ns) {
  const res = await send(dispatcher, `${server}${itemsPath(ns)}`, 'GET');
  if (res.status !== 200) throw new Error(`listing Items: HTTP ${res.status}`);
  const list = JSON.parse(res.text).items;
  const statusDone = list.filter((i) => i.spec?.value != null && i.status?.observedValue === i.spec.value).length;
  const look = { total: list.length, statusDone, configMapsDone: null, converged: false, problem: null };
  if (statusDone !== list.length) return look;
  const cms = await send(dispatcher, `${server}/api/v1/namespaces/${ns}/configmaps`, 'GET');
  if (cms.status !== 200) throw new Error(`listing ConfigMaps: HTTP ${cms.status}`);
  const byName = new Map(JSON.parse(cms.text).items.map((cm) => [cm.metadata.name, cm]));
  look.configMapsDone = 0;
  for (const item of list) {
    const cm = byName.get(item.metadata.name);
    const owned = cm?.metadata.ownerReferences?.some(
      (o) => o.controller === true && o.uid === item.metadata.uid && o.kind === 'Item',
    );
    if (cm?.data?.value === item.spec.value && owned) look.configMapsDone++;
    else
      look.problem ??= `ConfigMap ${item.metadata.name}: ${cm ? (owned ? 'wrong value' : 'no controller reference to its Item') : 'missing'}`;
  }
  look.converged = look.configMapsDone === list.length;
  return look;
}

/**
 * Follows the Items of namespace `ns` with one watch (from a list taken before the contender
 * starts) and counts those whose status.observedValue == spec.value; `allAt` is when the count
 * last reached the total. Much cheaper for the API server than listing all Items every 250 ms,
 * which at 5,000 Items keeps it busy serializing ~5 MB lists back to back on a 2-core machine.
 * `broken` is set if the stream fails; the caller then falls back to polling.
 */
async function watchItems({ dispatcher, server }, ns) {
  const res = await send(dispatcher, `${server}${itemsPath(ns)}`, 'GET');
  if (res.status !== 200) throw new Error(`listing Items: HTTP ${res.status}`);
  const list = JSON.parse(res.text);
  const done = new Map(list.items.map((i) => [i.metadata.name, i.status?.observedValue === i.spec?.value]));
  const state = { total: done.size, statusDone: 0, allAt: null, events: 0, broken: null, close: () => {} };
  const count = () => {
    state.statusDone = 0;
    for (const d of done.values()) if (d) state.statusDone++;
  };
  count();
  const abort = new AbortController();
  state.close = () => abort.abort();
  const query = `watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`;
  (async () => {
    const stream = await request(`${server}${itemsPath(ns)}?${query}`, {
      dispatcher,
      signal: abort.signal,
      headers: { accept: 'application/json' },
      bodyTimeout: 0,
    });
    if (stream.statusCode !== 200) throw new Error(`watch: HTTP ${stream.statusCode}`);
    let buffered = '';
    for await (const chunk of stream.body) {
      buffered += chunk.toString('utf8');
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const event = JSON.parse(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (event.type === 'ERROR') throw new Error(`watch: ${event.object?.message ?? 'error event'}`);
        if (event.type === 'BOOKMARK') continue;
        const item = event.object;
        const wasDone = done.get(item.metadata.name);
        if (event.type === 'DELETED') done.delete(item.metadata.name);
        else done.set(item.metadata.name, item.status?.observedValue === item.spec?.value);
        if (done.get(item.metadata.name) !== wasDone || event.type !== 'MODIFIED') count();
        state.total = done.size;
        state.events++;
        if (state.statusDone === state.total) state.allAt ??= performance.now();
        else state.allAt = null;
      }
    }
    throw new Error('watch: the stream ended');
  })().catch((error) => {
    if (!abort.signal.aborted) state.broken = error.message;
  });
  return state;
}

/** Mutating (and GET) requests the API server counted on Items and ConfigMaps, by "resource[/sub] VERB". */
async function requestCounts({ dispatcher, server }) {
  const res = await send(dispatcher, `${server}/metrics`, 'GET');
  if (res.status !== 200) return null;
  const counts = {};
  for (const line of res.text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!['items', 'configmaps'].includes(labels.resource)) continue;
    if (!['GET', 'POST', 'PUT', 'PATCH', 'APPLY', 'DELETE'].includes(labels.verb)) continue;
    const key = `${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''} ${labels.verb}`;
    counts[key] = (counts[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return counts;
}

/** The requests made between two `requestCounts`. */
function requestDelta(before, after) {
  if (!before || !after) return null;
  const delta = {};
  for (const [key, n] of Object.entries(after)) if (n - (before[key] ?? 0) > 0) delta[key] = n - (before[key] ?? 0);
  return delta;
}

/** Sends SIGTERM to a contender by PID and waits for it to exit (SIGKILL after `stopTimeoutMs`). */
async function stop(proc) {
  if (proc.exit) return { stopMs: 0, ...proc.exit, killed: false };
  const t = performance.now();
  proc.child.kill('SIGTERM');
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    proc.child.kill('SIGKILL');
  }, stopTimeoutMs);
  const exit = await proc.exited;
  clearTimeout(timer);
  return { stopMs: round1(performance.now() - t), ...exit, killed };
}

/**
 * One contender run in namespace `ns`, whose Items already exist: spawn it, look every
 * `pollEveryMs` (at the watched state, or with a list when polling) until the namespace is
 * converged (or the contender fails or times out), read its CPU and peak RSS, stop it.
 */
async function runContender(api, contender, ns, expected) {
  const result = {
    ok: false,
    namespace: ns,
    convergeMs: null,
    cpuSeconds: null,
    maxRssBytes: null,
    measuredFrom: null,
    requests: null,
    writes: null,
    observedBy: observe,
    watchEvents: null,
    watchBroken: null,
    polls: 0,
    pollMsMedian: null,
    stop: null,
    error: null,
  };
  const before = await requestCounts(api);
  const env = {
    ...process.env,
    KUBECONFIG: api.kubeconfigPath,
    BENCH_NAMESPACE: ns,
    BENCH_WORKERS: `${workers}`,
  };
  let watcher = observe === 'watch' ? await watchItems(api, ns) : null;
  const proc = start(contender.command, contender.args, { env, cwd: contender.cwd ?? root });
  let sample = null;
  let look = null;
  let lastProgress = proc.started;
  let exitedAt = null;
  const pollMs = [];
  let apiOkAt = performance.now();
  let fatal = null;
  try {
    for (;;) {
      const tick = performance.now();
      if (stopping) throw new Stopping();
      if (proc.exit) {
        const { code, signal, spawnError } = proc.exit;
        if (spawnError) throw new Error(`could not start: ${spawnError.message}`);
        if (code !== 0) throw new Error(`exit ${code ?? signal}: ${reason(proc.stderr).trim().slice(0, 300)}`);
        exitedAt ??= tick;
        if (tick - exitedAt > exitGraceMs) {
          throw new Error(`exited 0 but the namespace did not converge (${describe(look)})`);
        }
      }
      if (tick - proc.started > runTimeoutMs)
        throw new Error(`not converged after ${runTimeoutMs / 1000} s (${describe(look)})`);
      sample = sampleProcess(proc.pid) ?? sample;
      if (watcher?.broken) {
        log(`  ${watcher.broken}; polling from now on`);
        result.watchBroken = watcher.broken;
        watcher.close();
        watcher = null;
        apiOkAt = performance.now();
      }
      if (watcher) {
        // Watching: the statuses come from the stream; once they are all converged, one list of
        // the Items and ConfigMaps confirms it, and the time is that of the last watch event.
        look = { total: watcher.total, statusDone: watcher.statusDone, configMapsDone: null, problem: null };
        if (watcher.allAt != null && watcher.total === expected) {
          const allAt = watcher.allAt;
          const t = performance.now();
          look = await inspect(api, ns).catch((error) => ({ ...look, problem: `list failed: ${error.message}` }));
          pollMs.push(performance.now() - t);
          if (look.converged) {
            result.convergeMs = round1(allAt - proc.started);
            break;
          }
          log(`  the watch saw every status converged, a list did not (${describe(look)}); polling from now on`);
          watcher.close();
          watcher = null;
          apiOkAt = performance.now();
        }
      } else {
        try {
          const t = performance.now();
          look = await inspect(api, ns);
          pollMs.push(performance.now() - t);
          apiOkAt = performance.now();
        } catch (error) {
          log(`  poll failed: ${error.message}`);
          if (performance.now() - apiOkAt > apiGoneMs) {
            throw new ControlPlaneGone(`the API server has not answered for ${apiGoneMs / 1000} s: ${error.message}`);
          }
        }
        if (look?.converged) {
          result.convergeMs = round1(performance.now() - proc.started);
          break;
        }
      }
      if (performance.now() - lastProgress > 5000) {
        lastProgress = performance.now();
        log(`  ${contender.name}: ${describe(look)} after ${((lastProgress - proc.started) / 1000).toFixed(0)} s`);
      }
      await sleep(Math.max(0, pollEveryMs - (performance.now() - tick)));
    }
    if (look.total !== expected) throw new Error(`the namespace holds ${look.total} Items, expected ${expected}`);

    // CPU and peak RSS: from /proc just before stopping it, or from the line a contender that
    // already exited (raw) printed about itself as its last act.
    const last = sampleProcess(proc.pid);
    if (last && !proc.exit) Object.assign(result, last, { measuredFrom: '/proc' });
    else {
      if (!proc.exit) await Promise.race([proc.exited, sleep(30_000)]);
      const line = proc.stdout.trim().split('\n').at(-1) ?? '';
      try {
        const self = JSON.parse(line);
        Object.assign(result, { cpuSeconds: self.cpuSeconds, maxRssBytes: self.maxRssBytes, measuredFrom: 'self' });
      } catch {
        if (sample) Object.assign(result, sample, { measuredFrom: '/proc (last poll)' });
      }
    }
    result.cpuSeconds = round3(result.cpuSeconds);
    result.ok = true;
  } catch (error) {
    if (error instanceof Stopping) throw error;
    result.error = error.message;
    if (error instanceof ControlPlaneGone) fatal = error;
  } finally {
    // A contender that exits by itself (raw) is left to finish; any other is stopped now.
    if (contender.exitsItself && !proc.exit) await Promise.race([proc.exited, sleep(30_000)]);
    watcher?.close();
    result.watchEvents = watcher?.events ?? null;
    result.polls = pollMs.length;
    result.pollMsMedian = pollMs.length ? round1(median(pollMs)) : null;
    result.stop = await stop(proc);
    if (result.stop.spawnError) result.stop.spawnError = result.stop.spawnError.message;
    result.stop.wallMs = round1(result.stop.wallMs);
  }
  if (fatal) throw fatal;
  result.requests = requestDelta(before, await requestCounts(api));
  if (result.requests) {
    result.writes = Object.entries(result.requests)
      .filter(([key]) => !key.endsWith(' GET'))
      .reduce((sum, [, n]) => sum + n, 0);
  }
  return result;
}

function describe(look) {
  if (!look) return 'no successful poll yet';
  const cms = look.configMapsDone == null ? '' : `, ${look.configMapsDone}/${look.total} ConfigMaps right`;
  return `${look.statusDone}/${look.total} statuses converged${cms}${look.problem ? ` (first problem: ${look.problem})` : ''}`;
}

/** Deletes what a run left in its namespace, so that every run meets the same API server and etcd. */
async function cleanNamespace({ dispatcher, server }, ns) {
  for (const path of [itemsPath(ns), `/api/v1/namespaces/${ns}/configmaps`]) {
    const res = await send(dispatcher, `${server}${path}`, 'DELETE');
    if (res.status !== 200) log(`  cleaning ${path}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
  }
}

/** Sums up one contender's runs: medians over the runs that succeeded. */
function summarize(runs, { unavailable, skipped }) {
  const ok = runs.filter((r) => r.ok);
  const pick = (key) => ok.map((r) => r[key]);
  const med = (key) => (ok.length ? median(pick(key)) : null);
  return {
    status: skipped
      ? 'skipped'
      : unavailable
        ? 'unavailable'
        : ok.length === runs.length
          ? 'ok'
          : ok.length > 0
            ? 'partial'
            : 'failed',
    convergeMs: round1(med('convergeMs')),
    convergeMsMin: ok.length ? Math.min(...pick('convergeMs')) : null,
    convergeMsMax: ok.length ? Math.max(...pick('convergeMs')) : null,
    cpuSeconds: round3(med('cpuSeconds')),
    maxRssBytes: med('maxRssBytes'),
    maxRssBytesMin: ok.length ? Math.min(...pick('maxRssBytes')) : null,
    maxRssBytesMax: ok.length ? Math.max(...pick('maxRssBytes')) : null,
    writes: ok.length && ok.every((r) => r.writes != null) ? med('writes') : null,
    okRuns: ok.length,
    error: unavailable ?? runs.find((r) => !r.ok)?.error ?? null,
    runs,
  };
}

const tmp = await mkdtemp(join(tmpdir(), 'kanri-bench-converge-'));
let cp;
let api;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    for (const child of live) child.kill('SIGKILL');
    await api?.dispatcher.close().catch(() => {});
    await cp?.stop();
    await rm(tmp, { recursive: true, force: true });
  })();
  return cleaning;
};
exitOnSignals(log, cleanUp, () => {
  stopping = true;
});

try {
  await main();
} catch (error) {
  if (error instanceof ControlPlaneGone) {
    log(`giving up: ${error.message}`);
    process.exitCode = 1;
  } else if (!stopping) throw error;
} finally {
  if (!stopping) await cleanUp();
}

async function main() {
  // Other work on the machine skews every figure: the load averages go into the JSON.
  const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
  // 1. Build the Go contender and find kopf (neither is measured as part of any contender).
  const goBinary = join(tmp, 'controller-runtime-bench');
  log('building the controller-runtime contender (go build)');
  const build = await run('go', ['build', '-o', goBinary, '.'], {
    cwd: join(root, 'bench/converge/controller-runtime'),
    echoStderr: true,
  });
  const goBuildMs = round1(build.wallMs);
  const goBuildError = build.spawnError
    ? `go build could not start: ${build.spawnError.message}`
    : build.code !== 0
      ? `go build failed (exit ${build.code ?? build.signal})`
      : null;
  log(goBuildError ?? `go build took ${(goBuildMs / 1000).toFixed(1)} s`);
  const goVersion = (await run('go', ['version'], { timeoutMs: 30_000 })).stdout.trim() || null;

  // The interpreter's real path, so that no launcher (a pyenv shim) sits between us and kopf.
  const probe = await run(
    python,
    [
      '-c',
      'import sys, kopf, kubernetes_asyncio; print(sys.executable); print(sys.version.split()[0]); ' +
        'print(kopf.__version__); print(kubernetes_asyncio.__version__)',
    ],
    { timeoutMs: 60_000 },
  );
  const [pythonPath, pythonVersion, kopfVersion, kubernetesAsyncioVersion] = probe.stdout.trim().split('\n');
  const kopfUnavailable =
    probe.spawnError || probe.code !== 0 || !pythonPath
      ? `unavailable: ${probe.spawnError?.message ?? reason(probe.stderr).trim()} ` +
        '(pip install -r bench/converge/requirements.txt)'
      : null;
  log(kopfUnavailable ? `kopf ${kopfUnavailable}` : `kopf ${kopfVersion} on Python ${pythonVersion} (${pythonPath})`);

  // 2. One control plane and the CRD.
  let t = performance.now();
  cp = await startControlPlane();
  if (stopping) {
    await cp.stop(); // the signal came while it started, before cleanUp could see it
    throw new Stopping();
  }
  const controlPlaneStartMs = round1(performance.now() - t);
  log(`control plane at ${cp.server} started in ${(controlPlaneStartMs / 1000).toFixed(1)} s`);
  api = { ...connect(cp.kubeconfig), kubeconfigPath: cp.kubeconfigPath };
  t = performance.now();
  await installCrd(api);
  const crdMs = round1(performance.now() - t);
  log(`CRD items.bench.kanri.dev established in ${(crdMs / 1000).toFixed(1)} s`);

  // 3. The contenders, in rotating order (A B C D, B C D A, …), each in a fresh namespace with
  // its Items created just before it starts.
  const node = process.execPath;
  const contenders = [
    { name: 'controller-runtime', command: goBinary, args: [], unavailable: goBuildError },
    {
      name: 'kopf',
      command: pythonPath,
      args: ['-m', 'kopf', 'run', '--standalone', '--namespace', '{ns}', join(root, 'bench/converge/kopf_operator.py')],
      unavailable: kopfUnavailable,
    },
    { name: 'raw', command: node, args: [join(root, 'bench/converge/raw.mjs')], exitsItself: true },
    { name: 'kanri', command: node, args: [join(root, 'bench/converge/kanri.mjs')] },
  ];
  const only = process.env.BENCH_CONTENDERS?.split(',').map((name) => name.trim());
  for (const c of contenders) c.skipped = only != null && !only.includes(c.name);
  const runs = Object.fromEntries(contenders.map((c) => [c.name, []]));
  const createMs = [];
  for (let r = 0; r < rounds; r++) {
    const order = contenders.map((_, i) => contenders[(i + r) % contenders.length]);
    for (const c of order) {
      if (stopping) throw new Stopping();
      if (c.skipped) continue;
      if (c.unavailable) {
        if (r === 0) log(`${c.name}: ${c.unavailable}`);
        continue;
      }
      const ns = `converge-r${r + 1}-${c.name}`;
      t = performance.now();
      await createItems(api, ns, items);
      createMs.push(round1(performance.now() - t));
      log(`round ${r + 1}/${rounds} ${c.name}: created ${items} Items in ${ns} in ${secs(createMs.at(-1))} s`);
      await sleep(1000); // let the API server and etcd settle after the burst of creates
      const contender = { ...c, args: c.args.map((a) => a.replace('{ns}', ns)) };
      const result = await runContender(api, contender, ns, items);
      if (stopping) throw new Stopping(); // its failure is ours: we killed it
      runs[c.name].push({ round: r + 1, ...result });
      log(
        `round ${r + 1}/${rounds} ${c.name.padEnd(18)} ` +
          (result.ok
            ? `converged in ${secs(result.convergeMs)} s, CPU ${result.cpuSeconds.toFixed(2)} s, ` +
              `peak RSS ${mib(result.maxRssBytes)} MiB, ${result.writes ?? '?'} writes`
            : `FAILED: ${result.error}`),
      );
      await cleanNamespace(api, ns);
    }
  }

  // 4. Report.
  const summary = Object.fromEntries(contenders.map((c) => [c.name, summarize(runs[c.name], c)]));
  const rows = [['contender', 'status', 'converge s', 'CPU s', 'peak RSS MiB', 'API writes']];
  if (rounds > 1) rows[0].splice(3, 0, 'converge s min–max');
  for (const c of contenders) {
    const s = summary[c.name];
    const row = [
      c.name,
      s.runs.length === 0 || s.status === 'ok' || s.status === 'failed'
        ? s.status
        : `${s.status} (${s.okRuns}/${rounds})`,
      secs(s.convergeMs),
      s.cpuSeconds == null ? '-' : s.cpuSeconds.toFixed(2),
      mib(s.maxRssBytes),
      s.writes == null ? '-' : String(s.writes),
    ];
    if (rounds > 1)
      row.splice(3, 0, s.convergeMsMin == null ? '-' : `${secs(s.convergeMsMin)}–${secs(s.convergeMsMax)}`);
    rows.push(row);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log(
    `\nConvergence of ${items} Items (one owned ConfigMap + status each), ${workers} workers, ` +
      `${rounds} run${rounds > 1 ? 's (medians)' : ''} per contender:\n`,
  );
  for (const row of rows)
    console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  for (const c of contenders) if (summary[c.name].error) console.log(`  ${c.name}: ${summary[c.name].error}`);

  const k = summary.kanri;
  const cr = summary['controller-runtime'];
  const kopf = summary.kopf;
  const raw = summary.raw;
  const ratios = {
    kanriToControllerRuntimeTime: ratio(k.convergeMs, cr.convergeMs),
    kanriToControllerRuntimeRss: ratio(k.maxRssBytes, cr.maxRssBytes),
    kanriToControllerRuntimeCpu: ratio(k.cpuSeconds, cr.cpuSeconds),
    kanriToRawTime: ratio(k.convergeMs, raw.convergeMs),
    controllerRuntimeToRawTime: ratio(cr.convergeMs, raw.convergeMs),
    kopfToControllerRuntimeTime: ratio(kopf.convergeMs, cr.convergeMs),
    kopfToControllerRuntimeRss: ratio(kopf.maxRssBytes, cr.maxRssBytes),
    kopfToControllerRuntimeCpu: ratio(kopf.cpuSeconds, cr.cpuSeconds),
    kopfToRawTime: ratio(kopf.convergeMs, raw.convergeMs),
  };
  const x = (v) => (v == null ? 'n/a' : `${v.toFixed(2)}x`);
  console.log('\nRatios (lower is better for the first named):');
  console.log(
    `  kanri / controller-runtime  time ${x(ratios.kanriToControllerRuntimeTime)}   ` +
      `peak RSS ${x(ratios.kanriToControllerRuntimeRss)}   CPU ${x(ratios.kanriToControllerRuntimeCpu)}`,
  );
  console.log(`  kanri / raw                 time ${x(ratios.kanriToRawTime)}`);
  console.log(`  controller-runtime / raw    time ${x(ratios.controllerRuntimeToRawTime)}`);
  console.log(
    `  kopf / controller-runtime   time ${x(ratios.kopfToControllerRuntimeTime)}   ` +
      `peak RSS ${x(ratios.kopfToControllerRuntimeRss)}   CPU ${x(ratios.kopfToControllerRuntimeCpu)}`,
  );
  console.log(`  kopf / raw                  time ${x(ratios.kopfToRawTime)}`);
  console.log(
    `\nsetup: go build ${secs(goBuildMs)} s, control plane start ${secs(controlPlaneStartMs)} s, CRD ${secs(crdMs)} s, ` +
      `creating ${items} Items ${secs(createMs.length ? median(createMs) : null)} s (median of ${createMs.length})\n`,
  );
  console.log(
    JSON.stringify({
      items,
      workers,
      rounds,
      observe,
      pollEveryMs,
      contenders: summary,
      ratios,
      setup: { goBuildMs, controlPlaneStartMs, crdMs, createMs, createInFlight: inFlight },
      environment: {
        node: process.version,
        go: goVersion,
        python: kopfUnavailable ? null : pythonVersion,
        kopf: kopfUnavailable ? null : kopfVersion,
        kubernetesAsyncio: kopfUnavailable ? null : kubernetesAsyncioVersion,
        cpus: cpus().length,
        platform: process.platform,
        loadAverageAtStart: loadAtStart,
        loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
      },
    }),
  );
}
