import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatSwitchoverOrder, parseSwitchoverOrder } from './switchover-order.js';

describe('switchover order', () => {
  it('reads back what it wrote, for a named target and for `*`', () => {
    for (const order of [
      { token: 'm4k2x-9f3a', target: 'db-i-1' },
      { token: 'm4k2x-9f3a', target: '*' },
    ])
      assert.deepEqual(parseSwitchoverOrder(formatSwitchoverOrder(order)), order);
  });

  it('reads no order from a value that lacks a token or a target', () => {
    for (const value of [undefined, '', 'db-i-1', ':db-i-1', 'm4k2x:'])
      assert.equal(parseSwitchoverOrder(value), undefined, String(value));
  });
});
