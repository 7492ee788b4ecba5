import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { podsStuckOnBoundClaims } from './stuck-pods.js';

const now = Date.parse('2026-12-02T10:00:00Z');
const ago = (s: number) => new Date(now - s * 1000).toISOString();
const pod = (name: string, condition: Record<string, string> | undefined, nodeName?: string): Pod => ({
  metadata: { name },
  spec: {
    ...(nodeName ? { nodeName } : {}),
    containers: [],
    volumes: [{ name: 'pgdata', persistentVolumeClaim: { claimName: `${name}-pgdata` } }],
  },
  status: { phase: 'Pending', ...(condition ? { conditions: [{ type: 'PodScheduled', ...condition }] as never } : {}) },
});
const claim = (name: string, phase: string): PersistentVolumeClaim => ({ metadata: { name }, status: { phase } });
const unbound = (s: number) => ({
  status: 'False',
  reason: 'Unschedulable',
  message: '0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.',
  lastTransitionTime: ago(s),
});

it('names a Pod left unschedulable on a claim that is bound now, once it has waited longer than the scheduler backs off', () => {
  const { stuck } = podsStuckOnBoundClaims([pod('db-i-2', unbound(30))], [claim('db-i-2-pgdata', 'Bound')], now);
  assert.deepEqual(
    stuck.map((s) => s.pod.metadata?.name),
    ['db-i-2'],
  );
  assert.match(stuck[0]?.why ?? '', /unschedulable for 30 s .* its claims \(db-i-2-pgdata\) are bound now/);
});

it('leaves alone a Pod whose claim is still unbound, one scheduled, one unschedulable for another reason, and one that has not waited long', () => {
  const cpu = { ...unbound(60), message: '0/2 nodes are available: 2 Insufficient cpu.' };
  const result = podsStuckOnBoundClaims(
    [pod('a', unbound(60)), pod('b', unbound(60), 'node-1'), pod('c', cpu), pod('d', unbound(5)), pod('e', undefined)],
    [claim('a-pgdata', 'Pending'), ...['b', 'c', 'd', 'e'].map((n) => claim(`${n}-pgdata`, 'Bound'))],
    now,
  );
  assert.deepEqual(result.stuck, []);
  assert.equal(result.recheckInMs, 15_000, 'looks again when d would be stuck');
});
