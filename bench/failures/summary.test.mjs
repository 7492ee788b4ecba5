// The failure matrix's accounting: a failover row's trial without a failover is a failed trial,
// the run's status says so, and a split-brain count from a watcher that was blind is no count.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FAILURE_KINDS } from './kinds.mjs';
import { expectsFailover, formatTable, judgeTrial, runStatus, summarizeRow } from './summary.mjs';

const kind = (row) => FAILURE_KINDS.find((k) => k.row === row);
const trial = (over) => ({
  ok: true,
  trial: 1,
  failedOver: true,
  writableMs: 14_000,
  clientMs: 14_100,
  dbGapMs: 14_000,
  clientGapMs: 14_100,
  acked: 100,
  lost: 0,
  splitBrain: [],
  blindSpans: [],
  ...over,
});

describe('bench:failures accounting', () => {
  it('counts a trial of a failover row that never failed over as failed, and leaves its time out of nothing', () => {
    const results = [trial({ trial: 1 }), trial({ trial: 2, failedOver: false, writableMs: null, clientMs: null })];
    const row = summarizeRow(results, { failoverExpected: true });
    assert.equal(row.okTrials, 1, 'the trial without a failover is not an OK trial');
    assert.equal(row.trials, 2);
    assert.deepEqual(row.errors, ['no failover: no other member took a write']);
    assert.equal(row.writableMs.n, 1);
    const { status, reasons } = runStatus([{ row: 3, kanri: row }], ['kanri'], 2);
    assert.equal(status, 'failed');
    assert.deepEqual(reasons, ['row 3 kanri: 1 of 2 trials failed']);
  });

  it('counts a failover the client never followed as failed', () => {
    const judged = judgeTrial(trial({ failedOver: false, writableMs: 18_154.8 }), true);
    assert.equal(judged.ok, false);
    assert.match(judged.error, /another member took writes after 18\.15 s, but the client stayed on the old primary/);
  });

  it('leaves rows where no failover is expected as they were', () => {
    const t = trial({ failedOver: false, writableMs: null, clientMs: null, dbGapMs: 1_500 });
    assert.equal(judgeTrial(t, false), t);
    assert.equal(summarizeRow([t], { failoverExpected: false }).okTrials, 1);
  });

  it('expects no failover on row 4 from a system whose failsafe mode lets the replicas vouch for the primary', () => {
    assert.equal(expectsFailover(kind(4), { failsafeMode: true }), false);
    assert.equal(expectsFailover(kind(4), { failsafe_mode: false }), true);
    assert.equal(expectsFailover(kind(3), { failsafeMode: true }), true, 'a power loss moves the primary whatever');
    assert.equal(expectsFailover(kind(7), { failsafeMode: true }), true);
    assert.equal(expectsFailover(kind(5), {}), false);
  });

  it('judges a stored run again: failures-2026-12-02T0224.json said ok, though row 7 never failed over on either side', () => {
    const stored = JSON.parse(
      readFileSync(new URL('../results/failures-2026-12-02T0224.json', import.meta.url), 'utf8'),
    );
    assert.equal(stored.status, 'ok', 'the run as it reported itself');
    // As it ran: Kanri with its failsafe mode on (its default), Patroni with its defaults.
    const settings = { kanri: { failsafeMode: true }, patroni: { failsafe_mode: false } };
    const rows = stored.rows.map((r) =>
      r.notMeasured
        ? r
        : {
            ...r,
            ...Object.fromEntries(
              stored.systems.map((name) => [
                name,
                summarizeRow(r[name].trialResults, { failoverExpected: expectsFailover(kind(r.row), settings[name]) }),
              ]),
            ),
          },
    );
    const row = (n) => rows.find((r) => r.row === n);
    assert.equal(row(7).kanri.okTrials, 0);
    assert.equal(row(7).patroni.okTrials, 0);
    assert.equal(row(6).patroni.okTrials, 1, 'the client followed Patroni in 1 of 3');
    assert.equal(row(4).kanri.okTrials, 3, "Kanri's failsafe mode keeps the cut-off primary: no failover expected");
    const { status, reasons } = runStatus(rows, stored.systems, stored.trials);
    assert.equal(status, 'failed');
    assert.deepEqual(reasons, [
      'row 6 patroni: 2 of 3 trials failed',
      'row 7 patroni: 3 of 3 trials failed',
      'row 7 kanri: 3 of 3 trials failed',
    ]);
    assert.match(formatTable(rows, stored.systems), /failed: no failover: no other member took a write/);
  });

  it('gives no split-brain count where the watcher was blind, and fails the run', () => {
    const blind = [{ instance: 'm2@127.1.0.2:5432', fromMs: 1_000, ms: 12_000 }];
    const row = summarizeRow([trial({ blindSpans: blind, splitBrain: [] })], { failoverExpected: true });
    assert.equal(row.splitBrainMoments, null, 'not "0": the watcher did not look at m2 for 12 s');
    assert.deepEqual(row.blindSpans, [{ trial: 1, ...blind[0] }]);
    const { status, reasons } = runStatus([{ row: 3, kanri: row }], ['kanri'], 1);
    assert.equal(status, 'failed');
    assert.deepEqual(reasons, ['row 3 kanri: the split-brain watcher was blind (1 spans)']);
    assert.match(formatTable([{ row: 3, title: 'host power loss', kanri: row }], ['kanri']), /0, blind/);
    assert.match(
      formatTable([{ row: 3, title: 'host power loss', kanri: row }], ['kanri']),
      /split-brain watcher blind: m2@127\.1\.0\.2:5432: no probe for 12\.0 s/,
    );
  });
});
