import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declaredSchedules, latestDue, nextRun } from './backup-schedule.js';

describe('backup schedules', () => {
  it('finds the latest due run only, like a CronJob without catch-up', () => {
    const since = new Date('2026-12-01T10:00:30Z');
    assert.equal(
      latestDue('* * * * *', since, new Date('2026-12-01T10:03:10Z'))?.toISOString(),
      '2026-12-01T10:03:00.000Z',
    );
    assert.equal(latestDue('* * * * *', since, new Date('2026-12-01T10:00:59Z')), undefined);
    assert.equal(latestDue('0 1 * * 0', since, new Date('2026-12-02T00:00:00Z')), undefined);
  });

  it('computes the next run in UTC', () => {
    assert.equal(nextRun('30 2 * * *', new Date('2026-12-01T10:00:00Z'))?.toISOString(), '2026-12-02T02:30:00.000Z');
  });

  it('lists every repo schedule with its key', () => {
    const schedules = declaredSchedules([
      { name: 'repo1', schedules: { full: '0 1 * * 0', incremental: '0 */4 * * *' } },
      { name: 'repo2' },
    ]);
    assert.deepEqual(
      schedules.map((s) => `${s.repo}:${s.key}`),
      ['repo1:full', 'repo1:incremental'],
    );
  });
});
