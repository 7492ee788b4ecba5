#!/usr/bin/env node
// What each import costs in resident memory: every module is imported in a fresh Node process
// (after a full GC before and after), and the process's RSS growth is recorded; the median of
// BENCH_ROUNDS runs. "node" is the bare process, every other row is what the import adds to it.
// Last stdout line: one JSON object. Usage: node bench/memory/import-cost.mjs [name-substring]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, REPO_ROOT, runMetadata, toMiB } from './lib.mjs';

const pkg = (path) => new URL(`../../packages/${path}`, import.meta.url).href;
const agentDir = 'postgres/dist/src/agent/';

/** name → the specifiers one process imports together. */
export const IMPORTS = {
  node: [],
  undici: ['undici'],
  yaml: ['yaml'],
  zod: ['zod'],
  pino: ['pino'],
  'prom-client': ['prom-client'],
  pg: ['pg'],
  '@peculiar/x509': ['reflect-metadata', '@peculiar/x509'],
  commander: ['commander'],
  '@kanri/timing': ['@kanri/timing'],
  '@kanri/client': ['@kanri/client'],
  '@kanri/cache': ['@kanri/cache'],
  '@kanri/runtime': ['@kanri/runtime'],
  '@kanri/api': ['@kanri/api'],
  '@kanri/postgres': ['@kanri/postgres'],
  // What agent/main.js imports (main.js itself starts the agent on import).
  'agent entry': [
    '@kanri/client',
    ...[
      'config.js',
      'instance-agent.js',
      'peers/http-server.js',
      'log/logger.js',
      'reporting/metrics.js',
      'postgres/pg-bin.js',
      'log/redactor.js',
    ].map((f) => pkg(agentDir + f)),
  ],
  // What operator/main.js imports.
  'operator entry': [pkg('postgres/dist/src/operator/definition.js')],
};

/** The child: RSS before and after the imports, each after a full GC. */
const CHILD = `
import { readFileSync } from 'node:fs';
const rss = () => Number(/^VmRSS:\\s+(\\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
gc(); const before = rss(); const heapBefore = process.memoryUsage().heapUsed;
for (const s of JSON.parse(process.env.IMPORTS)) await import(s);
gc(); gc();
const m = process.memoryUsage();
console.log(JSON.stringify({ before, after: rss(), heap: m.heapUsed - heapBefore, external: m.external }));
`;

export function measureImport(specifiers) {
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], {
    cwd: REPO_ROOT,
    env: { ...process.env, IMPORTS: JSON.stringify(specifiers) },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

export function importCosts(filter = '', rounds = Number(process.env.BENCH_ROUNDS ?? 5)) {
  const rows = {};
  for (const [name, specifiers] of Object.entries(IMPORTS)) {
    if (filter && !name.includes(filter)) continue;
    const runs = Array.from({ length: rounds }, () => measureImport(specifiers));
    rows[name] = {
      rssMiB: toMiB(median(runs.map((r) => r.after))),
      addedMiB: toMiB(median(runs.map((r) => r.after - r.before))),
      heapMiB: toMiB(median(runs.map((r) => r.heap))),
    };
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = importCosts(process.argv[2] ?? '');
  console.error('import                 RSS after   added   heap added (MiB, medians)');
  for (const [name, r] of Object.entries(rows))
    console.error(
      `${name.padEnd(22)} ${String(r.rssMiB).padStart(9)} ${String(r.addedMiB).padStart(7)} ${String(r.heapMiB).padStart(7)}`,
    );
  console.log(JSON.stringify({ ...runMetadata(), imports: rows }));
}
