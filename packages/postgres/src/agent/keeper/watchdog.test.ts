import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkWatchdog, disarmWatchdog, feedWatchdog, IDLE, startRefusal, type WatchdogState } from './watchdog.js';

describe('the watchdog', () => {
  it('arms with a deadline ahead and sets its timer to it', () => {
    assert.deepEqual(feedWatchdog(IDLE, 10_500, 10_000), { state: { kind: 'armed', untilMs: 10_500 }, checkInMs: 500 });
    assert.equal(startRefusal({ kind: 'armed', untilMs: 10_500 }, 10_000), undefined);
  });

  it('moves the deadline on with each feed', () => {
    const first = feedWatchdog(IDLE, 10_500, 10_000).state;
    assert.deepEqual(feedWatchdog(first, 14_000, 11_000), {
      state: { kind: 'armed', untilMs: 14_000 },
      checkInMs: 3_000,
    });
  });

  it('fires only once the deadline has passed: an early timer checks again', () => {
    const armed: WatchdogState = { kind: 'armed', untilMs: 10_500 };
    assert.deepEqual(checkWatchdog(armed, 10_499), { state: armed, checkInMs: 1 });
    assert.deepEqual(checkWatchdog(armed, 10_502), { state: { kind: 'fired', atMs: 10_502 }, fire: { lateMs: 2 } });
  });

  it('refuses starts once the deadline passed, even before its timer went off', () => {
    assert.match(startRefusal({ kind: 'armed', untilMs: 10_500 }, 10_500) ?? '', /watchdog fired/);
    assert.match(startRefusal({ kind: 'fired', atMs: 10_500 }, 20_000) ?? '', /watchdog fired/);
  });

  it('fires at once on a deadline fed too late, and stays fired', () => {
    const late = feedWatchdog({ kind: 'armed', untilMs: 10_000 }, 9_000, 10_200);
    assert.deepEqual(late, { state: { kind: 'fired', atMs: 10_200 }, fire: { lateMs: 1_200 } });
    // Fired already: nothing more to stop, and still no start.
    assert.deepEqual(feedWatchdog(late.state, 9_500, 10_300), { state: late.state });
    assert.ok(startRefusal(late.state, 10_300));
  });

  it('a deadline ahead (a renewed or new leadership) or a disarm ends the fired state', () => {
    const fired: WatchdogState = { kind: 'fired', atMs: 10_000 };
    const renewed = feedWatchdog(fired, 15_000, 11_000);
    assert.deepEqual(renewed.state, { kind: 'armed', untilMs: 15_000 });
    assert.equal(startRefusal(renewed.state, 11_000), undefined);
    assert.deepEqual(disarmWatchdog(), { state: IDLE });
    assert.equal(startRefusal(IDLE, 11_000), undefined);
  });

  it('an idle or fired watchdog has no timer and does not fire again', () => {
    assert.deepEqual(checkWatchdog(IDLE, 1e9), { state: IDLE });
    const fired: WatchdogState = { kind: 'fired', atMs: 1 };
    assert.deepEqual(checkWatchdog(fired, 1e9), { state: fired });
  });
});
