import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '@kanri/client';
import { pino } from 'pino';
import { controller, EventRecorder, Manager } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';
import { widgetController } from './widget-controller.js';

interface EventObject extends KubeObject {
  reason?: string;
  note?: string;
  type?: string;
  series?: { count: number; lastObservedTime: string };
  regarding?: { name?: string; uid?: string };
  reportingController?: string;
}

describe('runtime helpers against a real API server', () => {
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    client = env.client;
  });

  it('aggregates repeated events into a series and rate-limits each object', async () => {
    const owner = await client
      .resource('v1', 'ConfigMap')
      .create({ metadata: { name: 'noisy', namespace: 'default' } });
    const recorder = new EventRecorder({ client, controller: 'kanri.dev/test', instance: 'test-1' });
    for (let i = 0; i < 3; i++)
      await recorder.record(owner, 'Warning', 'FailoverWaiting', 'no replica within lag limit');
    for (let i = 0; i < 40; i++) await recorder.record(owner, 'Normal', 'Tick', `tick ${i}`);
    const events = (
      await client.resource<EventObject>('events.k8s.io/v1', 'Event').list({ namespace: 'default' })
    ).items.filter((e) => e.regarding?.uid === owner.metadata?.uid);
    const waiting = events.filter((e) => e.reason === 'FailoverWaiting');
    assert.equal(waiting.length, 1, 'three repeats make one Event');
    assert.equal(waiting[0]?.series?.count, 3);
    assert.equal(waiting[0]?.reportingController, 'kanri.dev/test');
    assert.equal(events.filter((e) => e.reason === 'Tick').length, 24, 'a burst of 25 per object, one already spent');
  });

  it('applies unchanged children without writing, and aborts a reconcile that runs past its timeout', async () => {
    await client.resource('v1', 'Namespace').create({ metadata: { name: 'idempotent' } });
    const widgets = client.resource<Widget>('test.kanri.dev/v1', 'Widget');
    let laps = 0;
    let slowAborted = false;
    const quiet = pino({ level: 'silent' });
    const manager = new Manager(client, {
      namespace: 'idempotent',
      bindAddress: false,
      handleSignals: false,
      logger: quiet,
    });
    manager.add(widgetController({ onExit: () => laps++, options: { resync: '500ms' } }));
    manager.add(
      controller('v1', 'Secret')
        .options({ name: 'slow', reconcileTimeout: '200ms', resync: 0 })
        .reconcile(async (_secret, ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          slowAborted = ctx.signal.aborted;
        }),
    );
    const running = manager.start();
    try {
      await widgets.create({ metadata: { name: 'calm', namespace: 'idempotent' }, spec: { color: 'teal' } });
      const child = await waitFor('the child', () =>
        client
          .resource('v1', 'ConfigMap')
          .get('widget-calm', { namespace: 'idempotent' })
          .catch(() => undefined),
      );
      const before = laps;
      await waitFor('three more laps from the resync', () => laps >= before + 3, 10_000);
      const after = await client.resource('v1', 'ConfigMap').get('widget-calm', { namespace: 'idempotent' });
      assert.equal(after.metadata?.resourceVersion, child.metadata?.resourceVersion, 'no write when nothing changed');

      await client.resource('v1', 'Secret').create({ metadata: { name: 'slow', namespace: 'idempotent' } });
      await waitFor('the slow reconcile to be aborted by its timeout', () => slowAborted, 5_000);
    } finally {
      manager.stop();
      await running;
    }
  });
});
