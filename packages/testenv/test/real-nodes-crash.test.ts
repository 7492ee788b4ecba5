import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { realNodesUnsupportedReason } from '../src/real-node/real-nodes.js';
import { firstLine, waitFor } from './helpers.js';

const exec = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/real-node-and-hold.js', import.meta.url));

describe('real nodes after the process that ran them was killed', { skip: await realNodesUnsupportedReason() }, () => {
  it('the next start reclaims the slot: the orphaned containers die, the old bridge and routes go', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-rn-orphan-'));
    const child = spawn(process.execPath, [fixture, base], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pids: number[] = [];
    try {
      const line = await firstLine(child);
      const held = JSON.parse(line as string) as { slot: number; bridge: string; pids: number[] };
      pids = held.pids;
      child.kill('SIGKILL');
      // The daemons die with it (parent-death signal); the shims and containers daemonised and do not.
      await waitFor('the daemons to die', async () => {
        const { stdout } = await exec('ps', ['-o', 'args=', '-p', pids.join(',')]).catch(() => ({ stdout: '' }));
        return !/kubelet|containerd --config|kube-proxy/.test(stdout);
      });
      const orphans = pids.filter((pid) => isProcessAlive(pid));
      assert.ok(
        orphans.length >= 2,
        `the sandbox and the server outlive their node's daemons: ${orphans.length} alive`,
      );
      assert.match((await exec('ip', ['-o', 'link', 'show', held.bridge])).stdout, new RegExp(held.bridge));

      const next = await startControlPlane({ baseDir: base, realNodes: { count: 1 } });
      try {
        assert.deepEqual(
          pids.filter((pid) => isProcessAlive(pid)),
          [],
          'the orphans are killed when the next run claims a slot',
        );
      } finally {
        await next.stop();
      }
      const routes = (await exec('ip', ['route', 'show'])).stdout;
      assert.doesNotMatch(routes, new RegExp(`10\\.${128 + held.slot}\\.`), 'no route of the old slot remains');
      await assert.rejects(exec('ip', ['link', 'show', held.bridge]), 'the old bridge is gone');
    } finally {
      child.kill('SIGKILL');
      for (const pid of pids) if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
      await rm(base, { recursive: true, force: true });
    }
  });
});
