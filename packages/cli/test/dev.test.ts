import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureBinaries, isProcessAlive } from '@kanri/testenv';
import { readDevState } from '../src/dev-state.js';
import { runKanri } from './run-kanri.js';

const execFileAsync = promisify(execFile);

const kanri = (args: string[], env: NodeJS.ProcessEnv) => runKanri(args, { env, timeoutMs: 240_000 });

describe('kanri dev up / status / down', () => {
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'kanri-dev-state-'));
    env = { KANRI_STATE_DIR: stateDir };
  });
  after(async () => {
    // If an assertion failed midway, do not leave the supervisor running.
    const state = await readDevState(stateDir);
    if (state && isProcessAlive(state.pid)) process.kill(state.pid, 'SIGTERM');
    await rm(stateDir, { recursive: true, force: true });
  });

  it('starts a control plane in the background that kubectl can use, and stops it', async () => {
    const up = await kanri(['dev', 'up'], env);
    assert.equal(up.code, 0, up.stderr);
    const exportLine = up.stdout.split('\n').find((l) => l.startsWith('export KUBECONFIG='));
    assert.ok(exportLine, `up prints an export line:\n${up.stdout}`);
    const kubeconfig = exportLine.slice('export KUBECONFIG='.length);

    const { kubectl } = await ensureBinaries({ binaries: ['kubectl'] });
    assert.ok(kubectl);
    const readyz = await execFileAsync(kubectl, ['get', '--raw', '/readyz'], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    assert.equal(readyz.stdout.trim(), 'ok');

    const state = await readDevState(stateDir);
    assert.ok(state && isProcessAlive(state.pid), 'the supervisor runs after `up` returned');
    const again = await kanri(['dev', 'up'], env);
    assert.match(again.stdout, /already running/);

    const status = await kanri(['dev', 'status'], env);
    assert.equal(status.code, 0);
    assert.match(status.stdout, new RegExp(state.server.replaceAll('.', '\\.')));

    const down = await kanri(['dev', 'down'], env);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, /Stopped the local control plane/);
    assert.equal(isProcessAlive(state.pid), false);
    await assert.rejects(
      execFileAsync(kubectl, ['get', '--raw', '/readyz', '--request-timeout=2s'], {
        env: { ...process.env, KUBECONFIG: kubeconfig },
      }),
      'the API server is gone',
    );

    const after = await kanri(['dev', 'status'], env);
    assert.equal(after.code, 1);
    assert.match(after.stdout, /No local control plane is running/);
  });

  it('rejects a bad --nodes value, naming the flag', async () => {
    const result = await kanri(['dev', 'up', '--nodes', 'many'], env);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /--nodes must be a whole number from 0 to 100, got "many"/);
  });
});

describe('kanri dev demo --once (npm start)', () => {
  it('deploys a workload onto simulated nodes and shows it Ready', async () => {
    const result = await kanri(['dev', 'demo', '--once'], {});
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /deployment\.apps\/hello created/);
    assert.match(result.stdout, /3\/3 Pods Ready/);
    assert.equal(result.stdout.match(/\bhello-\S+\s+1\/1\s+Running/g)?.length, 3, result.stdout);
    assert.match(result.stdout, /It works \(--once\): stopping the control plane/);
  });
});
