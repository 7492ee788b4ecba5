import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BackupsState } from './backups-state.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 10, 0, s));

describe('archive stalls', () => {
  it('says why once every push failed for longer than the limit, counted from the later of the last success and `since`', () => {
    const state = new BackupsState();
    state.seeArchiveOutcome({ wal: 'A', ok: true }, at(0));
    state.seeArchiveOutcome({ wal: 'B', ok: false, reason: 'ERROR: [082]: x' }, at(15));
    assert.equal(state.archiveStalled(at(5), 60_000, at(50)), undefined);
    assert.equal(state.archiveStalled(at(5), 60_000, at(66)), 'ERROR: [082]: x');
    assert.equal(
      state.archiveStalled(at(30), 60_000, at(66)),
      undefined,
      'a backup started later waits its own minute',
    );
    state.seeArchiveOutcome({ wal: 'B', ok: true }, at(70));
    assert.equal(state.archiveStalled(at(5), 60_000, at(200)), undefined, 'archiving works again');
  });
});
