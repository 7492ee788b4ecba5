import assert from 'node:assert/strict';
import { it } from 'node:test';
import { archiveStalled } from './instance-report.js';

it('says archiving stalled only once every push failed for longer than the limit since the later of start and last success', () => {
  const at = (s: string) => new Date(`2026-12-01T10:${s}Z`);
  const failing = {
    lastArchivedTime: '2026-12-01T10:00:00Z',
    lastFailedTime: '2026-12-01T10:02:00Z',
    lastFailureReason: 'ERROR: [082]: unable to push',
  };
  assert.equal(archiveStalled(failing, at('00:30'), 60_000, at('01:20')), undefined, '50 s since the backup started');
  assert.equal(archiveStalled(failing, at('00:30'), 60_000, at('02:00')), 'ERROR: [082]: unable to push');
  const recovered = { ...failing, lastArchivedTime: '2026-12-01T10:03:00Z' };
  assert.equal(archiveStalled(recovered, at('00:30'), 60_000, at('05:00')), undefined, 'archiving works again');
  assert.equal(archiveStalled(undefined, at('00:30'), 60_000, at('05:00')), undefined, 'no report');
});
