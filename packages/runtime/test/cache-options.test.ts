/**
 * The manager's per-kind cache options against a real API server: with a label selector for a
 * kind, its shared informer holds only the matching objects (how the PostgreSQL operator keeps the
 * cluster's other Secrets out of memory), and a kind without one holds everything.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '@kanri/client';
import { pino } from 'pino';
import { controller, Manager } from '../src/index.js';
import { useWidgetControlPlane, type Widget, waitFor } from './helpers.js';

describe('Manager cache options', () => {
  let client: KubeClient;
  useWidgetControlPlane((env) => {
    client = env.client;
  });

  it('holds only the objects a kind’s label selector matches, and every object of other kinds', async () => {
    const ns = 'cache-options';
    await client.resource('v1', 'Namespace').create({ metadata: { name: ns } });
    for (const [kind, name, labels] of [
      ['ConfigMap', 'ours', { 'example.dev/owned': 'yes' }],
      ['ConfigMap', 'theirs', {}],
      ['Secret', 'ours', { 'example.dev/owned': 'yes' }],
      ['Secret', 'theirs', {}],
    ] as const)
      await client.resource('v1', kind).create({ metadata: { name, namespace: ns, labels } });
    const manager = new Manager(client, {
      name: 'cache-test',
      namespace: ns,
      bindAddress: false,
      handleSignals: false,
      logger: pino({ level: 'silent' }),
      cache: { byKind: { 'v1/Secret': { labelSelector: 'example.dev/owned' } } },
    }).add(
      controller<Widget>('test.kanri.dev/v1', 'Widget')
        .owns('v1', 'Secret')
        .owns('v1', 'ConfigMap')
        .reconcile(async () => undefined),
    );
    const done = manager.start();
    try {
      const secrets = manager.informers.informer('v1', 'Secret');
      const configMaps = manager.informers.informer('v1', 'ConfigMap');
      // The first list may be served from the watch cache before the creates reach it: wait for
      // what must come, then check what must not.
      await waitFor('the labelled Secret', () => secrets.getByName(ns, 'ours'));
      await waitFor('both ConfigMaps', () => configMaps.getByName(ns, 'ours') && configMaps.getByName(ns, 'theirs'));
      // Made in this order, an unfiltered watch would deliver later-theirs before later.
      await client.resource('v1', 'Secret').create({ metadata: { name: 'later-theirs', namespace: ns } });
      await client
        .resource('v1', 'Secret')
        .create({ metadata: { name: 'later', namespace: ns, labels: { 'example.dev/owned': 'yes' } } });
      await waitFor('the labelled Secret made later', () => secrets.getByName(ns, 'later'));
      assert.deepEqual(
        secrets
          .list()
          .map((s) => s.metadata?.name)
          .sort(),
        ['later', 'ours'],
      );
    } finally {
      manager.stop();
      await done;
    }
  });
});
