import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from '../src/managed-process.js';
import { firstLine, waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/process-node-and-hold.js', import.meta.url));
const exitFixture = fileURLToPath(new URL('./fixtures/container-then-exit.js', import.meta.url));

describe('when the process that runs process nodes ends', () => {
  it("the Pods' processes die with it, including the children they started", async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-pn-orphan-'));
    const child = spawn(process.execPath, [fixture, base], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pids: number[] = [];
    try {
      const line = await firstLine(child);
      pids = (JSON.parse(line as string) as { pids: number[] }).pids;
      assert.equal(pids.length, 2);
      for (const pid of pids) assert.ok(isProcessAlive(pid), `PID ${pid} runs`);

      child.kill('SIGKILL');
      // The container's process has a parent-death signal; the child it started has none, and is
      // ended by the process-group watchdog once its pipe from the dead parent closes.
      await waitFor(
        'the container process and its child to die',
        () => pids.every((pid) => !isProcessAlive(pid)),
        15_000,
      );
    } finally {
      child.kill('SIGKILL');
      for (const pid of pids) if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
      await rm(base, { recursive: true, force: true });
    }
  });

  it('on a normal exit, the containers die with their descendants outside the process groups', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-pn-exit-'));
    const child = spawn(process.execPath, [exitFixture, join(base, 'log')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = once(child, 'exit');
    let pids: { container: number; escaped: number } | undefined;
    try {
      const line = await firstLine(child);
      pids = JSON.parse(line as string) as { container: number; escaped: number };
      await exited;
      // The 'exit' handler has sent SIGKILL before the process ended; the watchdog alone kills groups only.
      await waitFor('the container and its escaped grandchild to die', () =>
        [pids?.container ?? 0, pids?.escaped ?? 0].every((pid) => !isProcessAlive(pid)),
      );
    } finally {
      child.kill('SIGKILL');
      const escaped = pids?.escaped;
      if (escaped && isProcessAlive(escaped)) process.kill(escaped, 'SIGKILL');
      await rm(base, { recursive: true, force: true });
    }
  });
});
