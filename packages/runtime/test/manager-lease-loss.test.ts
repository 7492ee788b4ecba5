/**
 * A manager that loses its Lease to another leader stops reconciling at once: the reconciles in
 * flight see their signal abort (so their writes fail), and no key still waiting starts. Against a
 * real API server, with the Lease taken over the way a second manager would take it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '@kanri/client';
import { pino } from 'pino';
import { controller, type Lease, Manager } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';

const quiet = pino({ level: 'silent' });
const LEASE = 'widgets-loss-leader';

describe('a manager that loses its Lease', () => {
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    ({ client } = env);
  });

  it('aborts the reconciles in flight and starts none of the waiting ones', async () => {
    const ns = 'loss';
    await client.resource('v1', 'Namespace').create({ metadata: { name: ns } });
    const widgets = client.resource<Widget>('test.kanri.dev/v1', 'Widget');
    for (let i = 0; i < 6; i++)
      await widgets.create({ metadata: { name: `w${i}`, namespace: ns }, spec: { color: 'red' } } as Widget);

    const started: { key: string; at: number }[] = [];
    const endedBy: string[] = [];
    const manager = new Manager(client, {
      namespace: ns,
      bindAddress: false,
      handleSignals: false,
      logger: quiet,
      leaderElection: {
        namespace: ns,
        name: LEASE,
        identity: 'first',
        leaseDurationMs: 4_000,
        renewDeadlineMs: 3_000,
        retryPeriodMs: 300,
      },
    }).add(
      // One worker, each reconcile holding on until its signal aborts (or 20 s): keys queue behind it.
      controller<Widget>('test.kanri.dev/v1', 'Widget')
        .options({ workers: 1 })
        .reconcile(async (widget, ctx) => {
          started.push({ key: widget.metadata?.name ?? '', at: performance.now() });
          await sleep(20_000, undefined, { signal: ctx.signal }).then(
            () => endedBy.push('timeout'),
            () => endedBy.push('abort'),
          );
        }),
    );
    const done = manager.start();
    try {
      await waitFor('the first manager to lead and reconcile', async () => (started.length > 0 ? true : undefined));

      // Another manager's take-over: the Lease now names it, freshly renewed.
      const leases = client.resource<Lease>('coordination.k8s.io/v1', 'Lease');
      const lease = await leases.get(LEASE, { namespace: ns });
      const now = new Date().toISOString().replace('Z', '000Z');
      await leases.update(
        {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: 'second',
            acquireTime: now,
            renewTime: now,
            leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
          },
        },
        { namespace: ns },
      );
      await waitFor('the first manager to see it lost', async () => (manager.isLeader ? undefined : true), 10_000, 50);
      const lostAt = performance.now();
      await waitFor('the reconcile in flight to end', async () => (endedBy.length > 0 ? true : undefined), 15_000, 50);
      assert.deepEqual(endedBy, ['abort'], 'the reconcile in flight was aborted, not left to run on');
      // Give a drain every chance to hand out a waiting key: none may start.
      await sleep(1_500);
      assert.deepEqual(
        started.filter((s) => s.at > lostAt).map((s) => s.key),
        [],
        'no reconcile started after the Lease was lost',
      );
      assert.equal(started.length, 1, `only the first key ran (${started.map((s) => s.key)})`);
    } finally {
      manager.stop();
      await done;
    }
  });
});
