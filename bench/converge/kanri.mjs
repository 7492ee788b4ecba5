#!/usr/bin/env node
// Contender `kanri` of `npm run bench:converge`: the same Item operator as the controller-runtime
// one, on @kanri/runtime: For(Item).Owns(ConfigMap), BENCH_WORKERS workers, cache limited to
// BENCH_NAMESPACE, no leader election, no health server. Each reconcile applies the owned
// ConfigMap (server-side apply, skipped when the cached one already matches, as the Go contender
// does) and writes status only when it differs. Runs until SIGTERM. See bench/README.md.
import { KubeClient } from '@kanri/client';
import { controller, Manager } from '@kanri/runtime';
import { pino } from 'pino';

const namespace = process.env.BENCH_NAMESPACE;
const workers = Number(process.env.BENCH_WORKERS ?? 4);
if (!namespace || !Number.isInteger(workers) || workers < 1) {
  console.error('kanri: BENCH_NAMESPACE and BENCH_WORKERS (a positive integer) must be set');
  process.exit(1);
}

const items = controller('bench.kanri.dev/v1', 'Item')
  .owns('v1', 'ConfigMap')
  .options({ workers, resync: 0 })
  .reconcile(async (item, ctx) => {
    const name = item.metadata.name;
    const value = item.spec?.value ?? '';
    const current = ctx.get('v1', 'ConfigMap', name);
    if (current?.data?.value !== value) {
      await ctx.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { value } });
    }
    await ctx.setStatus({ observedValue: value });
  });

const client = await KubeClient.load();
const manager = new Manager(client, {
  name: 'bench-kanri',
  namespace,
  bindAddress: false,
  logger: pino({ level: 'warn' }),
});
await manager.add(items).start();
await client.close();
