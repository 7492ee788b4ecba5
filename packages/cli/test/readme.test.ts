/**
 * The README's commands run as typed: every shell command in README.md's code blocks, and every
 * inline `npx kanri …`, is run here through `npx` as a reader would, unless a `readme-test`
 * marker right before its block says why not (see readme-commands.ts). So when the README drifts
 * from the code, or `npx kanri` stops resolving on a fresh install, this fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureBinaries, isProcessAlive } from '@kanri/testenv';
import { readDevState } from '../src/dev-state.js';
import { type CommandBlock, readmeCommands, type Step, stepsOf } from './readme-commands.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const demoMain = join(root, 'packages', 'postgres-demo', 'dist', 'src', 'main.js');

const BLOCK_TIMEOUT_MS = 20 * 60_000;

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    // A block may wait for a backup, a point-in-time clone and an in-place restore of the demo's
    // cluster: ~3 min alone, but CI runs the smoke sets beside the whole suite on 2 cores, where the
    // demo's first backup alone once took over 7 min (2026-12-07, Node 24).
    execFile('bash', ['-c', script], { cwd, env, timeout: BLOCK_TIMEOUT_MS }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      const killed = error?.killed ? `\n(killed: the block ran longer than ${BLOCK_TIMEOUT_MS / 60_000} min)` : '';
      resolve({ code, output: `${stdout}${stderr}${killed}` });
    });
  });
}

const block = (commands: string[], markers: CommandBlock['markers'] = []): CommandBlock => ({
  line: 1,
  lang: 'sh',
  commands,
  markers,
});

describe('README commands: finding them', () => {
  it('takes sh lines, $ lines of untagged blocks and inline npx kanri, and applies the markers', () => {
    const found = readmeCommands(
      [
        'Run `npx kanri dev up` first.',
        '<!-- readme-test: skip `npm run dev`: runs until Ctrl-C -->',
        '<!-- readme-test: replace `export X=…` with `export X=1`: a placeholder -->',
        '```sh',
        '# a comment line',
        'npx kanri init a    # trailing comment',
        'export X=…',
        'npm run dev',
        '```',
        '```',
        '$ npm start',
        'output line',
        '```',
        '```ts',
        'const notShell = 1;',
        '```',
      ].join('\n'),
    );
    assert.deepEqual(found.inline, [{ command: 'npx kanri dev up', line: 1 }]);
    assert.deepEqual(
      found.blocks.map((b) => b.commands),
      [['npx kanri init a', 'export X=…', 'npm run dev'], ['npm start']],
    );
    const [first] = found.blocks;
    assert.ok(first);
    assert.deepEqual(stepsOf(first), [
      { run: 'npx kanri init a', documented: 'npx kanri init a' },
      { run: 'export X=1', documented: 'export X=…' },
      { skipped: 'npm run dev', reason: 'runs until Ctrl-C' },
    ]);
  });

  it('keeps the indentation of a heredoc manifest, which YAML needs', () => {
    const found = readmeCommands(
      ['```sh', 'kubectl apply -f - <<EOF', 'metadata:', '  name: x    # a comment', 'EOF', '```'].join('\n'),
    );
    assert.deepEqual(found.blocks[0]?.commands, ['kubectl apply -f - <<EOF', 'metadata:', '  name: x', 'EOF']);
  });

  it('refuses a marker without a reason, one far from its block, and one naming a command not there', () => {
    assert.throws(() => readmeCommands('<!-- readme-test: skip: -->\n```sh\nls\n```'), /must say why/);
    assert.throws(() => readmeCommands('<!-- readme-test: skip: x -->\ntext\n```sh\nls\n```'), /right before/);
    const stale = block(['ls'], [{ kind: 'skip', command: 'npm test', reason: 'x', line: 3 }]);
    assert.throws(() => stepsOf(stale), /line 3: the marker names `npm test`, which the block does not hold/);
  });
});

describe('README commands: the markers in README.md', () => {
  it('name only test files that exist', async () => {
    const { blocks } = readmeCommands(await readFile(join(root, 'README.md'), 'utf8'));
    const named = blocks.flatMap((b) =>
      b.markers.flatMap((m) => m.reason.match(/\b(?:packages|examples)\/\S+\.ts\b/g) ?? []),
    );
    assert.ok(named.length > 0);
    for (const path of named)
      assert.ok(existsSync(join(root, path)), `a readme-test marker names ${path}, which is gone`);
  });
});

describe('README commands: running them', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-readme-'));
    // npx finds `kanri` in the node_modules of the directory it runs in, as in a checkout; the
    // commands run in a scratch directory so what they create (an operator project) lands there.
    await mkdir(join(dir, 'work'));
    await symlink(join(root, 'node_modules'), join(dir, 'work', 'node_modules'), 'dir');
    const { kubectl } = await ensureBinaries({ binaries: ['kubectl'] });
    assert.ok(kubectl);
    env = {
      // A fresh shell: not the npm configuration npm hands to scripts, nor this test runner's context.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_TEST_CONTEXT$)/i.test(k))),
      KANRI_STATE_DIR: join(dir, 'state'),
      // Where `npm start`'s script is, for the markers that run it from the scratch directory.
      KANRI_CHECKOUT: root,
      // A reader has a kubectl on PATH; this one matches the control plane.
      PATH: `${dirname(kubectl)}${delimiter}${process.env.PATH ?? ''}`,
      // Process nodes, as `npm run test:node` has them: the demo's commands (backups, point-in-time
      // recovery, psql) read and act the same on either kind of node, and
      // packages/postgres-demo/test/demo.test.ts checks that `npm start` chooses real nodes where it
      // can. On real nodes this file cost 33 more CPU-seconds (113 against 80; 184 s against 166 s,
      // alone; 2026-12-04) in a suite that is short of CPU.
      KANRI_DEMO_NODES: process.env.KANRI_DEMO_NODES ?? 'process',
      // If `kanri` ever failed to resolve locally, npx must fail rather than fetch a package.
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
    };
  });
  after(async () => {
    // A failed `dev down` (or a command that failed before it) must not leave the control plane up.
    const state = await readDevState(join(dir, 'state'));
    if (state && isProcessAlive(state.pid)) process.kill(state.pid, 'SIGTERM');
    // Likewise the demo (`npm start`) of the backup commands: its own `down`, which waits for it to stop.
    await new Promise((resolve) =>
      execFile(process.execPath, [demoMain, 'down'], { env, timeout: 180_000 }, () => resolve(undefined)),
    );
    // The link first, on its own: removing the scratch directory must never reach into the checkout.
    await unlink(join(dir, 'work', 'node_modules')).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  it('runs every command in README.md that no marker excuses', async (t) => {
    const { blocks, inline } = readmeCommands(await readFile(join(root, 'README.md'), 'utf8'));
    const ran = new Set<string>();
    const skipped: string[] = [];
    const runScript = async (where: string, steps: readonly Step[]) => {
      const commands = steps.flatMap((s) => ('run' in s ? [s.run] : []));
      if (commands.length === 0) return;
      const { code, output } = await bash(['set -euxo pipefail', ...commands].join('\n'), join(dir, 'work'), env);
      assert.equal(code, 0, `README.md ${where}: a command failed (the last "+" line)\n${output.slice(-4_000)}`);
      for (const step of steps) if ('run' in step) ran.add(step.documented);
    };
    for (const b of blocks) {
      const steps = stepsOf(b);
      for (const step of steps) if ('skipped' in step) skipped.push(`line ${b.line}: ${step.skipped} (${step.reason})`);
      await runScript(`line ${b.line}`, steps);
    }
    // An inline command that a block already ran is covered; any other runs on its own.
    for (const { command, line } of inline) {
      if (!ran.has(command)) await runScript(`line ${line}`, [{ run: command, documented: command }]);
    }
    assert.ok(ran.has('npx kanri dev up --nodes 2'), 'the commands include `kanri dev up`');
    t.diagnostic(`ran ${ran.size} distinct commands; skipped, with the README's reasons:\n${skipped.join('\n')}`);
  });
});
