import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const packages = fileURLToPath(new URL('../../../../packages/', import.meta.url));

/** Which @kanri packages each layer's source may import: layers only import downward. */
const allowed: Record<string, string[]> = {
  // The shared primitives (Backoff, Wakeup) sit below everything, the test harness included.
  timing: [],
  testenv: ['timing'],
  client: ['timing'],
  cache: ['client', 'timing'],
  runtime: ['client', 'cache', 'timing'],
  api: ['runtime'],
  // The operator and its agent: no test harness, no CLI (the demo is a package of its own).
  postgres: ['runtime', 'api', 'client', 'cache', 'timing'],
  'postgres-demo': ['postgres', 'client', 'testenv'],
  cli: ['testenv', 'api', 'runtime', 'client', 'timing'],
};

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) yield path;
  }
}

it('keeps layers importing only downward (client ← cache ← runtime)', async () => {
  const violations: string[] = [];
  for (const [layer, may] of Object.entries(allowed)) {
    for await (const file of sourceFiles(join(packages, layer, 'src'))) {
      // Examples in TSDoc comments may import anything; only real imports count.
      const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      for (const match of text.matchAll(/from '@kanri\/([a-z-]+)'/g)) {
        if (!may.includes(match[1] ?? '')) violations.push(`${file.slice(packages.length)} imports @kanri/${match[1]}`);
      }
    }
  }
  assert.deepEqual(violations, []);
});
