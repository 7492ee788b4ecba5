import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { ANNOTATION, type DatabaseInitSqlRun, type InstanceReport, LABEL } from '../contract/index.js';
import { clusterStatus, databaseInitSqlStatus, securityMaterialCondition, versionCondition } from './cluster-status.js';

const now = new Date('2026-11-29T12:00:00Z');
const cluster = { metadata: { name: 'db', generation: 3 }, spec: {} } as unknown as PostgresCluster;
const pod = (name: string, role: string, report: Partial<InstanceReport>, ready = true): Pod => ({
  metadata: {
    name,
    labels: { [LABEL.role]: role },
    annotations: {
      [ANNOTATION.status]: JSON.stringify({
        role,
        ready: true,
        timeline: 1,
        systemIdentifier: '742',
        receivedLsn: '0/3000000',
        replayedLsn: '0/3000000',
        lagBytes: 0,
        updatedAt: now.toISOString(),
        ...report,
      }),
    },
  },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

describe('clusterStatus', () => {
  it("lists the primary's kept removed users, and keeps the last list while there is no primary", () => {
    const removed = [
      { name: 'old', reason: 'owns database "old": drop it or change its owner, and the role is dropped' },
    ];
    const withPrimary = clusterStatus({
      cluster,
      pods: [pod('db-i-0', 'primary', { users: { generation: 3, removed } }), pod('db-i-1', 'replica', {})],
      desired: 2,
      converging: false,
      now,
    });
    assert.deepEqual(withPrimary.removedUsers, removed);
    const noPrimary = clusterStatus({
      cluster: { ...cluster, status: withPrimary },
      pods: [pod('db-i-1', 'replica', {})],
      desired: 2,
      converging: false,
      now,
    });
    assert.deepEqual(noPrimary.removedUsers, removed);
    const emptied = clusterStatus({
      cluster: { ...cluster, status: withPrimary },
      pods: [pod('db-i-0', 'primary', { users: { generation: 4, removed: [] } })],
      desired: 1,
      converging: false,
      now,
    });
    assert.equal(emptied.removedUsers, undefined);
  });

  it('names why each instance is not ready, beside a primary too: its message, a stale report, no report, an unready Pod', () => {
    const stale = new Date(now.getTime() - 60_000).toISOString();
    const status = clusterStatus({
      cluster,
      pods: [
        pod('db-i-0', 'primary', {}),
        pod('db-i-1', 'replica', { ready: false, message: 'WAL receiver is starting' }),
        pod('db-i-2', 'replica', { updatedAt: stale }),
        {
          metadata: { name: 'db-i-3' },
          status: {
            phase: 'Pending',
            conditions: [
              { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available' },
            ],
          },
        },
        pod('db-i-4', 'replica', {}, false),
      ],
      desired: 5,
      converging: false,
      now,
    });
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(
      ready?.message,
      '1/5 instances ready, primary db-i-0; db-i-1: WAL receiver is starting; db-i-2: last report 60 s old; ' +
        'db-i-3: no report yet (Pod Pending, Unschedulable: 0/2 nodes are available); db-i-4: Pod not Ready',
    );
  });

  it('is Ready with the primary named when every desired instance is ready', () => {
    const status = clusterStatus({
      cluster,
      pods: [pod('db-i-0', 'primary', {}), pod('db-i-1', 'replica', { lagBytes: 12 })],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(status.primary, 'db-i-0');
    assert.equal(status.readyInstances, 2);
    assert.equal(status.systemIdentifier, '742');
    assert.equal(status.observedGeneration, 3);
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status]),
      [
        ['Ready', 'True'],
        ['Progressing', 'False'],
        ['Degraded', 'False'],
        ['PostgresVersion', 'Unknown'],
        ['DiskFull', 'False'],
        ['SecurityMaterialMissing', 'False'],
      ],
    );
    assert.deepEqual(status.instances?.[1], {
      name: 'db-i-1',
      role: 'replica',
      ready: true,
      timeline: 1,
      lagBytes: 12,
    });
  });

  it('does not trust a stale report, and says why there is no primary', () => {
    const stale = new Date(now.getTime() - 60_000).toISOString();
    const status = clusterStatus({
      cluster,
      pods: [
        pod('db-i-0', 'primary', { updatedAt: stale }),
        pod('db-i-1', 'replica', { ready: false, message: 'waiting: no replica within lag limit' }),
      ],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(status.primary, undefined);
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'NoPrimary');
    assert.match(ready?.message ?? '', /db-i-1: waiting: no replica within lag limit/);
    assert.equal(status.conditions?.find((c) => c.type === 'Degraded')?.status, 'True');
  });

  it('reports DiskFull naming each instance whose data volume is full, and clears it', () => {
    const full = 'the data volume is full: 0.2 MiB free of 128.0 MiB';
    const status = clusterStatus({
      cluster,
      pods: [pod('db-i-0', 'primary', { diskFull: full }, false), pod('db-i-1', 'replica', {})],
      desired: 2,
      converging: false,
      now,
    });
    const condition = status.conditions?.find((c) => c.type === 'DiskFull');
    assert.equal(condition?.status, 'True');
    assert.equal(condition?.reason, 'DataVolumeFull');
    assert.equal(condition?.message, `db-i-0: ${full}`);
    const cleared = clusterStatus({
      cluster: { ...cluster, status },
      pods: [pod('db-i-0', 'primary', {}), pod('db-i-1', 'replica', {})],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(cleared.conditions?.find((c) => c.type === 'DiskFull')?.status, 'False');
  });
});

describe('securityMaterialCondition', () => {
  it('is True, naming what was missing, for the pass that created it anew, and False once all is there', () => {
    const status = clusterStatus({
      cluster,
      pods: [pod('db-i-0', 'primary', {})],
      desired: 1,
      converging: false,
      recreated: ['db-postgres-tls', 'db-config'],
      now,
    });
    const found = status.conditions?.find((c) => c.type === 'SecurityMaterialMissing');
    assert.equal(found?.status, 'True');
    assert.equal(found?.reason, 'Recreated');
    assert.match(
      found?.message ?? '',
      /^db-postgres-tls, db-config did not exist: created anew\. The instances keep serving/,
    );
    const cleared = clusterStatus({
      cluster: { ...cluster, status },
      pods: [pod('db-i-0', 'primary', {})],
      desired: 1,
      converging: false,
      now,
    });
    const after = cleared.conditions?.find((c) => c.type === 'SecurityMaterialMissing');
    assert.deepEqual([after?.status, after?.reason], ['False', 'Present']);
    assert.equal(after?.message, 'db-postgres-tls, db-postgres-ca and db-config exist');
  });

  it('tells clients to take the new CA when the CA was re-created', () => {
    assert.match(
      securityMaterialCondition('db', ['db-postgres-ca', 'db-postgres-tls']).message ?? '',
      /new ca\.crt of ConfigMap db-postgres-ca/,
    );
    assert.doesNotMatch(securityMaterialCondition('db', ['db-postgres-tls']).message ?? '', /new CA/);
  });
});

describe('versionCondition', () => {
  it('shows the version the primary runs, and is True when every instance runs the major asked for', () => {
    const v16 = { ...cluster, spec: { postgresVersion: 16 } } as unknown as PostgresCluster;
    const status = clusterStatus({
      cluster: v16,
      pods: [
        pod('db-i-0', 'primary', { serverVersion: '16.15' }),
        pod('db-i-1', 'replica', { serverVersion: '16.14' }),
      ],
      desired: 2,
      converging: false,
      now,
    });
    assert.equal(status.postgresVersion, '16.15');
    assert.deepEqual(
      status.instances?.map((i) => i.version),
      ['16.15', '16.14'],
    );
    const found = status.conditions?.find((c) => c.type === 'PostgresVersion');
    assert.equal(found?.status, 'True');
    assert.equal(found?.reason, 'AsSpecified');
  });

  it('names each instance that runs another major', () => {
    const condition = versionCondition(16, [
      { name: 'db-i-0', version: '15.18' },
      { name: 'db-i-1', version: '16.15' },
      { name: 'db-i-2' },
    ]);
    assert.equal(condition.status, 'False');
    assert.equal(condition.reason, 'VersionMismatch');
    assert.match(condition.message ?? '', /spec\.postgresVersion is 16, but db-i-0 runs 15\.18:/);
    assert.doesNotMatch(condition.message ?? '', /db-i-1|db-i-2/);
  });

  it('is Unknown until an instance reports', () => {
    assert.equal(versionCondition(16, [{ name: 'db-i-0' }]).status, 'Unknown');
  });
});

describe('databaseInitSqlStatus', () => {
  const wanted = { name: 'init', key: 'init.sql' };
  const run = (change: Partial<DatabaseInitSqlRun> = {}): DatabaseInitSqlRun => ({
    configMap: 'init',
    key: 'init.sql',
    sha256: 'aa',
    result: 'Succeeded',
    finishedAt: '2026-12-07T10:00:00.000Z',
    ...change,
  });

  it("records the ConfigMap once the primary's run succeeded, and keeps it without a report", () => {
    assert.deepEqual(databaseInitSqlStatus(wanted, run(), undefined), {
      databaseInitSQL: 'init',
      databaseInitSQLRun: run(),
    });
    assert.deepEqual(databaseInitSqlStatus(wanted, undefined, { databaseInitSQL: 'init', databaseInitSQLRun: run() }), {
      databaseInitSQL: 'init',
      databaseInitSQLRun: run(),
    });
  });

  it('shows a failure without recording the ConfigMap, and the later of two runs', () => {
    const failed = run({
      result: 'Failed',
      message: 'psql exited with code 3',
      finishedAt: '2026-12-07T09:00:00.000Z',
    });
    assert.deepEqual(databaseInitSqlStatus(wanted, failed, undefined), { databaseInitSQLRun: failed });
    // A new primary reports nothing yet, or an older run: the status's later one stands.
    assert.deepEqual(databaseInitSqlStatus(wanted, failed, { databaseInitSQLRun: run() }), {
      databaseInitSQL: 'init',
      databaseInitSQLRun: run(),
    });
  });

  it('forgets both with the spec field, and a run of another ConfigMap or key', () => {
    assert.deepEqual(
      databaseInitSqlStatus(undefined, run(), { databaseInitSQL: 'init', databaseInitSQLRun: run() }),
      {},
    );
    assert.deepEqual(
      databaseInitSqlStatus({ name: 'next', key: 'init.sql' }, run(), {
        databaseInitSQL: 'init',
        databaseInitSQLRun: run(),
      }),
      {},
    );
    assert.deepEqual(databaseInitSqlStatus({ name: 'init', key: 'other.sql' }, run(), undefined), {});
  });
});
