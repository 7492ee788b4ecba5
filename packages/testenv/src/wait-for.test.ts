import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor, within } from './wait-for.js';

describe('within', () => {
  it('resolves with the value of a promise that settles in time', async () => {
    assert.equal(await within('a quick value', sleep(10, 'done'), 1_000), 'done');
  });

  it('passes on the rejection of a promise that fails in time', async () => {
    await assert.rejects(within('a failure', Promise.reject(new Error('broken')), 1_000), /broken/);
  });

  it('rejects naming what it waited for once the time is up', async () => {
    await assert.rejects(
      within('the standby to lead', new Promise(() => {}), 100),
      /timed out after 100 ms waiting for the standby to lead/,
    );
  });
});

describe('waitFor', () => {
  it('returns the first truthy value and names the last one seen on timeout', async () => {
    let calls = 0;
    assert.equal(await waitFor('three calls', () => ++calls >= 3 && calls, 1_000, 1), 3);
    await assert.rejects(
      waitFor('never', () => false, 50, 5),
      /waiting for never; last: false/,
    );
  });
});
