import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
`;

describe('parseControlData', () => {
  it('reads the state, the checkpoint, the timeline and the hot-standby limits by parameter name', () => {
    assert.deepEqual(parseControlData(OUTPUT), {
      state: 'in archive recovery',
      checkpointLsn: '0/60580A8',
      timeline: 2,
      systemIdentifier: '7443160389457432091',
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
