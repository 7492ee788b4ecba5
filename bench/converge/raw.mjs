#!/usr/bin/env node
// Contender `raw` of `npm run bench:converge`: the lower bound, no controller at all. It lists the
// Items in BENCH_NAMESPACE once, then for each Item does exactly the writes a reconcile needs (a
// server-side apply of the owned ConfigMap, then a merge patch of status through the status
// subresource) with BENCH_WORKERS requests in flight, and exits. Plain undici with the
// kubeconfig's client certificate, as scripts/bench-cache.mjs does. Its last stdout line is
// {"items":…,"writes":…,"cpuSeconds":…,"maxRssBytes":…}, because the process is gone (and its
// /proc entry with it) by the time the driver sees the namespace converged. See bench/README.md.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { parse } from 'yaml';

const fieldManager = 'bench-raw';

/** Peak RSS from VmHWM (getrusage's maxRSS would include the parent's peak carried over exec). */
function peakRssBytes() {
  const kb = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
  return kb ? Number(kb) * 1024 : process.resourceUsage().maxRSS * 1024;
}

const namespace = process.env.BENCH_NAMESPACE;
const workers = Number(process.env.BENCH_WORKERS ?? 4);
const kubeconfigPath = process.env.KUBECONFIG?.split(':')[0];
if (!namespace || !kubeconfigPath || !Number.isInteger(workers) || workers < 1) {
  console.error('raw: KUBECONFIG, BENCH_NAMESPACE and BENCH_WORKERS (a positive integer) must be set');
  process.exit(1);
}

const kubeconfig = parse(readFileSync(kubeconfigPath, 'utf8'));
const decode = (b64) => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);
const context = kubeconfig.contexts?.find((c) => c.name === kubeconfig['current-context'])?.context;
const cluster = kubeconfig.clusters?.find((c) => c.name === context?.cluster)?.cluster;
const user = kubeconfig.users?.find((u) => u.name === context?.user)?.user;
if (!cluster || !user) {
  console.error('raw: the kubeconfig has no complete current context');
  process.exit(1);
}
const dispatcher = new Agent({
  connections: workers,
  connect: {
    ca: decode(cluster['certificate-authority-data']),
    cert: decode(user['client-certificate-data']),
    key: decode(user['client-key-data']),
  },
});
const server = cluster.server;

/** undici's `request`, retrying overload (429, 5xx) and dropped connections, failing on any other error. */
async function send(path, method, body, contentType = 'application/json') {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await request(`${server}${path}`, {
        method,
        dispatcher,
        headers: { accept: 'application/json', ...(body ? { 'content-type': contentType } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.body.text();
      if ((res.statusCode === 429 || res.statusCode >= 500) && attempt < 6) {
        await sleep(100 * attempt);
        continue;
      }
      if (res.statusCode >= 300) throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
      return text;
    } catch (error) {
      if (attempt >= 6 || error.message.includes(': HTTP ')) throw error;
      await sleep(100 * attempt);
    }
  }
}

const base = `/apis/bench.kanri.dev/v1/namespaces/${namespace}/items`;
const items = JSON.parse(await send(base, 'GET')).items;
let next = 0;
let writes = 0;
const worker = async () => {
  while (next < items.length) {
    const item = items[next++];
    const { name, uid } = item.metadata;
    const value = item.spec?.value ?? '';
    await send(
      `/api/v1/namespaces/${namespace}/configmaps/${name}?fieldManager=${fieldManager}&force=true`,
      'PATCH',
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name,
          namespace,
          ownerReferences: [
            { apiVersion: 'bench.kanri.dev/v1', kind: 'Item', name, uid, controller: true, blockOwnerDeletion: true },
          ],
        },
        data: { value },
      },
      'application/apply-patch+yaml', // JSON is YAML
    );
    writes++;
    if (item.status?.observedValue !== value) {
      await send(
        `${base}/${name}/status`,
        'PATCH',
        { status: { observedValue: value } },
        'application/merge-patch+json',
      );
      writes++;
    }
  }
};
await Promise.all(Array.from({ length: Math.min(workers, items.length) }, worker));
await dispatcher.close();
const cpu = process.cpuUsage();
console.log(
  JSON.stringify({
    items: items.length,
    writes,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    maxRssBytes: peakRssBytes(),
  }),
);
