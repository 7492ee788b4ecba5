#!/usr/bin/env node
import { haResult, measureAgents, measurePatroni } from './agent-vs-patroni.mjs';
// `npm run bench:memory`: every memory measurement of bench/memory in turn (see its README) —
// import costs, idle operators, the PostgreSQL operator beside 10,000 unrelated Secrets, the
// instance agent against Patroni — and, last on stdout, one JSON object with every figure and the
// run's metadata. BENCH_MEMORY_ONLY=imports,idle,secrets,ha picks parts.
import { idleOperators } from './idle-operator.mjs';
import { importCosts } from './import-cost.mjs';
import { runMetadata } from './lib.mjs';
import { operatorWithSecrets } from './operator-secrets.mjs';

const only = new Set((process.env.BENCH_MEMORY_ONLY ?? 'imports,idle,secrets,ha').split(','));
const log = (line) => console.error(`[bench:memory] ${line}`);
const result = { ...runMetadata(), nodeOptions: process.env.NODE_OPTIONS ?? null };

if (only.has('imports')) {
  log('import costs (a fresh process per import)…');
  result.imports = importCosts();
  for (const [name, row] of Object.entries(result.imports)) log(`  ${name.padEnd(18)} ${row.rssMiB} MiB`);
}
if (only.has('idle')) {
  log('idle operators…');
  result.idleOperator = await idleOperators();
}
if (only.has('secrets')) {
  log('the PostgreSQL operator beside unrelated Secrets, its Secret cache filtered and not…');
  result.operatorSecrets = await operatorWithSecrets();
}
if (only.has('ha')) {
  log('instance agents, then Patroni members: every process of each member…');
  result.ha = haResult(await measureAgents(), await measurePatroni());
  const { kanri, patroni } = result.ha;
  log(
    `the Pod (summed PSS): Kanri ${kanri.pod.pssMiB} MiB, Patroni ${patroni.pod.pssMiB} MiB; the HA side: Kanri's keeper and agent ${kanri.ha.pssMiB} MiB PSS (${kanri.ha.privateMiB} private), Patroni ${patroni.ha.pssMiB} MiB (${patroni.ha.privateMiB})`,
  );
}
result.loadAverageAfter = runMetadata().loadAverage;
console.log(JSON.stringify(result));
