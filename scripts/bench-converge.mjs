#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  cleanNamespace,
  createItems,
  inspect,
  installCrd,
  requestCounts,
  requestDelta,
  watchItems,
} from '../bench/converge/api.mjs';
import { printReport, summarize } from '../bench/converge/report.mjs';
import { startControlPlane } from '../packages/testenv/dist/src/index.js';
import { Children, Stopping, sampleProcess } from './bench-children.mjs';
import {
  benchEnvironment,
  connect,
  ensureVenv,
  exitOnSignals,
  failureReason,
  median,
  mib,
  round1,
} from './bench-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const items = Number(process.argv[2] ?? 5_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const workers = Number(process.env.BENCH_WORKERS ?? 4);
const runTimeoutMs = Number(process.env.BENCH_TIMEOUT_S ?? 600) * 1000;
const inFlight = 32;
const pollEveryMs = 250;
const observe = process.env.BENCH_OBSERVE ?? 'watch';
/** How long a contender that exited 0 by itself (raw) gets for the driver to see its writes. */
const exitGraceMs = 10_000;
/** How long a contender gets to exit after SIGTERM before SIGKILL. */
const stopTimeoutMs = 15_000;
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
      '(env BENCH_ROUNDS default 3, BENCH_WORKERS default 4, BENCH_TIMEOUT_S default 600, ' +
      "BENCH_PYTHON (the base of kopf's virtual environment) default python3, BENCH_OBSERVE watch (default) or poll, " +
      'BENCH_CONTENDERS a comma-separated subset)',
  );
  process.exit(2);
}

const children = new Children(root);
/** The API server has not answered for `apiGoneMs`: no later run could succeed, so the benchmark ends. */
class ControlPlaneGone extends Error {}
const apiGoneMs = 30_000;

const log = (line) => console.error(`[bench:converge] ${line}`);
const round3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);
const secs = (ms) => (ms == null ? '-' : (ms / 1000).toFixed(2));
const run = (command, args, options) => children.run(command, args, options);

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
  const proc = children.start(contender.command, contender.args, { env, cwd: contender.cwd ?? root });
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
      if (children.stopping) throw new Stopping();
      if (proc.exit) {
        const { code, signal, spawnError } = proc.exit;
        if (spawnError) throw new Error(`could not start: ${spawnError.message}`);
        if (code !== 0) throw new Error(`exit ${code ?? signal}: ${failureReason(proc.stderr).trim().slice(0, 300)}`);
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

const tmp = await mkdtemp(join(tmpdir(), 'kanri-bench-converge-'));
let cp;
let api;
let cleaning;
const cleanUp = () => {
  cleaning ??= (async () => {
    children.killAll();
    await api?.dispatcher.close().catch(() => {});
    await cp?.stop();
    await rm(tmp, { recursive: true, force: true });
  })();
  return cleaning;
};
exitOnSignals(log, cleanUp, () => {
  children.stopping = true;
});

try {
  await main();
} catch (error) {
  if (error instanceof ControlPlaneGone) {
    log(`giving up: ${error.message}`);
    process.exitCode = 1;
  } else if (!children.stopping) throw error;
} finally {
  if (!children.stopping) await cleanUp();
}

async function main() {
  const environment = benchEnvironment();
  // 1. Build the Go contender and install kopf (neither is measured as part of any contender).
  const goBinary = join(tmp, 'controller-runtime-bench');
  log('building the controller-runtime contender (go build)');
  const build = await run('go', ['build', '-o', goBinary, '.'], {
    cwd: join(root, 'bench/converge/controller-runtime'),
    echoStderr: true,
  });
  const goBuildMs = round1(build.wallMs);
  if (build.spawnError || build.code !== 0) {
    throw new Error(
      `go build of the controller-runtime contender failed: ${build.spawnError?.message ?? `exit ${build.code ?? build.signal}`}`,
    );
  }
  log(`go build took ${secs(goBuildMs)} s`);
  const venv = await ensureVenv('kopf', 'bench/converge/requirements.txt', { log });
  const probe = await run(
    venv.python,
    ['-c', 'import kopf, kubernetes_asyncio; print(kopf.__version__); print(kubernetes_asyncio.__version__)'],
    { timeoutMs: 60_000 },
  );
  if (probe.spawnError || probe.code !== 0) {
    throw new Error(`kopf does not import in ${venv.dir}: ${probe.spawnError?.message ?? failureReason(probe.stderr)}`);
  }
  const [kopfVersion, kubernetesAsyncioVersion] = probe.stdout.trim().split('\n');
  log(`kopf ${kopfVersion} on Python ${venv.pythonVersion} (${venv.python})`);

  // 2. One control plane and the CRD.
  let t = performance.now();
  cp = await startControlPlane();
  if (children.stopping) {
    await cp.stop(); // the signal came while it started, before cleanUp could see it
    throw new Stopping();
  }
  const controlPlaneStartMs = round1(performance.now() - t);
  log(`control plane at ${cp.server} started in ${(controlPlaneStartMs / 1000).toFixed(1)} s`);
  api = { ...connect(cp.kubeconfig, inFlight), kubeconfigPath: cp.kubeconfigPath };
  t = performance.now();
  await installCrd(api);
  const crdMs = round1(performance.now() - t);
  log(`CRD items.bench.kanri.dev established in ${(crdMs / 1000).toFixed(1)} s`);

  // 3. The contenders, in rotating order (A B C D, B C D A, …), each in a fresh namespace with
  // its Items created just before it starts.
  const node = process.execPath;
  const contenders = [
    { name: 'controller-runtime', command: goBinary, args: [] },
    {
      name: 'kopf',
      command: venv.python,
      args: ['-m', 'kopf', 'run', '--standalone', '--namespace', '{ns}', join(root, 'bench/converge/kopf_operator.py')],
    },
    { name: 'raw', command: node, args: [join(root, 'bench/converge/raw.mjs')], exitsItself: true },
    { name: 'kanri', command: node, args: [join(root, 'bench/converge/kanri.mjs')] },
  ];
  const only = process.env.BENCH_CONTENDERS?.split(',').map((name) => name.trim());
  for (const c of contenders) c.skipped = only != null && !only.includes(c.name);
  const runs = Object.fromEntries(contenders.map((c) => [c.name, []]));
  const createMs = [];
  const orders = [];
  for (let r = 0; r < rounds; r++) {
    const order = contenders.map((_, i) => contenders[(i + r) % contenders.length]);
    orders.push(order.filter((c) => !c.skipped).map((c) => c.name));
    for (const c of order) {
      if (children.stopping) throw new Stopping();
      if (c.skipped) continue;
      const ns = `converge-r${r + 1}-${c.name}`;
      t = performance.now();
      await createItems(api, ns, items, {
        inFlight,
        check: () => {
          if (children.stopping) throw new Stopping();
        },
      });
      createMs.push(round1(performance.now() - t));
      log(`round ${r + 1}/${rounds} ${c.name}: created ${items} Items in ${ns} in ${secs(createMs.at(-1))} s`);
      await sleep(1000); // let the API server and etcd settle after the burst of creates
      const contender = { ...c, args: c.args.map((a) => a.replace('{ns}', ns)) };
      const result = await runContender(api, contender, ns, items);
      if (children.stopping) throw new Stopping(); // its failure is ours: we killed it
      runs[c.name].push({ round: r + 1, ...result });
      log(
        `round ${r + 1}/${rounds} ${c.name.padEnd(18)} ` +
          (result.ok
            ? `converged in ${secs(result.convergeMs)} s, CPU ${result.cpuSeconds.toFixed(2)} s, ` +
              `peak RSS ${mib(result.maxRssBytes)} MiB, ${result.writes ?? '?'} writes`
            : `FAILED: ${result.error}`),
      );
      await cleanNamespace(api, ns, log);
    }
  }

  // 4. Report.
  const summary = Object.fromEntries(contenders.map((c) => [c.name, summarize(runs[c.name], c)]));
  const ratios = printReport({ contenders, summary, items, workers, rounds });
  console.log(
    `\nsetup: go build ${secs(goBuildMs)} s, control plane start ${secs(controlPlaneStartMs)} s, CRD ${secs(crdMs)} s, ` +
      `creating ${items} Items ${secs(createMs.length ? median(createMs) : null)} s (median of ${createMs.length})\n`,
  );
  const failed = contenders.filter((c) => !['ok', 'skipped'].includes(summary[c.name].status)).map((c) => c.name);
  console.log(
    JSON.stringify({
      benchmark: 'converge',
      status: failed.length ? 'failed' : 'ok',
      failed,
      items,
      workers,
      rounds,
      orders,
      observe,
      pollEveryMs,
      contenders: summary,
      ratios,
      setup: { goBuildMs, controlPlaneStartMs, crdMs, createMs, createInFlight: inFlight },
      environment: {
        ...environment.finish({ python: venv.python }),
        kopf: kopfVersion,
        kubernetesAsyncio: kubernetesAsyncioVersion,
      },
    }),
  );
  if (failed.length) process.exitCode = 1;
}
