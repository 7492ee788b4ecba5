/**
 * The operator and the instance agent are siblings: each imports only the contract (src/contract)
 * and the API (src/api), never the other, so the protocol between them has one home. Also keeps
 * the agent's files small enough to read.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

// Compiled to dist/test: the sources are two levels up.
const src = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/** The src/ folder (first path segment) each relative import of `file` lands in. */
function importedFolders(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const folders: string[] = [];
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g)) {
    const target = relative(src, resolve(dirname(file), match[1] as string));
    folders.push(target.split(sep)[0] as string);
  }
  return folders;
}

describe('layering of @kanri/postgres', () => {
  const forbidden: Record<string, readonly string[]> = {
    agent: ['operator', 'demo'],
    operator: ['agent', 'demo'],
    contract: ['agent', 'operator', 'demo'],
    api: ['agent', 'operator', 'demo'],
  };

  for (const [folder, banned] of Object.entries(forbidden)) {
    it(`${folder}/ imports none of ${banned.join(', ')}`, () => {
      const offences: string[] = [];
      for (const file of sources(join(src, folder))) {
        for (const target of importedFolders(file)) {
          if (banned.includes(target)) offences.push(`${relative(src, file)} imports ${target}/`);
        }
      }
      assert.deepEqual(offences, []);
    });
  }

  it('the check sees real imports (it would catch one)', () => {
    // The agent's entrypoint imports its own modules and the contract: the scanner must find them.
    const folders = importedFolders(join(src, 'agent', 'instance-agent.ts'));
    assert.ok(folders.includes('contract'), `found ${folders.join(', ')}`);
    assert.ok(folders.includes('agent'), `found ${folders.join(', ')}`);
  });

  it('the operator and agent image needs neither the test harness nor CLI libraries', () => {
    const manifest = JSON.parse(readFileSync(join(src, '..', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    assert.deepEqual(
      ['@kanri/testenv', 'commander'].filter((name) => name in manifest.dependencies),
      [],
    );
    const users = [...sources(src)].filter((file) =>
      /from '(@kanri\/testenv|commander)'/.test(readFileSync(file, 'utf8')),
    );
    assert.deepEqual(
      users.map((file) => relative(src, file)),
      [],
    );
  });

  it('no source file of the agent is over 400 lines', () => {
    const long = [...sources(join(src, 'agent'))]
      .map((file) => ({ file: relative(src, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > 400);
    assert.deepEqual(long, []);
  });
});
