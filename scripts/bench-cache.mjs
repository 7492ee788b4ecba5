#!/usr/bin/env node
// Watch-cache (informer) benchmark, side by side: client-go, @kubernetes/client-node and Kanri
// each sync the same N ConfigMaps (~1 KiB of data each; default 20,000) from one local control
// plane. Each contender is its own child process (so its memory is its own), run ROUNDS times
// (default 3) in rotating order; the table shows the median sync time and peak RSS of each, then
// the ratios. The last line of stdout is one JSON object with every figure.
// Run with `npm run bench:cache` or `node scripts/bench-cache.mjs [objects]`; see bench/README.md.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { startControlPlane } from '../packages/testenv/dist/src/index.js';
import { exitOnSignals, median, mib, ratio, round1, send } from './bench-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const objects = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const namespace = 'bench';
const inFlight = 32;
const runTimeoutMs = 10 * 60_000;
if (!Number.isInteger(objects) || objects < 0 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node scripts/bench-cache.mjs [objects, default 20000]   (env BENCH_ROUNDS, default 3)');
  process.exit(2);
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const live = new Set();
/** Set by SIGINT/SIGTERM: nothing new starts, and the main flow returns quietly while the handler cleans up. */
let stopping = false;
class Stopping extends Error {}
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const log = (line) => console.error(`[bench:cache] ${line}`);

/** Spawns a child that dies with us (parent-death signal), collecting its output. */
function run(command, args, { cwd = root, env = process.env, timeoutMs = runTimeoutMs, echoStderr = false } = {}) {
  const [cmd, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
  if (stopping) return Promise.reject(new Stopping());
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr = (stderr + d).slice(-8192);
      if (echoStderr) process.stderr.write(d);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const finish = (code, signal, spawnError) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, signal, stdout, stderr, timedOut, spawnError, wallMs: performance.now() - started });
    };
    child.on('error', (error) => finish(null, null, error));
    child.on('close', (code, signal) => finish(code, signal));
  });
}

/** Creates the namespace and `count` ConfigMaps with `inFlight` requests at a time; returns how many the namespace holds. */
async function createConfigMaps(kubeconfig, count) {
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
  const server = cluster.server;
  try {
    const ns = await send(dispatcher, `${server}/api/v1/namespaces`, 'POST', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace },
    });
    if (ns.status !== 201 && ns.status !== 409) throw new Error(`creating namespace: HTTP ${ns.status} ${ns.text}`);

    const width = String(Math.max(count - 1, 0)).length;
    let next = 0;
    let done = 0;
    const started = performance.now();
    const worker = async () => {
      while (next < count) {
        if (stopping) throw new Stopping();
        const i = next++;
        const res = await send(dispatcher, `${server}/api/v1/namespaces/${namespace}/configmaps`, 'POST', {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `cm-${String(i).padStart(width, '0')}`, labels: { app: 'bench-cache' } },
          data: { payload: randomBytes(768).toString('base64') }, // 1,024 characters
        });
        if (res.status !== 201 && res.status !== 409) {
          throw new Error(`creating ConfigMap ${i}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
        }
        done++;
        if (done % 2000 === 0 || done === count) {
          const s = (performance.now() - started) / 1000;
          log(`created ${done}/${count} ConfigMaps in ${s.toFixed(1)} s (${Math.round(done / s)}/s)`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));

    // The contenders must see exactly what the namespace holds (an existing cluster may hold more).
    const list = await send(dispatcher, `${server}/api/v1/namespaces/${namespace}/configmaps`, 'GET');
    if (list.status !== 200) throw new Error(`listing ConfigMaps: HTTP ${list.status}`);
    return JSON.parse(list.text).items.length;
  } finally {
    await dispatcher.close();
  }
}

/** One contender run: parses and checks its JSON line. */
async function runContender(contender, env, expected) {
  const out = await run(contender.command, contender.args, { env });
  const lastLine = (text) => text.trim().split('\n').filter(Boolean).at(-1) ?? '';
  // A Node crash ends with a stack and "Node.js vX"; the line naming the error says more.
  const reason = (stderr) =>
    stderr.split('\n').find((l) => /^\w*Error\b|^Error:/.test(l)) ??
    stderr
      .trim()
      .split('\n')
      .filter((l) => l && !/^Node\.js v\d/.test(l))
      .at(-1) ??
    '(no stderr)';
  const result = { ok: false, syncMs: null, count: null, maxRssBytes: null, wallMs: round1(out.wallMs), error: null };
  if (out.spawnError) result.error = `could not start: ${out.spawnError.message}`;
  else if (out.timedOut) result.error = `timed out after ${runTimeoutMs / 1000} s`;
  else if (out.code !== 0) {
    result.error = `exit ${out.code ?? out.signal}: ${reason(out.stderr).trim().slice(0, 300)}`;
  } else {
    try {
      const parsed = JSON.parse(lastLine(out.stdout));
      for (const key of ['syncMs', 'count', 'maxRssBytes']) {
        if (typeof parsed[key] !== 'number' || !Number.isFinite(parsed[key])) throw new Error(`${key} is not a number`);
      }
      Object.assign(result, {
        syncMs: round1(parsed.syncMs),
        count: parsed.count,
        maxRssBytes: parsed.maxRssBytes,
      });
      if (parsed.count !== expected) result.error = `count ${parsed.count}, expected ${expected}`;
      else result.ok = true;
    } catch (error) {
      result.error = `bad output (${error.message}): ${lastLine(out.stdout).slice(0, 200) || '(empty)'}`;
    }
  }
  return result;
}

/** Sums up one contender's runs: medians over the runs that succeeded. */
function summarize(runs) {
  const ok = runs.filter((r) => r.ok);
  const pick = (key) => ok.map((r) => r[key]);
  return {
    status: ok.length === runs.length ? 'ok' : ok.length > 0 ? 'partial' : 'failed',
    syncMs: ok.length ? round1(median(pick('syncMs'))) : null,
    syncMsMin: ok.length ? Math.min(...pick('syncMs')) : null,
    syncMsMax: ok.length ? Math.max(...pick('syncMs')) : null,
    maxRssBytes: ok.length ? median(pick('maxRssBytes')) : null,
    maxRssBytesMin: ok.length ? Math.min(...pick('maxRssBytes')) : null,
    maxRssBytesMax: ok.length ? Math.max(...pick('maxRssBytes')) : null,
    count: ok.length ? ok[0].count : null,
    wallMs: ok.length ? round1(median(pick('wallMs'))) : null,
    okRuns: ok.length,
    error: runs.find((r) => !r.ok)?.error ?? null,
    runs,
  };
}

const tmp = await mkdtemp(join(tmpdir(), 'kanri-bench-cache-'));
let cp;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    for (const child of live) child.kill('SIGKILL');
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
  if (!stopping) throw error;
} finally {
  if (!stopping) await cleanUp();
}

async function main() {
  // 1. Build the Go contender (not measured as part of any contender).
  const goBinary = join(tmp, 'client-go-bench');
  log('building the client-go contender (go build)');
  const build = await run('go', ['build', '-o', goBinary, '.'], {
    cwd: join(root, 'bench/cache/client-go'),
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

  // 2. One control plane and the objects.
  let t = performance.now();
  cp = await startControlPlane();
  if (stopping) {
    await cp.stop(); // the signal came while it started, before cleanUp could see it
    throw new Stopping();
  }
  const controlPlaneStartMs = round1(performance.now() - t);
  log(`control plane at ${cp.server} started in ${(controlPlaneStartMs / 1000).toFixed(1)} s`);
  t = performance.now();
  const expected = await createConfigMaps(cp.kubeconfig, objects);
  const createMs = round1(performance.now() - t);
  log(`namespace ${namespace} holds ${expected} ConfigMaps; creating them took ${(createMs / 1000).toFixed(1)} s`);

  // 3. The contenders, each run a fresh process, in rotating order (A B C, B C A, C A B, …).
  const node = process.execPath;
  const contenders = [
    { name: 'client-go', command: goBinary, args: [], buildError: goBuildError },
    { name: 'client-node', command: node, args: [join(root, 'bench/cache/client-node.mjs')] },
    { name: 'kanri', command: node, args: [join(root, 'bench/cache/kanri.mjs')] },
  ];
  const env = {
    ...process.env,
    KUBECONFIG: cp.kubeconfigPath,
    BENCH_NAMESPACE: namespace,
    BENCH_EXPECTED: `${expected}`,
  };
  const runs = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    const order = contenders.map((_, i) => contenders[(i + r) % contenders.length]);
    for (const c of order) {
      if (stopping) throw new Stopping();
      const result = c.buildError
        ? { ok: false, syncMs: null, count: null, maxRssBytes: null, wallMs: null, error: c.buildError }
        : await runContender(c, env, expected);
      if (stopping) throw new Stopping(); // its failure is ours: we killed it
      runs[c.name].push({ round: r + 1, ...result });
      log(
        `round ${r + 1}/${rounds} ${c.name.padEnd(11)} ` +
          (result.ok
            ? `sync ${result.syncMs.toFixed(0)} ms, peak RSS ${mib(result.maxRssBytes)} MiB, count ${result.count}`
            : `FAILED: ${result.error}`),
      );
    }
  }

  // 4. Report.
  const summary = Object.fromEntries(contenders.map((c) => [c.name, summarize(runs[c.name])]));
  const rows = [
    ['contender', 'status', 'sync ms median', 'sync ms min–max', 'peak RSS MiB median', 'RSS MiB min–max', 'count'],
  ];
  for (const c of contenders) {
    const s = summary[c.name];
    const range = (lo, hi, f) => (lo == null ? '-' : `${f(lo)}–${f(hi)}`);
    rows.push([
      c.name,
      s.status === 'ok' ? 'ok' : `${s.status} (${s.okRuns}/${rounds})`,
      s.syncMs == null ? '-' : s.syncMs.toFixed(0),
      range(s.syncMsMin, s.syncMsMax, (x) => x.toFixed(0)),
      mib(s.maxRssBytes),
      range(s.maxRssBytesMin, s.maxRssBytesMax, mib),
      s.count == null ? '-' : String(s.count),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log(`\nWatch cache sync of ${expected} ConfigMaps (~1 KiB each), ${rounds} runs per contender:\n`);
  for (const row of rows)
    console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  for (const c of contenders) if (summary[c.name].error) console.log(`  ${c.name}: ${summary[c.name].error}`);

  const k = summary.kanri;
  const go = summary['client-go'];
  const cn = summary['client-node'];
  const ratios = {
    kanriToClientGoSync: ratio(k.syncMs, go.syncMs),
    kanriToClientGoRss: ratio(k.maxRssBytes, go.maxRssBytes),
    kanriToClientNodeSync: ratio(k.syncMs, cn.syncMs),
    kanriToClientNodeRss: ratio(k.maxRssBytes, cn.maxRssBytes),
    clientNodeToClientGoSync: ratio(cn.syncMs, go.syncMs),
    clientNodeToClientGoRss: ratio(cn.maxRssBytes, go.maxRssBytes),
  };
  const x = (v) => (v == null ? 'n/a' : `${v.toFixed(2)}x`);
  console.log('\nRatios (lower is better for the first named):');
  console.log(
    `  kanri / client-go        sync ${x(ratios.kanriToClientGoSync)}   peak RSS ${x(ratios.kanriToClientGoRss)}`,
  );
  console.log(
    `  kanri / client-node      sync ${x(ratios.kanriToClientNodeSync)}   peak RSS ${x(ratios.kanriToClientNodeRss)}`,
  );
  console.log(
    `  client-node / client-go  sync ${x(ratios.clientNodeToClientGoSync)}   peak RSS ${x(ratios.clientNodeToClientGoRss)}`,
  );
  console.log(
    `\nsetup: go build ${(goBuildMs / 1000).toFixed(1)} s, control plane start ${(controlPlaneStartMs / 1000).toFixed(1)} s, ` +
      `creating ${expected} ConfigMaps ${(createMs / 1000).toFixed(1)} s\n`,
  );
  console.log(
    JSON.stringify({
      objects: expected,
      requestedObjects: objects,
      namespace,
      rounds,
      contenders: summary,
      ratios,
      setup: { goBuildMs, controlPlaneStartMs, createMs, createInFlight: inFlight },
      environment: { node: process.version, go: goVersion, cpus: cpus().length, platform: process.platform },
    }),
  );
}
