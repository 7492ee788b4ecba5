import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIN_FREE_BYTES, NO_SPACE_HOLD_MS, planDiskFull } from './disk-full-plan.js';

const MiB = 2 ** 20;
const line =
  '2026-12-01 23:19:28.013 UTC [26949] PANIC:  could not write to file "pg_wal/xlogtemp.26949": No space left on device';

describe('planDiskFull', () => {
  it('is not full with room for a WAL segment and no complaint from postgres', () =>
    assert.equal(planDiskFull({ freeBytes: MIN_FREE_BYTES, totalBytes: 128 * MiB }), undefined));
  it('is full below one WAL segment free, saying how much is left', () =>
    assert.equal(
      planDiskFull({ freeBytes: 0.5 * MiB, totalBytes: 128 * MiB }),
      'the data volume is full: 0.5 MiB free of 128.0 MiB',
    ));
  it('is full for a while after postgres said so, even when an abort freed some space', () => {
    assert.equal(
      planDiskFull({ freeBytes: 100 * MiB, totalBytes: 128 * MiB, lastNoSpace: { line, agoMs: 1_000 } }),
      'the data volume is full: postgres: PANIC: could not write to file "pg_wal/xlogtemp.26949": No space left on device',
    );
    assert.equal(
      planDiskFull({ freeBytes: 100 * MiB, totalBytes: 128 * MiB, lastNoSpace: { line, agoMs: NO_SPACE_HOLD_MS } }),
      undefined,
    );
  });
  it('names both reasons when both hold', () =>
    assert.match(
      planDiskFull({ freeBytes: 0, totalBytes: undefined, lastNoSpace: { line, agoMs: 0 } }) ?? '',
      /^the data volume is full: 0\.0 MiB free; postgres: PANIC: /,
    ));
  it('says nothing when the volume cannot be read and postgres did not complain', () =>
    assert.equal(planDiskFull({ freeBytes: undefined, totalBytes: undefined }), undefined));
});
