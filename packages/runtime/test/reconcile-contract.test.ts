/**
 * The reconcile contract as the README states it, against a real API server: `TerminalError`
 * is not retried until the object changes, `{ requeueAfter }` brings another lap without any
 * change, `.watches()` wakes the primary a map names, `ctx.list(…, { ownedBy })` sees only that
 * owner's children, and `setCondition` through a real status write keeps lastTransitionTime
 * unless the status flips.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '@kanri/client';
import type { ConfigMap, Secret } from 'kubernetes-types/core/v1.js';
import { pino } from 'pino';
import { type Condition, conditionTime, controller, Manager, setCondition, TerminalError } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';

const quiet = pino({ level: 'silent' });

/** A Widget whose status carries what these controllers write. */
interface ReportingWidget extends KubeObject {
  spec?: Widget['spec'];
  status?: { color?: string; children?: string[]; conditions?: Condition[] };
}

describe('the reconcile contract against a real API server', () => {
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    client = env.client;
  });

  const widgets = () => client.resource<ReportingWidget>('test.kanri.dev/v1', 'Widget');
  const namespace = async (name: string) => {
    await client.resource('v1', 'Namespace').create({ metadata: { name } });
    return name;
  };
  /** Starts a manager for `ns` with `definition`; returns its stop function. */
  const run = (ns: string, definition: Parameters<Manager['add']>[0]) => {
    const manager = new Manager(client, { namespace: ns, bindAddress: false, handleSignals: false, logger: quiet });
    manager.add(definition);
    const done = manager.start();
    return {
      manager,
      stop: async () => {
        manager.stop();
        await done;
      },
    };
  };
  const counter = () => {
    const counts = new Map<string, number>();
    return {
      add: (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1),
      of: (key: string) => counts.get(key) ?? 0,
    };
  };

  it('does not retry a TerminalError until the object changes, while a plain error is retried meanwhile', async () => {
    const ns = await namespace('terminal');
    const attempts = counter();
    const { manager, stop } = run(
      ns,
      controller<ReportingWidget>('test.kanri.dev/v1', 'Widget')
        .options({ name: 'terminal', resync: 0 })
        .reconcile(async (widget) => {
          const name = widget.metadata?.name ?? '';
          attempts.add(name);
          if (name === 'invalid') throw new TerminalError(`color ${widget.spec?.color} is not allowed`);
          if (name === 'flaky') throw new Error('not yet');
        }),
    );
    try {
      await widgets().create({ metadata: { name: 'invalid', namespace: ns }, spec: { color: 'plaid' } });
      await waitFor('the first attempt', () => attempts.of('invalid') >= 1);
      // Both keys share the queue and its backoff: the plain error's retries (5, 10, 20, 40, 80 ms)
      // all come after the terminal failure, which a retry with backoff would have repeated by then.
      await widgets().create({ metadata: { name: 'flaky', namespace: ns }, spec: { color: 'x' } });
      await waitFor('five retries of the plain error', () => attempts.of('flaky') >= 6);
      assert.equal(attempts.of('invalid'), 1, 'the terminal failure was not retried');
      const metrics = await manager.metrics.registry.metrics();
      assert.match(metrics, /controller_runtime_terminal_reconcile_errors_total\{controller="terminal"\} 1\n/);

      // A change to the object is a new lap.
      await widgets().patch('invalid', { spec: { color: 'red' } }, { namespace: ns });
      await waitFor('a lap after the change', () => attempts.of('invalid') === 2);
    } finally {
      await stop();
    }
  });

  it('reconciles again after requeueAfter without any change, never sooner, and not otherwise', async () => {
    const ns = await namespace('requeue');
    const laps = new Map<string, number[]>();
    const { manager, stop } = run(
      ns,
      controller<ReportingWidget>('test.kanri.dev/v1', 'Widget')
        .options({ name: 'requeue', resync: 0 })
        .reconcile(async (widget) => {
          const name = widget.metadata?.name ?? '';
          const times = laps.get(name) ?? [];
          times.push(performance.now());
          laps.set(name, times);
          // Writes nothing, so no event of its own can bring a lap: only the requeue can.
          return name === 'polling' && times.length < 4 ? { requeueAfter: '300ms' } : undefined;
        }),
    );
    try {
      await widgets().create({ metadata: { name: 'settled', namespace: ns }, spec: { color: 'x' } });
      await waitFor('the settled lap', () => laps.get('settled')?.length === 1);
      await widgets().create({ metadata: { name: 'polling', namespace: ns }, spec: { color: 'x' } });
      const polled = await waitFor('three requeued laps', () => {
        const times = laps.get('polling') ?? [];
        return times.length >= 4 ? times : undefined;
      });
      const gaps = polled.slice(1).map((t, i) => t - (polled[i] ?? 0));
      // Timers never fire early (1 ms of rounding aside); late is fine on a loaded machine.
      for (const gap of gaps) assert.ok(gap >= 299, `a lap ${gap.toFixed(0)} ms after the last, asked 300 ms`);
      assert.equal(laps.get('settled')?.length, 1, 'a reconcile that returned nothing was not requeued');
      const metrics = await manager.metrics.registry.metrics();
      assert.match(metrics, /controller_runtime_reconcile_total\{controller="requeue",result="requeue_after"\} 3\n/);
    } finally {
      await stop();
    }
  });

  it('wakes the primary object that a .watches() map names when a watched object changes', async () => {
    const ns = await namespace('watches');
    const color = (secret: Secret | undefined) =>
      secret?.data?.color ? Buffer.from(secret.data.color, 'base64').toString() : 'none';
    const { stop } = run(
      ns,
      controller<ReportingWidget>('test.kanri.dev/v1', 'Widget')
        // A Secret labelled `widget: <name>` configures that Widget.
        .watches('v1', 'Secret', (secret) => {
          const target = secret.metadata?.labels?.widget;
          return target ? [{ namespace: secret.metadata?.namespace, name: target }] : [];
        })
        .options({ name: 'watcher', resync: 0 })
        .reconcile(async (widget, ctx) => {
          const settings = ctx.get<Secret>('v1', 'Secret', `${widget.metadata?.name}-settings`);
          await ctx.setStatus({ color: color(settings) });
        }),
    );
    const statusColor = async () => (await widgets().get('w', { namespace: ns })).status?.color;
    try {
      await widgets().create({ metadata: { name: 'w', namespace: ns }, spec: {} });
      await waitFor('the first lap', async () => (await statusColor()) === 'none');
      const secrets = client.resource('v1', 'Secret');
      await secrets.create({
        metadata: { name: 'w-settings', namespace: ns, labels: { widget: 'w' } },
        stringData: { color: 'red' },
      });
      await waitFor('the Secret to wake the Widget', async () => (await statusColor()) === 'red');
      await secrets.patch('w-settings', { stringData: { color: 'blue' } }, { namespace: ns });
      await waitFor('a change of the Secret to wake it again', async () => (await statusColor()) === 'blue');
    } finally {
      await stop();
    }
  });

  it("lists only the primary's own children with ctx.list(…, { ownedBy })", async () => {
    const ns = await namespace('owned-by');
    const { stop } = run(
      ns,
      controller<ReportingWidget>('test.kanri.dev/v1', 'Widget')
        .owns('v1', 'ConfigMap')
        .options({ name: 'lister', resync: 0 })
        .reconcile(async (widget, ctx) => {
          for (const part of ['a', 'b']) {
            await ctx.apply({
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: `${widget.metadata?.name}-${part}` },
            });
          }
          const children = ctx.list<ConfigMap>('v1', 'ConfigMap', { ownedBy: widget });
          await ctx.setStatus({ children: children.map((c) => c.metadata?.name ?? '').sort() });
        }),
    );
    /** True once `name` lists exactly `expected`; otherwise throws saying what it lists, for the timeout message. */
    const lists = async (name: string, expected: string[]) => {
      const children = (await widgets().get(name, { namespace: ns })).status?.children;
      if (JSON.stringify(children) !== JSON.stringify(expected))
        throw new Error(`${name} lists ${JSON.stringify(children)}`);
      return true;
    };
    try {
      // A ConfigMap nobody owns, in the same namespace and cache.
      await client.resource('v1', 'ConfigMap').create({ metadata: { name: 'stray', namespace: ns } });
      for (const name of ['one', 'two'])
        await widgets().create({ metadata: { name, namespace: ns }, spec: { color: 'x' } });
      // Each child's arrival in the cache wakes its owner, so the listing converges on exactly its own.
      await waitFor('one to list its children', () => lists('one', ['one-a', 'one-b']));
      await waitFor('two to list its children', () => lists('two', ['two-a', 'two-b']));
    } finally {
      await stop();
    }
  });

  it('keeps lastTransitionTime through real status writes unless the condition flips', async () => {
    const ns = await namespace('conditions');
    const { stop } = run(
      ns,
      controller<ReportingWidget>('test.kanri.dev/v1', 'Widget')
        .options({ name: 'conditions', resync: 0 })
        .reconcile(async (widget, ctx) => {
          const green = widget.spec?.color === 'green';
          await ctx.setStatus({
            conditions: setCondition(widget.status?.conditions, {
              type: 'Ready',
              status: green ? 'True' : 'False',
              reason: green ? 'Green' : 'NotGreen',
              message: `size ${widget.spec?.size ?? 0}`,
              observedGeneration: widget.metadata?.generation,
            }),
          });
        }),
    );
    const ready = async (generation: number) => {
      const widget = await widgets().get('lamp', { namespace: ns });
      const condition = widget.status?.conditions?.find((c) => c.type === 'Ready');
      return condition?.observedGeneration === generation ? condition : undefined;
    };
    try {
      await widgets().create({ metadata: { name: 'lamp', namespace: ns }, spec: { color: 'red', size: 1 } });
      const first = await waitFor('the first condition', () => ready(1));
      assert.equal(first.status, 'False');
      // Times have whole seconds: once the clock is past the first one, a new stamp would show.
      await waitFor('the next second', () => conditionTime() !== first.lastTransitionTime);

      await widgets().patch('lamp', { spec: { size: 2 } }, { namespace: ns });
      const same = await waitFor('the condition for generation 2', () => ready(2));
      assert.equal(same.message, 'size 2', 'the condition was written again');
      assert.equal(same.lastTransitionTime, first.lastTransitionTime, 'no flip, no new transition time');

      await widgets().patch('lamp', { spec: { color: 'green' } }, { namespace: ns });
      const flipped = await waitFor('the condition for generation 3', () => ready(3));
      assert.equal(flipped.status, 'True');
      assert.ok(
        (flipped.lastTransitionTime ?? '') > (first.lastTransitionTime ?? ''),
        `a flip is a new transition: ${flipped.lastTransitionTime} after ${first.lastTransitionTime}`,
      );
    } finally {
      await stop();
    }
  });
});
