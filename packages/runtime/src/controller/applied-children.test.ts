import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { AppliedChildren } from './applied-children.js';

const child = (name: string, color = 'red'): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' }, data: { color } }) as KubeObject;
const live = (name: string, resourceVersion: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns', resourceVersion },
});

it('knows a child unchanged only for the same intent and the version its apply produced', () => {
  const applied = new AppliedChildren();
  assert.equal(applied.unchanged(child('a'), live('a', '5')), false, 'never applied');
  applied.applied(child('a'), live('a', '5'));
  assert.equal(applied.unchanged(child('a'), live('a', '5')), true);
  assert.equal(applied.unchanged(child('a', 'blue'), live('a', '5')), false, 'new intent');
  assert.equal(applied.unchanged(child('a'), live('a', '6')), false, 'changed since');
  assert.equal(applied.unchanged(child('a'), live('a', '4')), false, 'cache behind the apply');
  assert.equal(applied.unchanged(child('a'), undefined), false, 'not in the cache');
  assert.equal(applied.unchanged(child('b'), live('b', '5')), false, 'another child');
});

it('forgets a child whose apply gave no version, and the least recently used beyond its capacity', () => {
  const applied = new AppliedChildren(2);
  applied.applied(child('a'), live('a', '1'));
  applied.applied(child('a'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } });
  assert.equal(applied.unchanged(child('a'), live('a', '1')), false);
  applied.applied(child('a'), live('a', '1'));
  applied.applied(child('b'), live('b', '1'));
  assert.equal(applied.unchanged(child('a'), live('a', '1')), true); // a is now the most recent
  applied.applied(child('c'), live('c', '1'));
  assert.equal(applied.size, 2);
  assert.equal(applied.unchanged(child('b'), live('b', '1')), false, 'b was the least recently used');
  assert.equal(applied.unchanged(child('a'), live('a', '1')), true);
  assert.equal(applied.unchanged(child('c'), live('c', '1')), true);
});
