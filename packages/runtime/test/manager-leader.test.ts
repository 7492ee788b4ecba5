import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, startControlPlane } from '@kanri/testenv';
import { installWidgetCrd, type Widget, waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/run-manager.js', import.meta.url));
const LEASE_MS = 4_000;

interface Candidate {
  readonly identity: string;
  readonly child: ChildProcess;
  readonly leading: Promise<number>;
  readonly exited: Promise<{ code: number | null; clean: boolean }>;
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
    const child = spawn(process.execPath, [fixture, cp.kubeconfigPath, identity], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let clean = false;
    const leading = new Promise<number>((resolve) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line === 'leading') resolve(performance.now());
        if (line === 'exited cleanly') clean = true;
      });
    });
    const exited = new Promise<{ code: number | null; clean: boolean }>((resolve) =>
      child.once('exit', (code) => resolve({ code, clean })),
    );
    return { identity, child, leading, exited };
  };
  const first = <T>(promises: Promise<T>[]) => Promise.race(promises.map((p, i) => p.then(() => i)));

  it('lets only the leader reconcile, hands over within 2 s on SIGTERM and within the lease after kill -9', async () => {
    const a = launch('manager-a');
    const b = launch('manager-b');
    const leaderIndex = await first([a.leading, b.leading]);
    const [leader, standby] = leaderIndex === 0 ? [a, b] : [b, a];

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

    const termAt = performance.now();
    leader.child.kill('SIGTERM');
    const takeover = (await standby.leading) - termAt;
    assert.ok(takeover < 2_000, `hand-over after SIGTERM took ${takeover.toFixed(0)} ms`);
    const exit = await leader.exited;
    assert.equal(exit.code, 0, 'the old leader exits 0 after releasing the Lease');
    assert.ok(exit.clean, 'and after a graceful shutdown');

    const c = launch('manager-c');
    await new Promise((r) => setTimeout(r, 1_500)); // let c sync its caches and start campaigning
    const killAt = performance.now();
    if (standby.child.pid) process.kill(standby.child.pid, 'SIGKILL');
    const failover = (await c.leading) - killAt;
    assert.ok(failover < LEASE_MS + 2_000, `takeover after kill -9 took ${failover.toFixed(0)} ms`);
    await widgets.patch('led', { spec: { color: 'three' } }, { namespace: 'default' });
    await waitFor('the new leader to reconcile', async () => {
      const w = await widgets.get('led', { namespace: 'default' });
      return w.status?.color === 'three' && w.status.reconciledBy === 'manager-c';
    });
    c.child.kill('SIGTERM');
    assert.equal((await c.exited).code, 0);
  });
});
