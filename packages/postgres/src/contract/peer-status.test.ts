import assert from 'node:assert/strict';
import { it } from 'node:test';
import { liveStatusWire } from './peer-status.js';

const status = {
  role: 'replica',
  ready: true,
  timeline: 2,
  systemIdentifier: '7431234567890123456',
  receivedLsn: '0/3000148',
  replayedLsn: '0/3000148',
  lagBytes: 0,
  updatedAt: '2026-12-02T10:00:00.000Z',
  name: 'db-i-1',
  candidate: true,
  primaryLsnSeen: '0/3000148',
  receiverStatus: 'streaming',
};

it('accepts what an agent answers, unknown fields included', () => {
  assert.equal(liveStatusWire.safeParse(status).success, true);
  assert.equal(liveStatusWire.safeParse({ ...status, newerField: 1, receiverStatus: null }).success, true);
});

it('refuses an answer whose positions are not LSNs, or that lacks what ranking reads', () => {
  for (const bad of [
    { ...status, primaryLsnSeen: 'FFFFFFFFFF/0' },
    { ...status, primaryLsnSeen: 99 },
    { ...status, receivedLsn: '1/2; DROP' },
    { ...status, candidate: 'yes' },
    { ...status, timeline: -1 },
    { name: 'db-i-1' },
    'not an object',
  ])
    assert.equal(liveStatusWire.safeParse(bad).success, false, JSON.stringify(bad));
});
