import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliVersion } from '../src/commands/init.js';
import {
  KANRI_PACKAGES,
  kindFromName,
  planProject,
  renderPath,
  renderText,
  resolveNames,
  useLocalTarballs,
} from '../src/project-template.js';
import { runKanri } from './run-kanri.js';

const kanri = (args: string[], cwd: string) => runKanri(args, { cwd });

describe('project names', () => {
  it('derives the kind from the name and defaults the group', () => {
    assert.equal(kindFromName('website-operator'), 'Website');
    assert.equal(kindFromName('my-app'), 'MyApp');
    assert.equal(kindFromName('operator'), 'Operator');
    assert.deepEqual(resolveNames({ name: 'demo' }), { name: 'demo', group: 'example.com', kind: 'Demo' });
  });

  it('refuses names, kinds and groups Kubernetes would, saying what would do', () => {
    assert.throws(
      () => resolveNames({ name: 'My_Operator' }),
      /"My_Operator" is not a valid operator name.*"my-operator"/,
    );
    assert.throws(() => resolveNames({ name: '1st' }), /DNS-1123 label/);
    assert.throws(() => resolveNames({ name: 'a'.repeat(64) }), /at most 63/);
    assert.throws(() => resolveNames({ name: 'demo', kind: 'website' }), /--kind "website" is not a valid kind/);
    assert.throws(() => resolveNames({ name: 'demo', group: 'local' }), /at least one dot/);
    assert.throws(() => resolveNames({ name: 'demo', group: 'apps.k8s.io' }), /reserved for Kubernetes/);
  });
});

describe('template rendering', () => {
  const names = { name: 'shop-operator', group: 'shop.example.com', kind: 'ShopItem' };

  it('replaces every token and renames the files npm would not pack', () => {
    assert.equal(
      renderText('__name__ __group__ __Kind__ __kind__ __kindCamel__ __plural__ __kanriVersion__', names, '9.9.9'),
      'shop-operator shop.example.com ShopItem shopitem shopItem shopitems 9.9.9',
    );
    assert.equal(renderPath('src/__kind__.ts', names), 'src/shopitem.ts');
    assert.equal(renderPath('_gitignore', names), '.gitignore');
    assert.equal(renderPath('sub/_dockerignore', names), 'sub/.dockerignore');
  });

  it('points every @kanri package, direct or transitive, at a local tarball', () => {
    const pkg = JSON.stringify({
      dependencies: { '@kanri/api': '1.2.3', zod: '^4.1.0' },
      devDependencies: { '@kanri/testenv': '1.2.3', '@kanri/cli': '1.2.3' },
    });
    const out = JSON.parse(useLocalTarballs(pkg, '/packs', '1.2.3'));
    assert.deepEqual(out.dependencies, {
      '@kanri/api': 'file:/packs/kanri-api-1.2.3.tgz',
      '@kanri/cache': 'file:/packs/kanri-cache-1.2.3.tgz',
      '@kanri/client': 'file:/packs/kanri-client-1.2.3.tgz',
      '@kanri/runtime': 'file:/packs/kanri-runtime-1.2.3.tgz',
      '@kanri/timing': 'file:/packs/kanri-timing-1.2.3.tgz',
      zod: '^4.1.0',
    });
    assert.deepEqual(out.devDependencies, {
      '@kanri/cli': 'file:/packs/kanri-cli-1.2.3.tgz',
      '@kanri/testenv': 'file:/packs/kanri-testenv-1.2.3.tgz',
    });
  });

  it('knows every @kanri package those depend on, so none is looked up in the registry', async () => {
    const workspace = new URL('../../../../', import.meta.url);
    const missing: string[] = [];
    for (const short of KANRI_PACKAGES) {
      const manifest = JSON.parse(await readFile(new URL(`packages/${short}/package.json`, workspace), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      for (const name of Object.keys(manifest.dependencies ?? {})) {
        const dependency = name.replace(/^@kanri\//, '');
        if (name.startsWith('@kanri/') && !(KANRI_PACKAGES as readonly string[]).includes(dependency))
          missing.push(`@kanri/${short} needs ${name}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('leaves registry versions alone without --kanri-packages', () => {
    const [file] = planProject([{ path: 'package.json', content: '{"x":"__kanriVersion__"}' }], names, {
      kanriVersion: '0.4.0',
    });
    assert.deepEqual(file, { path: 'package.json', content: '{"x":"0.4.0"}' });
  });
});

describe('kanri init', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-init-unit-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a complete project whose @kanri versions are the CLI’s own', async () => {
    const result = await kanri(['init', 'shop', '--kind', 'Item', '--group', 'shop.example.com'], dir);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Created the shop operator \(kind Item, group shop\.example\.com\) in shop/);
    const project = join(dir, 'shop');
    const files = (await readdir(project, { recursive: true })).sort();
    for (const expected of [
      '.dockerignore',
      '.gitignore',
      'Dockerfile',
      'README.md',
      'package.json',
      'tsconfig.json',
      join('src', 'controller.ts'),
      join('src', 'item.ts'),
      join('src', 'main.ts'),
      join('src', 'operator.ts'),
      join('test', 'operator.test.ts'),
    ]) {
      assert.ok(files.includes(expected), `${expected} in ${files.join(', ')}`);
    }
    const pkg = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    const version = await cliVersion();
    assert.equal(pkg.name, 'shop');
    assert.equal(pkg.type, 'module');
    assert.deepEqual(pkg.kanri, { operator: 'dist/src/operator.js' });
    for (const dep of ['@kanri/api', '@kanri/runtime', '@kanri/client']) assert.equal(pkg.dependencies[dep], version);
    assert.equal(pkg.devDependencies['@kanri/testenv'], version);
    const resource = await readFile(join(project, 'src', 'item.ts'), 'utf8');
    assert.match(
      resource,
      /export const Item = defineResource\(\{\n {2}group: 'shop\.example\.com',\n {2}kind: 'Item'/,
    );
    assert.match(await readFile(join(project, 'src', 'operator.ts'), 'utf8'), /controllers: \[itemController\]/);
    const all = await Promise.all(
      files.map((f) => readFile(join(project, f), 'utf8').catch(() => '')), // directories read as ''
    );
    assert.deepEqual(
      all.flatMap((text, i) => (/__[A-Za-z]+__/.test(text) ? [files[i]] : [])),
      [],
      'no token is left',
    );
    const dockerfile = await readFile(join(project, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /AS build/);
    assert.match(dockerfile, /^USER 1000:1000$/m);
  });

  it('refuses a non-empty directory and writes nothing into it', async () => {
    const target = join(dir, 'busy');
    await mkdir(target);
    await writeFile(join(target, 'keep.txt'), 'mine');
    const result = await kanri(['init', 'busy'], dir);
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim(), `kanri: ${target} is not empty; choose another --dir or empty it first`);
    assert.deepEqual(await readdir(target), ['keep.txt']);
  });

  it('reports an invalid name in one line and creates nothing', async () => {
    const result = await kanri(['init', 'Bad_Name'], dir);
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /^kanri: "Bad_Name" is not a valid operator name/);
    assert.ok(!(await readdir(dir)).includes('Bad_Name'));
  });

  it('names the missing tarballs of --kanri-packages', async () => {
    const result = await kanri(['init', 'offline', '--kanri-packages', dir], dir);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /missing kanri-api-\d+\.\d+\.\d+\.tgz, kanri-cache-/);
    assert.match(result.stderr, /npm pack --workspaces --pack-destination/);
  });

  it('has --help for every command', async () => {
    for (const args of [
      [],
      ['init'],
      ['dev'],
      ['dev', 'up'],
      ['dev', 'down'],
      ['dev', 'status'],
      ['dev', 'run'],
      ['dev', 'demo'],
      ['testenv'],
      ['testenv', 'install'],
    ]) {
      const result = await kanri([...args, '--help'], dir);
      assert.equal(result.code, 0, `${args.join(' ')} --help: ${result.stderr}`);
      assert.match(result.stdout, new RegExp(`^Usage: kanri${args.map((a) => ` ${a}`).join('')}`), args.join(' '));
    }
  });
});
