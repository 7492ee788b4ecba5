import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { walSegmentMiB } from './bootstrap.js';
import { parseControlData } from './rewind.js';

// Lines as pg_controldata 15 prints them (LC_ALL=C).
const OUTPUT = `pg_control version number:            1300
Database system identifier:           7443160389457432091
Database cluster state:               in archive recovery
Latest checkpoint location:           0/60580A8
Latest checkpoint's TimeLineID:       2
wal_level setting:                    replica
max_connections setting:              30
max_worker_processes setting:         8
max_wal_senders setting:              10
max_prepared_xacts setting:           0
max_locks_per_xact setting:           64
Bytes per WAL segment:                4194304
`;

describe('parseControlData', () => {
  it('reads the state, the checkpoint, the timeline, the WAL segment size and the hot-standby limits by parameter name', () => {
    assert.deepEqual(parseControlData(OUTPUT), {
      state: 'in archive recovery',
      checkpointLsn: '0/60580A8',
      timeline: 2,
      systemIdentifier: '7443160389457432091',
      walSegmentBytes: 4194304,
      limits: {
        max_connections: 30,
        max_worker_processes: 8,
        max_wal_senders: 10,
        max_prepared_transactions: 0,
        max_locks_per_transaction: 64,
      },
    });
  });
});

describe('walSegmentMiB', () => {
  it("gives initdb's --wal-segsize for a size in bytes, and refuses one initdb could not make", () => {
    assert.equal(walSegmentMiB(16 * 2 ** 20), 16);
    assert.equal(walSegmentMiB(4 * 2 ** 20), 4);
    assert.throws(() => walSegmentMiB(0), /WAL segment size of 0 bytes/);
    assert.throws(() => walSegmentMiB(Number.NaN), /expected a power of two/);
    assert.throws(() => walSegmentMiB(3 * 2 ** 20), /expected a power of two/);
  });
});
