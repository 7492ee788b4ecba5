// One Patroni member's configuration as the failover benchmarks write it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { patroniConfig } from './patroni-config.mjs';
import { PATRONI_DCS, patroniTimings } from './patroni-release.mjs';

const member = { name: 'm1', ip: '127.9.0.1', dir: '/tmp/x/m1', dataDir: '/tmp/x/m1/data' };
const base = {
  member,
  etcdHost: '127.0.0.1:2379',
  pgBin: '/usr/lib/postgresql/15/bin',
  timings: patroniTimings(PATRONI_DCS, '4.1.5'),
  failsafeMode: true,
  watchdogMode: 'off',
  sync: false,
  credentials: { user: 'postgres', password: 'p' },
  replicationPassword: 'r',
};

describe("a Patroni member's configuration", () => {
  it('bootstraps the DCS with the timings Patroni keeps, failsafe mode and the lag limit', () => {
    const { dcs } = patroniConfig(base).bootstrap;
    assert.deepEqual([dcs.ttl, dcs.loop_wait, dcs.retry_timeout], [20, 2, 9]);
    assert.equal(dcs.maximum_lag_on_failover, 16 * 1024 * 1024);
    assert.equal(dcs.failsafe_mode, true);
    assert.equal(patroniConfig({ ...base, failsafeMode: false }).bootstrap.dcs.failsafe_mode, false);
    const old = patroniConfig({ ...base, timings: patroniTimings(PATRONI_DCS, '3.0.2') }).bootstrap.dcs;
    assert.deepEqual([old.ttl, old.loop_wait, old.retry_timeout], [15, 2, 10]);
  });

  it("turns the watchdog off explicitly, since Patroni's default would open a device where one exists", () => {
    assert.deepEqual(patroniConfig(base).watchdog, { mode: 'off' });
  });

  it('reaches etcd directly, or only through its proxy when it has one', () => {
    assert.deepEqual(patroniConfig(base).etcd3, { hosts: ['127.0.0.1:2379'] });
    assert.deepEqual(patroniConfig({ ...base, etcdHost: '127.0.0.1:40000', viaProxy: true }).etcd3, {
      hosts: ['127.0.0.1:40000'],
      use_proxies: true,
    });
  });

  it('runs strict synchronous mode with one standby under --sync, and the WAL segment size asked for', () => {
    const sync = patroniConfig({ ...base, sync: true, walSegmentMiB: 4 }).bootstrap;
    assert.equal(sync.dcs.synchronous_mode, true);
    assert.equal(sync.dcs.synchronous_mode_strict, true);
    assert.equal(sync.dcs.synchronous_node_count, 1);
    assert.deepEqual(sync.initdb.at(-1), { 'wal-segsize': '4' });
    assert.equal(
      patroniConfig(base).bootstrap.initdb.some((o) => typeof o === 'object' && 'wal-segsize' in o),
      false,
    );
  });

  it("puts postgres and the REST API on the member's own address", () => {
    const c = patroniConfig(base);
    assert.equal(c.name, 'm1');
    assert.equal(c.restapi.connect_address, '127.9.0.1:8008');
    assert.equal(c.postgresql.connect_address, '127.9.0.1:5432');
    assert.equal(c.postgresql.data_dir, '/tmp/x/m1/data');
    assert.equal(c.postgresql.bin_dir, '/usr/lib/postgresql/15/bin');
  });
});
