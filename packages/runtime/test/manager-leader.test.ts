import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, startControlPlane, withParentDeathSignal } from '@kanri/testenv';
import { installWidgetCrd, type Widget, waitFor } from './helpers.js';
import { LeaseHistory } from './lease-history.js';

const fixture = fileURLToPath(new URL('./fixtures/run-manager.js', import.meta.url));
const LEASE_MS = 4_000;

interface Candidate {
  readonly identity: string;
  readonly child: ChildProcess;
  /** Resolves with the epoch ms at which the child saw itself lead. */
  readonly leading: Promise<number>;
  readonly exited: Promise<{ code: number | null; clean: boolean }>;
  /** Leaders the child's manager has logged observing (its JSON log line "leader observed"). */
  readonly observed: string[];
}

describe('two manager processes with leader election', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  const children: ChildProcess[] = [];
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await installWidgetCrd(client);
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await client?.close();
    await cp?.stop();
  });

  const launch = (identity: string): Candidate => {
    const child = spawn(...withParentDeathSignal(process.execPath, [fixture, cp.kubeconfigPath, identity]), {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let clean = false;
    const observed: string[] = [];
    const leading = new Promise<number>((resolve) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line.startsWith('leading ')) resolve(Number(line.slice('leading '.length)));
        if (line === 'exited cleanly') clean = true;
        if (line.startsWith('{')) {
          const entry = JSON.parse(line) as { msg?: string; leader?: string };
          if (entry.msg === 'leader observed' && entry.leader) observed.push(entry.leader);
        }
      });
    });
    const exited = new Promise<{ code: number | null; clean: boolean }>((resolve) =>
      child.once('exit', (code) => resolve({ code, clean })),
    );
    return { identity, child, leading, exited, observed };
  };
  const first = <T>(promises: Promise<T>[]) => Promise.race(promises.map((p, i) => p.then(() => i)));
  /** `promise`, or a rejection naming `what` after `ms` (a liveness bound, not a speed claim). */
  const within = <T>(what: string, promise: Promise<T>, ms = 60_000) =>
    Promise.race([
      promise,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref(),
      ),
    ]);

  it('lets only the leader reconcile, hands over through the release on SIGTERM and after the lease on kill -9', async () => {
    const a = launch('manager-a');
    const b = launch('manager-b');
    const leaderIndex = await within('a leader', first([a.leading, b.leading]));
    const [leader, standby] = leaderIndex === 0 ? [a, b] : [b, a];
    const history = await LeaseHistory.start(client, 'default', 'widgets-leader');

    const widgets = client.resource<Widget>('test.kanri.dev/v1', 'Widget');
    await widgets.create({ metadata: { name: 'led', namespace: 'default' }, spec: { color: 'one' } });
    const reconciled = await waitFor(
      'the leader to reconcile',
      async () => (await widgets.get('led', { namespace: 'default' })).status?.reconciledBy,
    );
    assert.equal(reconciled, leader.identity, 'only the leader reconciles');
    await widgets.patch('led', { spec: { color: 'two' } }, { namespace: 'default' });
    await waitFor(
      'the change',
      async () => (await widgets.get('led', { namespace: 'default' })).status?.color === 'two',
    );
    assert.equal((await widgets.get('led', { namespace: 'default' })).status?.reconciledBy, leader.identity);

    leader.child.kill('SIGTERM');
    await within('the standby to lead', standby.leading);
    const exit = await within('the old leader to exit', leader.exited);
    assert.equal(exit.code, 0, 'the old leader exits 0 after releasing the Lease');
    assert.ok(exit.clean, 'and after a graceful shutdown');
    // The standby took the Lease after the old leader released it, not after it ran out.
    await history.reach(standby.identity);
    assert.deepEqual(history.holders(), [leader.identity, '', standby.identity]);

    const c = launch('manager-c');
    // c must be following the standby's renewals when it dies, or its first sight of the Lease
    // would come after the kill and hide a take-over that does not wait out the lease.
    await waitFor('manager-c to observe the standby leading', () => c.observed.includes(standby.identity));
    if (standby.child.pid) process.kill(standby.child.pid, 'SIGKILL');
    await within('manager-c to lead', c.leading);
    await history.reach('manager-c');
    assert.deepEqual(history.holders(), [leader.identity, '', standby.identity, 'manager-c']);
    // kill -9 releases nothing: c took the Lease only once a whole lease had passed since the
    // standby's last renewal (acquireTime is stamped before c's write is even sent).
    const last = history.lastHeldBy(standby.identity);
    const taken = history.lastHeldBy('manager-c')?.acquiredAtEpochMs;
    assert.ok(last?.renewedAtEpochMs !== undefined && taken !== undefined);
    assert.equal(last.leaseDurationMs, LEASE_MS);
    assert.ok(
      taken >= last.renewedAtEpochMs + LEASE_MS,
      `c took the Lease ${taken - last.renewedAtEpochMs} ms after the last renewal`,
    );
    await widgets.patch('led', { spec: { color: 'three' } }, { namespace: 'default' });
    await waitFor('the new leader to reconcile', async () => {
      const w = await widgets.get('led', { namespace: 'default' });
      return w.status?.color === 'three' && w.status.reconciledBy === 'manager-c';
    });
    c.child.kill('SIGTERM');
    assert.equal((await within('manager-c to exit', c.exited)).code, 0);
    await history.stop();
  });
});
