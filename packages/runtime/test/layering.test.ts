/**
 * Inside the runtime, the manager sits on top: it wires controllers, webhooks, informers and the
 * health server together, so nothing below it may import from manager/ (only the package index,
 * which re-exports it). A back-arrow would let a building block depend on the whole assembly.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/** The top folder under src/ of a path, or '' for a file directly in src/. */
const folderOf = (path: string) => {
  const parts = relative(src, path).split('/');
  return parts.length > 1 ? (parts[0] ?? '') : '';
};

it('imports nothing from manager/ outside manager/ and the package index', async () => {
  const violations: string[] = [];
  let files = 0;
  for await (const file of sourceFiles(src)) {
    files++;
    const from = folderOf(file);
    if (from === 'manager' || from === '') continue;
    // TSDoc examples may mention anything; only real imports count.
    const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
      const target = resolve(dirname(file), match[1] ?? '');
      if (folderOf(target) === 'manager') violations.push(`${relative(src, file)} imports ${match[1]}`);
    }
  }
  assert.ok(files > 20, `scanned ${files} files under ${src}`);
  assert.deepEqual(violations, []);
});
