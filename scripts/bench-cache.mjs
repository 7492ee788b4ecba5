#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listCounters, printReport, summarize } from '../bench/cache/report.mjs';
import { startControlPlane } from '../packages/testenv/dist/src/index.js';
import { Children, Stopping } from './bench-children.mjs';
import { benchEnvironment, connect, exitOnSignals, failureReason, mib, rng, round1, send } from './bench-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const objects = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seed = Number(process.env.BENCH_SEED ?? 1);
const lists = (process.env.BENCH_LISTS ?? 'cache,quorum').split(',').map((x) => x.trim());
const managedFieldsModes = (process.env.BENCH_MANAGED_FIELDS ?? 'keep,drop').split(',').map((x) => x.trim());
const pageSize = 500; // client-go's reflector pages by 500 and offers no setting for it through an informer factory
const namespace = 'bench';
const inFlight = 32;
const runTimeoutMs = 10 * 60_000;
if (
  !Number.isInteger(objects) ||
  objects < 0 ||
  !Number.isInteger(rounds) ||
  rounds < 1 ||
  !Number.isInteger(seed) ||
  !lists.every((l) => ['cache', 'quorum'].includes(l)) ||
  !managedFieldsModes.every((m) => ['keep', 'drop'].includes(m))
) {
  console.error(
    'usage: node scripts/bench-cache.mjs [objects, default 20000]   (env BENCH_ROUNDS default 3, BENCH_SEED default 1, ' +
      'BENCH_LISTS default cache,quorum, BENCH_MANAGED_FIELDS default keep,drop)',
  );
  process.exit(2);
}
const environment = benchEnvironment();

const children = new Children(root);
const log = (line) => console.error(`[bench:cache] ${line}`);
const run = (command, args, options) => children.run(command, args, { timeoutMs: runTimeoutMs, ...options });

/** Creates the namespace and `count` ConfigMaps with `inFlight` requests at a time; returns how many the namespace holds. */
async function createConfigMaps({ dispatcher, server }, count) {
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
      if (children.stopping) throw new Stopping();
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
}

/** One contender run: parses and checks its JSON line. */
async function runContender(contender, env, expected) {
  const out = await run(contender.command, contender.args, { env });
  const lastLine = (text) => text.trim().split('\n').filter(Boolean).at(-1) ?? '';
  const result = { ok: false, syncMs: null, count: null, maxRssBytes: null, wallMs: round1(out.wallMs), error: null };
  if (out.spawnError) result.error = `could not start: ${out.spawnError.message}`;
  else if (out.timedOut) result.error = `timed out after ${runTimeoutMs / 1000} s`;
  else if (out.code !== 0) {
    result.error = `exit ${out.code ?? out.signal}: ${failureReason(out.stderr).trim().slice(0, 300)}`;
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

const tmp = await mkdtemp(join(tmpdir(), 'kanri-bench-cache-'));
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
  if (!children.stopping) throw error;
} finally {
  if (!children.stopping) await cleanUp();
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
  if (build.spawnError || build.code !== 0) {
    throw new Error(
      `go build of the client-go contender failed: ${build.spawnError?.message ?? `exit ${build.code ?? build.signal}`}`,
    );
  }
  log(`go build took ${(goBuildMs / 1000).toFixed(1)} s`);

  // 2. One control plane and the objects.
  let t = performance.now();
  cp = await startControlPlane();
  if (children.stopping) {
    await cp.stop(); // the signal came while it started, before cleanUp could see it
    throw new Stopping();
  }
  const controlPlaneStartMs = round1(performance.now() - t);
  log(`control plane at ${cp.server} started in ${(controlPlaneStartMs / 1000).toFixed(1)} s`);
  api = connect(cp.kubeconfig, inFlight);
  t = performance.now();
  const expected = await createConfigMaps(api, objects);
  const createMs = round1(performance.now() - t);
  log(`namespace ${namespace} holds ${expected} ConfigMaps; creating them took ${(createMs / 1000).toFixed(1)} s`);

  // 3. Every configuration (list semantics × managedFields × contender), each run a fresh process;
  // every round in a new random order (seeded), so that no configuration always runs first or
  // right after the same other one.
  const node = process.execPath;
  const contenders = [
    { name: 'client-go', command: goBinary, args: [], defaults: { list: 'cache', managedFields: 'keep' } },
    {
      name: 'client-node',
      command: node,
      args: [join(root, 'bench/cache/client-node.mjs')],
      defaults: { list: 'quorum', managedFields: 'keep' },
    },
    {
      name: 'kanri',
      command: node,
      args: [join(root, 'bench/cache/kanri.mjs')],
      defaults: { list: 'cache', managedFields: 'drop' },
    },
  ];
  const configs = lists.flatMap((list) =>
    managedFieldsModes.flatMap((managedFields) =>
      contenders.map((c) => ({ ...c, list, managedFields, key: `${list}/${managedFields}/${c.name}` })),
    ),
  );
  const random = rng(seed);
  const runs = Object.fromEntries(configs.map((c) => [c.key, []]));
  const orders = [];
  for (let r = 0; r < rounds; r++) {
    const order = [...configs];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    orders.push(order.map((c) => c.key));
    for (const c of order) {
      if (children.stopping) throw new Stopping();
      const env = {
        ...process.env,
        KUBECONFIG: cp.kubeconfigPath,
        BENCH_NAMESPACE: namespace,
        BENCH_EXPECTED: `${expected}`,
        BENCH_LIST: c.list,
        BENCH_MANAGED_FIELDS: c.managedFields,
        BENCH_PAGE_SIZE: `${pageSize}`,
      };
      const before = await listCounters(api.dispatcher, api.server);
      const result = await runContender(c, env, expected);
      if (children.stopping) throw new Stopping(); // its failure is ours: we killed it
      const after = await listCounters(api.dispatcher, api.server);
      result.lists = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
      runs[c.key].push({ round: r + 1, ...result });
      log(
        `round ${r + 1}/${rounds} ${c.key.padEnd(24)} ` +
          (result.ok
            ? `sync ${result.syncMs.toFixed(0)} ms, peak RSS ${mib(result.maxRssBytes)} MiB, ` +
              `${result.lists.listRequests} list requests (watch cache ${result.lists.fromWatchCache}, of them consistent ${result.lists.consistentFromCache}; etcd ranges ${result.lists.etcdRanges})`
            : `FAILED: ${result.error}`),
      );
    }
  }

  // 4. Report.
  const summary = Object.fromEntries(configs.map((c) => [c.key, summarize(runs[c.key])]));
  const ratios = printReport({ configs, contenders, summary, lists, managedFieldsModes, expected, pageSize, rounds });
  console.log(
    `\nsetup: go build ${(goBuildMs / 1000).toFixed(1)} s, control plane start ${(controlPlaneStartMs / 1000).toFixed(1)} s, ` +
      `creating ${expected} ConfigMaps ${(createMs / 1000).toFixed(1)} s\n`,
  );
  const failed = configs.filter((c) => summary[c.key].status !== 'ok').map((c) => c.key);
  console.log(
    JSON.stringify({
      benchmark: 'cache',
      status: failed.length ? 'failed' : 'ok',
      failed,
      objects: expected,
      requestedObjects: objects,
      namespace,
      rounds,
      seed,
      pageSize,
      orders,
      defaults: Object.fromEntries(contenders.map((c) => [c.name, c.defaults])),
      configurations: summary,
      ratios,
      setup: { goBuildMs, controlPlaneStartMs, createMs, createInFlight: inFlight },
      environment: environment.finish(),
    }),
  );
  if (failed.length) process.exitCode = 1;
}
