import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { firstLine, waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/start-and-hold.js', import.meta.url));

describe('when the process that started a control plane is killed', () => {
  it('its components die with it, and the next start removes the orphaned data directory', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-orphan-'));
    const child = spawn(process.execPath, [fixture, base], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const line = await firstLine(child);
      const { pids, dataDir } = JSON.parse(line as string) as { pids: number[]; dataDir: string };
      assert.equal(pids.length, 2);
      for (const pid of pids) assert.ok(isProcessAlive(pid));

      child.kill('SIGKILL');
      await waitFor(
        'etcd and kube-apiserver to die with their parent',
        async () => pids.every((pid) => !isProcessAlive(pid)),
        15_000,
      );
      await access(dataDir); // SIGKILL gave the parent no chance to clean up...

      const next = await startControlPlane({ baseDir: base });
      await next.stop();
      await assert.rejects(access(dataDir), '...so the next start swept it');
    } finally {
      child.kill('SIGKILL');
      await rm(base, { recursive: true, force: true });
    }
  });
});
