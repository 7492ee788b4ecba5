/**
 * The source layout of every package (issue 38): no import circle between files, none between
 * folders, and no source folder of more than 20 files. Circles make a module impossible to read
 * or test without the one it serves, and a folder of 30 files says nothing about what it holds.
 *
 * The checks are functions over a map of path → source text, so each is shown failing on a
 * small synthetic tree here, then run on every package's `src/`. Test files (`*.test.ts`) are left out
 * of every check: a test imports what it tests, nothing imports a test, and a folder's tests do not
 * make it harder to find its code. The rules per package (what may import what) are in each
 * package's own layering test (packages/postgres/test/layering.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/** Source files by path (posix, relative to some root) → their text. */
type SourceTree = ReadonlyMap<string, string>;

/** At most this many source files directly in one folder. */
const FOLDER_LIMIT = 20;

const isSource = (path: string) => path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts');

/** Every non-test `.ts` file under `dirs` (paths relative to `root`), with its text. */
function readSources(root: string, dirs: readonly string[]): SourceTree {
  const tree = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (isSource(entry.name)) tree.set(relative(root, path).split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  };
  for (const dir of dirs) walk(join(root, dir));
  return tree;
}

// A static import or re-export at the start of a line (so not one quoted in a comment's example),
// over several lines if its braces do; and a dynamic `import()` of a relative path outside a
// comment: deferring a load does not make a circle any less of one.
const STATIC_IMPORT =
  /^(?:import|export)\b[^;'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|^import\s*['"](\.{1,2}\/[^'"]+)['"]|^(?!\s*(?:\*|\/\/)).*?\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm;

/** The files of `tree` each file imports (relative specifiers that land on a file of the tree). */
function importGraph(tree: SourceTree): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [file, text] of tree) {
    const targets = new Set<string>();
    for (const match of text.matchAll(STATIC_IMPORT)) {
      const spec = match[1] ?? match[2] ?? match[3] ?? '';
      const target = posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts');
      for (const candidate of [target, `${target}.ts`, `${target}/index.ts`]) {
        if (tree.has(candidate) && candidate !== file) {
          targets.add(candidate);
          break;
        }
      }
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The strongly connected parts of more than one node (Tarjan), each sorted, in a stable order. */
function circles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      part.push(member);
    } while (member !== node);
    if (part.length > 1) found.push(part.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

/** Files that import each other, directly or through others. */
function fileCircles(tree: SourceTree): string[][] {
  return circles(importGraph(tree));
}

/**
 * Folders that import each other. Folders are compared with their siblings, each standing for
 * everything inside it: under every folder, child folder A depends on child folder B when a file
 * anywhere in A imports a file anywhere in B, and a circle among the children is reported as
 * `parent: A, B`. A folder and the folders inside it count as one unit, so a parent's files and
 * its children's may use each other (`agent/instance-agent.ts` runs `agent/roles/`, whose roles
 * act through `agent/context.ts`).
 */
function folderCircles(tree: SourceTree): string[] {
  const byParent = new Map<string, Map<string, Set<string>>>();
  for (const [file, targets] of importGraph(tree)) {
    const from = posix.dirname(file).split('/');
    for (const target of targets) {
      const to = posix.dirname(target).split('/');
      let common = 0;
      while (common < from.length && common < to.length && from[common] === to[common]) common++;
      // Within one folder, or between a folder and one inside it: one unit.
      if (common === from.length || common === to.length) continue;
      const parent = from.slice(0, common).join('/');
      const a = from[common] ?? '';
      const b = to[common] ?? '';
      const children = byParent.get(parent) ?? new Map<string, Set<string>>();
      byParent.set(parent, children);
      const edges = children.get(a) ?? new Set<string>();
      children.set(a, edges);
      edges.add(b);
    }
  }
  const found: string[] = [];
  for (const [parent, children] of [...byParent].sort(([a], [b]) => a.localeCompare(b))) {
    for (const part of circles(children)) found.push(`${parent}: ${part.join(', ')}`);
  }
  return found;
}

/** Folders with more than `limit` source files directly in them, with their count. */
function crowdedFolders(tree: SourceTree, limit = FOLDER_LIMIT): string[] {
  const counts = new Map<string, number>();
  for (const file of tree.keys()) counts.set(posix.dirname(file), (counts.get(posix.dirname(file)) ?? 0) + 1);
  return [...counts]
    .filter(([, count]) => count > limit)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([folder, count]) => `${folder}: ${count} files`);
}

/** A synthetic tree: each file imports the given specifiers. */
const treeOf = (files: Record<string, readonly string[]>): SourceTree =>
  new Map(
    Object.entries(files).map(([path, specs]) => [
      path,
      specs.map((spec, i) => `import { x${i} } from '${spec}';`).join('\n'),
    ]),
  );

describe('the source layout checks (on synthetic trees)', () => {
  it('finds a circle between files, through a third, and not a chain', () => {
    const tree = treeOf({
      'src/a.ts': ['./b.js'],
      'src/b.ts': ['./sub/c.js'],
      'src/sub/c.ts': ['../a.js'],
      'src/d.ts': ['./a.js'],
    });
    assert.deepEqual(fileCircles(tree), [['src/a.ts', 'src/b.ts', 'src/sub/c.ts']]);
    assert.deepEqual(fileCircles(treeOf({ 'src/a.ts': ['./b.js'], 'src/b.ts': ['./c.js'], 'src/c.ts': [] })), []);
  });

  it('reads multi-line and type-only imports, re-exports and dynamic imports, and skips quoted examples', () => {
    const tree: SourceTree = new Map([
      ['src/a.ts', "import type {\n  B,\n  C,\n} from './b.js';"],
      ['src/b.ts', "export { a } from './a.js';"],
      [
        'src/c.ts',
        "/**\n * @example\n * import { a } from './a.js';\n * const e = await import('./e.js');\n */\nexport const c = 1;",
      ],
      ['src/d.ts', "import './index.js';"],
      ['src/index.ts', "export * from './d.js';"],
      ['src/e.ts', "export async function f() {\n  return (await import('./f.js')).g;\n}"],
      ['src/f.ts', "// import('./c.js') would not count here\nimport { f } from './e.js';\nexport const g = f;"],
    ]);
    assert.deepEqual(fileCircles(tree), [
      ['src/a.ts', 'src/b.ts'],
      ['src/d.ts', 'src/index.ts'],
      ['src/e.ts', 'src/f.ts'],
    ]);
  });

  it('finds a circle between sibling folders, each standing for everything inside it', () => {
    const tree = treeOf({
      'src/api/schema.ts': ['../contract/defaults.js'],
      'src/contract/defaults.ts': [],
      'src/contract/deep/types.ts': ['../../api/schema.js'],
    });
    assert.deepEqual(folderCircles(tree), ['src: api, contract']);
    assert.deepEqual(fileCircles(tree), []);
  });

  it('finds a folder circle through a third folder, and lets a parent and its child use each other', () => {
    const tree = treeOf({
      'src/agent/main.ts': ['./roles/boot.js'],
      'src/agent/context.ts': [],
      'src/agent/roles/boot.ts': ['../context.js', '../io/run.js'],
      'src/agent/io/run.ts': ['../plan/step.js'],
      'src/agent/plan/step.ts': ['../roles/boot.js'],
    });
    assert.deepEqual(folderCircles(tree), ['src/agent: io, plan, roles']);
    const parentAndChild = treeOf({
      'src/agent/main.ts': ['./roles/boot.js'],
      'src/agent/context.ts': [],
      'src/agent/roles/boot.ts': ['../context.js'],
    });
    assert.deepEqual(folderCircles(parentAndChild), []);
  });

  it('counts the source files directly in each folder, tests and subfolders aside', () => {
    const files: Record<string, string[]> = {};
    for (let i = 0; i < 21; i++) files[`src/big/f${i}.ts`] = [];
    for (let i = 0; i < 20; i++) files[`src/full/f${i}.ts`] = [];
    files['src/full/sub/g.ts'] = [];
    assert.deepEqual(crowdedFolders(treeOf(files)), ['src/big: 21 files']);
  });

  it('reads a tree from disk without its tests', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kanri-layout-'));
    try {
      mkdirSync(join(dir, 'pkg', 'src', 'sub'), { recursive: true });
      writeFileSync(join(dir, 'pkg', 'src', 'a.ts'), "import { b } from './sub/b.js';");
      writeFileSync(join(dir, 'pkg', 'src', 'sub', 'b.ts'), "import { a } from '../a.js';");
      writeFileSync(join(dir, 'pkg', 'src', 'a.test.ts'), "import { a } from './a.js';");
      const tree = readSources(dir, ['pkg/src']);
      assert.deepEqual([...tree.keys()].sort(), ['pkg/src/a.ts', 'pkg/src/sub/b.ts']);
      assert.deepEqual(fileCircles(tree), [['pkg/src/a.ts', 'pkg/src/sub/b.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the repository's source layout", () => {
  // Compiled to packages/testenv/dist/src: the repository is four levels up.
  const root = resolve(fileURLToPath(import.meta.url), '../../../../..');
  const packages = readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `packages/${entry.name}/src`)
    .filter((dir) => {
      try {
        return readdirSync(join(root, dir)).length > 0;
      } catch {
        return false;
      }
    });
  const tree = readSources(root, packages);

  it('sees every package and its imports (it would catch a circle)', () => {
    assert.ok(packages.includes('packages/postgres/src') && packages.includes('packages/runtime/src'), `${packages}`);
    const agent = importGraph(tree).get('packages/postgres/src/agent/instance-agent.ts');
    assert.ok(agent && agent.size > 10, `instance-agent.ts imports ${agent?.size} files`);
  });

  it('has no import circle between files', () => {
    assert.deepEqual(fileCircles(tree), []);
  });

  it('has no import circle between folders', () => {
    assert.deepEqual(folderCircles(tree), []);
  });

  it(`has no source folder of more than ${FOLDER_LIMIT} files`, () => {
    assert.deepEqual(crowdedFolders(tree), []);
  });
});
