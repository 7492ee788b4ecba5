import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startKwok } from './kwok-nodes-ready.js';
import { type ManagedProcess, startProcess } from './managed-process.js';

/** Waits as waitNodesReady does: fails once the process has exited, succeeds once it has run a while. */
async function readyUnlessExited(child: ManagedProcess): Promise<void> {
  const outcome = await Promise.race([
    child.exited.then(() => 'exited' as const),
    new Promise<'up'>((resolve) => setTimeout(() => resolve('up'), 300)),
  ]);
  if (outcome === 'exited') throw new Error(`${child.name} exited before its nodes became Ready`);
}

describe('startKwok', () => {
  it('starts kwok again when it crashed at start, and fails after the last attempt', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-kwok-start-'));
    const started: ManagedProcess[] = [];
    t.after(async () => {
      for (const child of started) await child.stop(1_000);
      await rm(dir, { recursive: true, force: true });
    });
    const crash = "echo 'fatal error: concurrent map writes'; exit 2";
    const launch = (scripts: string[]) => () => {
      const script = scripts[started.length] ?? crash;
      const child = startProcess({ name: 'kwok', command: 'sh', args: ['-c', script], logFile: join(dir, 'kwok.log') });
      started.push(child);
      return child;
    };

    await startKwok(launch([crash, crash, 'exec sleep 30']), readyUnlessExited);
    assert.equal(started.length, 3, 'two crashes, then a kwok that stays up');
    assert.ok(started[2]?.running);
    await started[2]?.stop(1_000);

    started.length = 0;
    await assert.rejects(startKwok(launch([crash, crash, crash]), readyUnlessExited), /exited before its nodes/);
    assert.equal(started.length, 3, 'no fourth attempt');
  });

  it('does not start a second kwok while the first still runs', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-kwok-start-'));
    const child = startProcess({ name: 'kwok', command: 'sleep', args: ['30'], logFile: join(dir, 'kwok.log') });
    t.after(async () => {
      await child.stop(1_000);
      await rm(dir, { recursive: true, force: true });
    });
    let launches = 0;
    const launch = () => {
      launches += 1;
      return child;
    };
    await assert.rejects(
      startKwok(launch, async () => {
        throw new Error('nodes not Ready after 60000 ms');
      }),
      /not Ready/,
    );
    assert.equal(launches, 1);
  });
});
