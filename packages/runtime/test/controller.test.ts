import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient } from '@kanri/client';
import type { ControlPlane } from '@kanri/testenv';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import { pino } from 'pino';
import { controller, Manager } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';
import { widgetController } from './widget-controller.js';

const quiet = pino({ level: 'silent' });

describe('controllers against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    ({ cp, client } = env);
  });

  const widgets = () => client.resource<Widget>('test.kanri.dev/v1', 'Widget');
  const configMaps = () => client.resource('v1', 'ConfigMap');
  const namespace = async (name: string) => {
    await client.resource('v1', 'Namespace').create({ metadata: { name } });
    return name;
  };
  const run = (manager: Manager) => {
    const done = manager.start();
    return async () => {
      manager.stop();
      await done;
    };
  };
  const converged = async (ns: string, names: string[]) => {
    for (const name of names) {
      const w = await widgets().get(name, { namespace: ns });
      const cm = (await configMaps()
        .get(`widget-${name}`, { namespace: ns })
        .catch(() => undefined)) as ConfigMap | undefined;
      if (cm?.data?.color !== w.spec?.color || w.status?.color !== w.spec?.color) return false;
      if (w.status?.observedGeneration !== w.metadata?.generation) return false;
    }
    return true;
  };

  it('is level-triggered: changes made while it was stopped converge when it starts again', async () => {
    const ns = await namespace('level');
    for (const name of ['a', 'b', 'c'])
      await widgets().create({ metadata: { name, namespace: ns }, spec: { color: 'red' } });
    let stop = run(
      new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet }).add(
        widgetController(),
      ),
    );
    await waitFor('first convergence', () => converged(ns, ['a', 'b', 'c']));
    await stop();

    // While no operator runs: change a spec, delete a child, and tamper with another child.
    await widgets().patch('a', { spec: { color: 'blue' } }, { namespace: ns });
    await configMaps().delete('widget-b', { namespace: ns });
    await configMaps().patch('widget-c', { data: { color: 'tampered' } }, { namespace: ns });

    stop = run(
      new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet }).add(
        widgetController(),
      ),
    );
    try {
      await waitFor('convergence after restart', () => converged(ns, ['a', 'b', 'c']));
    } finally {
      await stop();
    }
  });

  it('sends no apply for a child it applied before and nobody changed since, and puts a changed one back', async () => {
    const ns = await namespace('no-op-applies');
    const own = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    let applies = 0;
    own.onWrite((event) => {
      if (event.verb === 'apply' && event.resource.kind === 'ConfigMap') applies++;
    });
    let reconciled = 0;
    const manager = new Manager(own, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(widgetController({ onExit: () => reconciled++ }));
    const stop = run(manager);
    // Each touch is a metadata-only change of the Widget: a reconcile that wants the same child.
    let touches = 0;
    const touched = async () => {
      const before = reconciled;
      await widgets().patch('w', { metadata: { annotations: { touch: String(++touches) } } }, { namespace: ns });
      await waitFor('the reconcile of a touch', () => reconciled > before);
    };
    try {
      await widgets().create({ metadata: { name: 'w', namespace: ns }, spec: { color: 'red' } });
      await waitFor('first convergence', () => converged(ns, ['w']));
      assert.ok(applies >= 1);
      // Until the cache holds the version the last apply produced, a reconcile may still apply.
      await waitFor('a reconcile that sends no apply', async () => {
        const before = applies;
        await touched();
        return applies === before;
      });
      const settled = applies;
      for (let i = 0; i < 3; i++) await touched();
      assert.equal(applies, settled, 'unchanged child applied again');

      // Someone else changes it: the next reconcile applies and restores it.
      // (The server may show the result before the controller's client has the apply's answer.)
      await configMaps().patch('widget-w', { data: { color: 'tampered' } }, { namespace: ns });
      await waitFor('the tampered child applied and put back', async () => applies > settled && converged(ns, ['w']));

      // A new intent is applied too.
      const beforeBlue = applies;
      await widgets().patch('w', { spec: { color: 'blue' } }, { namespace: ns });
      await waitFor('the new color applied', async () => applies > beforeBlue && converged(ns, ['w']));
    } finally {
      await stop();
      await own.close();
    }
  });

  it('heals events dropped on purpose through the next resync', async () => {
    const ns = await namespace('dropped');
    let dropping = false;
    // The test hook: while `dropping`, every event is lost before it reaches the queue.
    const drop = () => !dropping;
    const manager = new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(widgetController({ predicates: [drop], options: { resync: '1s' } }));
    const stop = run(manager);
    try {
      await widgets().create({ metadata: { name: 'w', namespace: ns }, spec: { color: 'red' } });
      await waitFor('first convergence', () => converged(ns, ['w']));
      dropping = true;
      await widgets().patch('w', { spec: { color: 'green' } }, { namespace: ns });
      await configMaps().delete('widget-w', { namespace: ns });
      await waitFor('the resync to heal the dropped events', () => converged(ns, ['w']), 15_000);
    } finally {
      await stop();
    }
  });

  it('never reconciles one key twice at once under bursts, and converges', async () => {
    const ns = await namespace('bursts');
    const names = Array.from({ length: 200 }, (_, i) => `w${i}`);
    const inFlight = new Set<string>();
    const overlaps: string[] = [];
    let reconciles = 0;
    const manager = new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(
      widgetController({
        onEnter: (key) => {
          reconciles++;
          if (inFlight.has(key)) overlaps.push(key);
          inFlight.add(key);
        },
        onExit: (key) => inFlight.delete(key),
        options: { workers: 8 },
      }),
    );
    const stop = run(manager);
    try {
      await Promise.all(
        names.map((name) => widgets().create({ metadata: { name, namespace: ns }, spec: { color: 'c0' } })),
      );
      for (let burst = 1; burst <= 3; burst++) {
        await Promise.all(
          names.map((name) => widgets().patch(name, { spec: { color: `c${burst}` } }, { namespace: ns })),
        );
      }
      await waitFor('all 200 to converge', () => converged(ns, names), 120_000);
      assert.deepEqual(overlaps, [], 'no key was reconciled by two workers at once');
      assert.ok(reconciles >= 200, `reconciled ${reconciles} times`);
    } finally {
      await stop();
    }
  });

  it('retries a failing reconcile with growing delays and stays up, also when it throws synchronously', async () => {
    const ns = await namespace('retries');
    const attempts: number[] = [];
    const manager = new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(
      widgetController({
        before: (widget) => {
          if (widget.metadata?.name !== 'flaky') return;
          attempts.push(performance.now());
          if (attempts.length <= 5) throw new Error(`failure ${attempts.length}`);
        },
        options: { resync: 0 },
      }),
    );
    const syncThrower = controller('v1', 'ConfigMap')
      .options({ name: 'sync-thrower', resync: 0 })
      .reconcile((cm) => {
        if (cm.metadata?.name === 'boom') throw new Error('synchronous throw');
      });
    manager.add(syncThrower);
    const stop = run(manager);
    try {
      await configMaps().create({ metadata: { name: 'boom', namespace: ns } });
      await widgets().create({ metadata: { name: 'flaky', namespace: ns }, spec: { color: 'x' } });
      await waitFor('the sixth attempt to succeed', () => converged(ns, ['flaky']), 20_000);
      // Later laps may follow from the reconcile's own writes (its ConfigMap and status), but no more failures.
      assert.ok(attempts.length >= 6, `failed 5 times, then succeeded: ${attempts.length} attempts`);
      const gaps = attempts.slice(1, 6).map((t, i) => t - (attempts[i] ?? 0));
      // The default per-item backoff waits 5, 10, 20, 40, 80 ms. Timers never fire early (1 ms of
      // rounding aside) but may fire late under load, so each gap is checked against its floor.
      const floors = [5, 10, 20, 40, 80];
      const shown = gaps.map((g) => g.toFixed(1)).join(', ');
      for (const [i, floor] of floors.entries()) {
        assert.ok((gaps[i] ?? 0) >= floor - 1, `retry ${i + 1} waited ≥ ${floor} ms: ${shown}`);
      }
      const metrics = await manager.metrics.registry.getSingleMetricAsString(
        'controller_runtime_reconcile_errors_total',
      );
      assert.match(metrics, /controller_runtime_reconcile_errors_total\{controller="widget"\} 5/);
      assert.match(metrics, /controller="sync-thrower"\} [1-9]/, 'the synchronous throw was counted, not fatal');
    } finally {
      await stop();
    }
  });

  it('holds deletion until the finalizer clean-up succeeds, retrying a failing one', async () => {
    const ns = await namespace('finalizers');
    let cleanupAttempts = 0;
    let cleanupMayPass = false;
    const manager = new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(
      controller<Widget>('test.kanri.dev/v1', 'Widget')
        .options({ resync: 0 })
        .finalizer('test.kanri.dev/cleanup', async () => {
          cleanupAttempts++;
          if (!cleanupMayPass) throw new Error('external resource still busy');
        })
        .reconcile(async () => {}),
    );
    const stop = run(manager);
    try {
      await widgets().create({ metadata: { name: 'held', namespace: ns } });
      await waitFor('the finalizer to be added', async () =>
        (await widgets().get('held', { namespace: ns })).metadata?.finalizers?.includes('test.kanri.dev/cleanup'),
      );
      await widgets().delete('held', { namespace: ns });
      await waitFor('several failed clean-ups', () => cleanupAttempts >= 3, 15_000);
      const held = await widgets().get('held', { namespace: ns });
      assert.ok(held.metadata?.deletionTimestamp, 'deletion started');
      assert.deepEqual(held.metadata?.finalizers, ['test.kanri.dev/cleanup'], 'but the finalizer keeps the object');
      cleanupMayPass = true;
      await waitFor(
        'the object to be gone',
        () =>
          widgets()
            .get('held', { namespace: ns })
            .then(
              () => false,
              () => true,
            ),
        30_000,
      );
    } finally {
      await stop();
    }
  });

  it('serves /healthz, /readyz and controller-runtime metrics with the right counts', async () => {
    const ns = await namespace('metrics');
    const manager = new Manager(client, {
      namespace: ns,
      bindAddress: '127.0.0.1:0',
      handleSignals: false,
      logger: quiet,
    });
    manager.add(widgetController({ options: { resync: 0 } }));
    const stop = run(manager);
    try {
      await waitFor('readiness', async () => (await fetch(`http://127.0.0.1:${manager.port}/readyz`)).status === 200);
      assert.equal((await fetch(`http://127.0.0.1:${manager.port}/healthz`)).status, 200);
      for (const name of ['m1', 'm2', 'm3'])
        await widgets().create({ metadata: { name, namespace: ns }, spec: { color: 'x' } });
      await waitFor('convergence', () => converged(ns, ['m1', 'm2', 'm3']));
      const text = await waitFor('metrics to show 3 reconciles', async () => {
        const body = await (await fetch(`http://127.0.0.1:${manager.port}/metrics`)).text();
        return /controller_runtime_reconcile_total\{controller="widget",result="success"\} ([3-9]|\d\d)/.test(body)
          ? body
          : '';
      });
      for (const series of [
        'controller_runtime_reconcile_errors_total{controller="widget"} 0',
        'controller_runtime_reconcile_time_seconds_count{controller="widget"}',
        'workqueue_adds_total{name="widget",controller="widget"}',
        'workqueue_depth{name="widget",controller="widget"} 0',
        'workqueue_queue_duration_seconds_count{name="widget",controller="widget"}',
        'workqueue_retries_total',
        'kanri_cache_watch_reconnects_total{resource="widgets.test.kanri.dev"} 0',
        'kanri_cache_relists_total{resource="configmaps"} 0',
      ]) {
        assert.ok(text.includes(series), `missing ${series}`);
      }
    } finally {
      await stop();
    }
  });
});
