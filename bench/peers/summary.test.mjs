import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readyAddresses } from './endpoint-watch.mjs';
import { clientErrors, gapAround, gapCutShort, lostByMember } from './fault-trial.mjs';
import { findPostmaster } from './pod-processes.mjs';
import { podTimeline } from './ready-memory.mjs';
import { PEER_ROWS, parseRows } from './rows.mjs';
import { formatTable, pairAgainstKanri, runStatus, summarizeTrials } from './summary.mjs';

const trial = (gap, extra = {}) => ({
  ok: true,
  clientGapMs: gap,
  clientMs: gap + 10,
  writableMs: gap - 100,
  acked: 100,
  lost: 0,
  primaryChanged: true,
  splitBrain: [],
  blindSpans: [],
  ...extra,
});

test('a fault row counts only the trials that ran, lost commits over all of them, and blindness as unknown split brain', () => {
  const row = summarizeTrials(
    [trial(900), trial(1_100, { lost: 2 }), { ok: false, error: 'no resume' }, trial(1_000, { blindSpans: [{}] })],
    'fault',
  );
  assert.deepEqual(row.clientGapMs, { median: 1_000, max: 1_100, n: 3 });
  assert.equal(row.okTrials, 3);
  assert.equal(row.trials, 4);
  assert.equal(row.commitsLost, 2);
  assert.equal(row.commitsAcked, 300);
  assert.equal(row.splitBrainMoments, null, 'a blind watcher cannot vouch for zero');
  assert.deepEqual(row.errors, ['no resume']);
});

test('paired differences put Kanri first and count a failed peer trial against the peer', () => {
  const paired = pairAgainstKanri(
    { kanri: [trial(800), trial(900)], patroni: [trial(1_000), { ok: false, error: 'x' }] },
    'fault',
  );
  assert.equal(paired.patroni.pairs, 1);
  assert.equal(paired.patroni.medianMs, -200);
  assert.equal(paired.patroni.secondFailed, 1);
  assert.equal(paired.patroni.firstLower, 2);
});

test('the run fails on a failed trial or a blind watcher, and passes rows not measured', () => {
  const ok = summarizeTrials([trial(900)], 'fault');
  const bad = summarizeTrials([trial(900), { ok: false, error: 'e' }], 'fault');
  assert.equal(
    runStatus(
      [
        { row: 1, kanri: ok },
        { row: 6, notMeasured: 'why' },
      ],
      ['kanri'],
    ).status,
    'ok',
  );
  const failed = runStatus([{ row: 2, mode: 'sync', kanri: bad }], ['kanri']);
  assert.equal(failed.status, 'failed');
  assert.match(failed.reasons[0], /row 2 \(sync\) kanri: 1 of 2 trials failed/);
  assert.match(runStatus([{ row: 1 }], ['patroni']).reasons[0], /not run/);
});

test('the table names each system with its gap and lost commits', () => {
  const rows = [
    { row: 1, title: 'primary Pod deleted', kind: 'fault', kanri: summarizeTrials([trial(1_234)], 'fault') },
  ];
  const text = formatTable(rows, ['kanri']);
  assert.match(text, /kanri\s+1\/1\s+gap s 1\.23 \(1\.23\)/);
  assert.match(text, /lost 0\/100/);
});

test('the gap around a fault ends at the first acknowledgement after it', () => {
  assert.deepEqual(gapAround([0, 10, 20, 500, 510], 15, 600), { gap: 480, endedAt: 500 });
  // Still open at the end: no acknowledgement ended it.
  assert.deepEqual(gapAround([0, 10], 15, 600), { gap: 590, endedAt: null });
});

test('lost commits are counted by the member that acknowledged them, named by its Pod', () => {
  const lost = [
    { seq: 1, server: '10.0.0.5' },
    { seq: 2, server: '10.0.0.5' },
    { seq: 3, server: '10.0.0.7' },
    { seq: 4 },
  ];
  assert.deepEqual(lostByMember(lost, { '10.0.0.5': 'peers-1' }), { 'peers-1': 2, '10.0.0.7': 1, unknown: 1 });
});

test('a gap is cut short when the primary moved again after the window; such a trial keeps its lost commits but gives no gap', () => {
  assert.equal(gapCutShort('peers-1', 'peers-1'), null);
  assert.equal(gapCutShort('peers-1', undefined), null, 'an address that is no member says nothing');
  assert.match(gapCutShort('peers-1', 'peers-2'), /moved again .*peers-1 → peers-2/);
  const cut = { ...trial(null), clientMs: null, lost: 2, gapCutShort: 'cut' };
  const s = summarizeTrials([trial(900), cut, trial(1_100)], 'fault');
  assert.deepEqual(s.clientGapMs, { median: 1_000, max: 1_100, n: 2 });
  assert.equal(s.okTrials, 3);
  assert.equal(s.commitsLost, 2);
  const pairs = pairAgainstKanri({ kanri: [trial(500), trial(500)], patroni: [trial(900), cut] }, 'fault').patroni;
  assert.deepEqual(pairs.diffsMs, [-400]);
  assert.equal(pairs.firstLower, 1, 'the cut-short pair counts for neither side');
});

test("the client's failures inside the window are counted by kind, the first ones timed from its start", () => {
  const errors = [
    { at: 5, step: 'insert', reason: 'before' },
    { at: 110, step: 'insert', reason: 'ECONNRESET' },
    { at: 120, step: 'connect', reason: 'ECONNREFUSED' },
    { at: 2_130, step: 'connect', reason: 'Connection terminated due to connection timeout' },
    { at: 2_150, step: 'connect', reason: 'ECONNREFUSED' },
    { at: 9_000, step: 'insert', reason: 'after' },
  ];
  const out = clientErrors(errors, 100, 3_000, 2);
  assert.deepEqual(out.counts, {
    'insert ECONNRESET': 1,
    'connect ECONNREFUSED': 2,
    'connect Connection terminated due to connection timeout': 1,
  });
  assert.deepEqual(out.first, [
    { ms: 10, step: 'insert', reason: 'ECONNRESET' },
    { ms: 20, step: 'connect', reason: 'ECONNREFUSED' },
  ]);
});

test("a Pod's timeline is each stage's last transition to True, in seconds after the start", () => {
  const start = Date.parse('2026-12-07T06:00:00Z');
  const pod = {
    metadata: { name: 'p-1', creationTimestamp: '2026-12-07T06:00:01Z' },
    status: {
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-12-07T06:00:02Z' },
        { type: 'Initialized', status: 'True', lastTransitionTime: '2026-12-07T06:00:04Z' },
        { type: 'ContainersReady', status: 'False', lastTransitionTime: '2026-12-07T06:00:04Z' },
      ],
    },
  };
  assert.deepEqual(podTimeline(pod, start), {
    pod: 'p-1',
    created: 1,
    PodScheduled: 2,
    Initialized: 4,
    ContainersReady: null,
    Ready: null,
  });
});

test('the postmaster is the one postgres whose parent is not postgres', () => {
  const table = [
    { pid: 1, ppid: 0, comm: 'node' },
    { pid: 7, ppid: 1, comm: 'postgres' },
    { pid: 9, ppid: 7, comm: 'postgres' },
    { pid: 12, ppid: 7, comm: 'sh' },
  ];
  assert.equal(findPostmaster(table), 7);
  assert.equal(findPostmaster(table.filter((p) => p.pid !== 7 && p.pid !== 9)), undefined);
  // Two unrelated postmasters in one Pod: which one is meant is unknown.
  assert.equal(findPostmaster([...table, { pid: 20, ppid: 1, comm: 'postgres' }]), undefined);
});

test('--rows accepts known rows in any order and names an unknown one', () => {
  assert.deepEqual(parseRows('4, 1,1'), [1, 4]);
  assert.throws(() => parseRows('1,9'), /no row 9/);
  assert.equal(PEER_ROWS.length, 8);
});

test('the ready addresses of a Service leave out endpoints that are not ready', () => {
  const slices = [
    { endpoints: [{ addresses: ['10.1.0.5'], conditions: { ready: true } }] },
    {
      endpoints: [
        { addresses: ['10.1.0.4'], conditions: { ready: false, terminating: true } },
        { addresses: ['10.1.0.2'] },
      ],
    },
  ];
  assert.deepEqual(readyAddresses(slices), ['10.1.0.2', '10.1.0.5']);
  assert.deepEqual(readyAddresses([{}]), []);
});

test('the backup row: MB/s medians per system, paired on backup and restore time, and a system without backups not counted as failed', () => {
  const backup = (backupMs, restoreMs) => ({
    ok: true,
    databaseBytes: 1e9,
    backupMs,
    backupMBps: 1e3 / (backupMs / 1000),
    systemBackupMs: backupMs - 500,
    storedBytes: 5e8,
    restoreMs,
    restoreMBps: 1e3 / (restoreMs / 1000),
  });
  const results = { kanri: [backup(20_000, 40_000)], 'cloudnative-pg': [backup(10_000, 50_000)] };
  const kanri = summarizeTrials(results.kanri, 'backup');
  assert.deepEqual(kanri.backupMBps, { median: 50, max: 50, n: 1 });
  assert.deepEqual(kanri.restoreMs, { median: 40_000, max: 40_000, n: 1 });
  assert.equal(pairAgainstKanri(results, 'backup')['cloudnative-pg'].medianMs, 10_000);
  assert.equal(pairAgainstKanri(results, 'backup', 'restoreMs')['cloudnative-pg'].medianMs, -10_000);
  const row = {
    row: 6,
    title: 'backup',
    kind: 'backup',
    kanri,
    'cloudnative-pg': summarizeTrials(results['cloudnative-pg'], 'backup'),
    patroni: { notApplicable: 'no backups of its own' },
  };
  assert.equal(runStatus([row], ['kanri', 'cloudnative-pg', 'patroni']).status, 'ok');
  const table = formatTable([row], ['kanri', 'cloudnative-pg', 'patroni']);
  assert.match(table, /kanri .* 1000 MB: backup s 20\.00 \(20\.00\) +50 MB\/s/);
  assert.match(table, /patroni +not applicable: no backups of its own/);
  const failed = { ...row, kanri: summarizeTrials([{ ok: false, error: 'stanza' }], 'backup') };
  assert.equal(runStatus([failed], ['kanri', 'cloudnative-pg', 'patroni']).status, 'failed');
});
