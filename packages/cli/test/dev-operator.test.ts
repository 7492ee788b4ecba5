import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defineOperator } from '@kanri/api';
import { KubeClient, type KubeObject } from '@kanri/client';
import { isProcessAlive, waitFor, withParentDeathSignal } from '@kanri/testenv';
import { readDevState } from '../src/dev-state.js';
import { isOperatorDefinition, pickOperator, resolveOperatorModule } from '../src/operator-module.js';
import { formatLogLine } from '../src/pretty-log.js';
import { type KanriResult, kanriMain, runKanri } from './run-kanri.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const websiteOperator = join(root, 'examples', 'dist', '03-website-operator', 'definition.js');

/** The CLI as a child process, with the dev commands' longer time budget. */
function kanri(args: string[], env: NodeJS.ProcessEnv, cwd = root): Promise<KanriResult> {
  return runKanri(args, { cwd, env, timeoutMs: 240_000 });
}

describe('the operator module', () => {
  const stub = defineOperator({
    name: 'stub',
    controllers: [{ name: 'x' } as never],
  });

  it('takes the default export, else `operator`, duck-typed', () => {
    assert.equal(isOperatorDefinition(stub), true);
    assert.equal(isOperatorDefinition({ name: 'x', controllers: [] }), false);
    assert.equal(pickOperator({ default: stub }, 'a.js'), stub);
    assert.equal(pickOperator({ default: () => {}, operator: stub }, 'a.js'), stub);
  });

  it('says what the module exports instead', () => {
    assert.throws(
      () => pickOperator({ default: 42 }, 'dist/src/operator.js'),
      (e: unknown) =>
        e instanceof Error &&
        e.message.startsWith(
          'dist/src/operator.js: no default export or `operator` export is an OperatorDefinition (default export: a number, `operator`: missing)',
        ),
    );
  });

  it('finds the module through package.json "kanri.operator", naming package.json when it cannot', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-opmod-'));
    try {
      await writeFile(join(dir, 'package.json'), JSON.stringify({ kanri: { operator: 'dist/src/operator.js' } }));
      assert.equal(await resolveOperatorModule(undefined, dir), join(dir, 'dist', 'src', 'operator.js'));
      assert.equal(await resolveOperatorModule('other.js', dir), join(dir, 'other.js'));
      await writeFile(join(dir, 'package.json'), JSON.stringify({ kanri: { operator: 7 } }));
      await assert.rejects(
        resolveOperatorModule(undefined, dir),
        /^Error: package\.json: "kanri\.operator" must be a path/,
      );
      await writeFile(join(dir, 'package.json'), '{');
      await assert.rejects(resolveOperatorModule(undefined, dir), /^Error: package\.json: not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('pretty logs', () => {
  it('turns a pino line into one readable line, with the error message and the reconcile key', () => {
    const line = JSON.stringify({
      level: 50,
      time: Date.UTC(2025, 0, 1, 12, 0, 0, 42),
      pid: 1,
      hostname: 'h',
      name: 'website-operator',
      controller: 'website',
      key: 'default/hello',
      retries: 3,
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' },
      msg: 'reconcile failed; requeued with backoff',
    });
    assert.match(
      formatLogLine(line),
      /^\d\d:\d\d:\d\d\.042 ERROR website default\/hello reconcile failed; requeued with backoff retries=3 err="boom"$/,
    );
    assert.ok(formatLogLine(line, true).includes('\x1b[31mERROR\x1b[0m'), 'the level in red');
    assert.equal(formatLogLine('not json\n'), 'not json');
  });
});

describe('kanri dev run', () => {
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'kanri-dev-run-'));
    env = { KANRI_STATE_DIR: stateDir };
  });
  after(async () => {
    const state = await readDevState(stateDir);
    if (state && isProcessAlive(state.pid)) await kanri(['dev', 'down'], env);
    await rm(stateDir, { recursive: true, force: true });
  });

  it('names the file at fault before starting anything', async () => {
    const missing = await kanri(['dev', 'run', '--operator', 'dist/nowhere.js'], env);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'kanri: dist/nowhere.js: not found (build the project first: npm run build)\n');

    const bad = join(stateDir, 'bad.mjs');
    await writeFile(bad, 'export default { name: "bad" };\n');
    const notOperator = await kanri(['dev', 'run', '--operator', bad], env, stateDir);
    assert.equal(notOperator.code, 1);
    assert.match(
      notOperator.stderr,
      /^kanri: bad\.mjs: no default export or `operator` export is an OperatorDefinition \(default export: an object/,
    );

    await writeFile(join(stateDir, 'package.json'), '{"name":"x"}');
    const noField = await kanri(['dev', 'run'], env, stateDir);
    assert.equal(noField.code, 1);
    assert.match(noField.stderr, /^kanri: package\.json: no "kanri": \{ "operator": … \} field/);
    assert.equal(await readDevState(stateDir), undefined, 'no control plane was started');
  });

  it('installs the CRDs, runs the Website operator until SIGINT, and exits 0', async () => {
    const child = spawn(
      ...withParentDeathSignal(process.execPath, [kanriMain, 'dev', 'run', '--operator', websiteOperator]),
      {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = once(child, 'exit');
    let client: KubeClient | undefined;
    try {
      await waitFor('kanri dev run to start the operator', () => stdout.includes('Ctrl-C stops the operator'), 180_000);
      assert.match(stdout, /starting one/, 'no control plane was running, so one was started');
      assert.match(stdout, /CRDs installed: websites\.example\.kanri\.dev/);

      const state = await readDevState(stateDir);
      assert.ok(state);
      client = await KubeClient.load({ kubeconfig: state.kubeconfigPath });
      const site = await client.resource<KubeObject>('example.kanri.dev/v1', 'Website').create({
        metadata: { name: 'hello', namespace: 'default' },
        spec: { html: '<h1>Hello</h1>' },
      } as KubeObject);
      const c = client;
      const childOf = (apiVersion: string, kind: string, name: string) =>
        waitFor(
          `${kind} ${name}`,
          () => c.resource<KubeObject>(apiVersion, kind).get(name, { namespace: 'default' }),
          60_000,
        );
      const children = [
        await childOf('v1', 'ConfigMap', 'hello-html'),
        await childOf('apps/v1', 'Deployment', 'hello'),
        await childOf('v1', 'Service', 'hello'),
      ];
      for (const object of children) assert.equal(object.metadata?.ownerReferences?.[0]?.uid, site.metadata?.uid);
      assert.match(stdout, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}website controller started workers=2$/m, stdout);
      assert.doesNotMatch(stdout, /^\{/m, 'no raw JSON log lines');
    } finally {
      await client?.close();
      child.kill('SIGINT');
    }
    const [code, signal] = await exited;
    assert.equal(signal, null, stderr);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /SIGINT: stopping website-operator gracefully/);
    assert.match(stdout, /INFO {2}stopped\n/);
    assert.match(stdout, /Stopped website-operator\. The control plane keeps running/);
    const status = await kanri(['dev', 'status'], env);
    assert.equal(status.code, 0, 'the control plane outlives the operator');
  });
});
