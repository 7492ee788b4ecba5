// What the failover benchmarks say about each side's WAL segment size.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeWalSegments, KANRI_WAL_SEGMENT_MIB, patroniWalSegmentMiB } from './wal-segments.mjs';

const MiB = 2 ** 20;

describe('WAL segment sizes in the failover benchmarks', () => {
  it("gives Patroni's initdb Kanri's size by default, and nothing with --wal-segments default", () => {
    assert.equal(patroniWalSegmentMiB('equal'), KANRI_WAL_SEGMENT_MIB);
    assert.equal(patroniWalSegmentMiB('default'), undefined);
  });

  it('says which it was, from what the servers report', () => {
    assert.deepEqual(describeWalSegments('equal', { patroni: 4 * MiB, kanri: 4 * MiB }), {
      mode: 'equal',
      bytes: { patroni: 4 * MiB, kanri: 4 * MiB },
      note: 'WAL segments equal: 4 MiB on both',
      problem: null,
    });
    // With Debian's Patroni as a third column (--systems patroni,kanri,patroni3).
    assert.equal(
      describeWalSegments('equal', { patroni: 4 * MiB, kanri: 4 * MiB, patroni3: 4 * MiB }).note,
      'WAL segments equal: 4 MiB on all 3',
    );
    const both = describeWalSegments('default', { patroni: 16 * MiB, kanri: 4 * MiB });
    assert.equal(both.note, "WAL segments each system's default: patroni 16 MiB, kanri 4 MiB");
    assert.equal(both.problem, null);
  });

  it('refuses a run that would compare different sizes while saying they are equal', () => {
    assert.match(
      describeWalSegments('equal', { patroni: 16 * MiB, kanri: 4 * MiB }).problem ?? '',
      /--wal-segments equal, but the servers run patroni 16 MiB, kanri 4 MiB/,
    );
    assert.match(
      describeWalSegments('equal', { patroni: 16 * MiB, kanri: 16 * MiB }).problem ?? '',
      /Kanri runs 16 MiB/,
    );
  });
});
