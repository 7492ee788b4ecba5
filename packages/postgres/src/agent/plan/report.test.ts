import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildReport, servingProblem, shouldWriteReport } from './report.js';

const now = new Date('2026-01-01T00:00:00Z');
const primaryObservation = {
  connected: true,
  inRecovery: false,
  systemIdentifier: '7300000000000000001',
  timeline: 2,
  currentLsn: '0/3000060',
};

it('reports a leading primary as ready with its LSN and no lag', () => {
  assert.deepEqual(buildReport({ role: 'primary', leading: true, observation: primaryObservation, now }), {
    role: 'primary',
    ready: true,
    timeline: 2,
    systemIdentifier: '7300000000000000001',
    receivedLsn: '0/3000060',
    replayedLsn: '0/3000060',
    lagBytes: 0,
    updatedAt: '2026-01-01T00:00:00.000Z',
  });
});

it('says why an instance is not ready', () => {
  const notLeading = buildReport({ role: 'primary', leading: false, observation: primaryObservation, now });
  assert.equal(notLeading.ready, false);
  assert.match(notLeading.message ?? '', /Lease/);
  const down = buildReport({ role: 'replica', leading: false, observation: { connected: false }, now });
  assert.deepEqual(
    [down.ready, down.message, down.receivedLsn],
    [false, 'postgres is not accepting connections', '0/0'],
  );
  const phase = buildReport({
    role: 'replica',
    leading: false,
    observation: { connected: false },
    phaseMessage: 'cloning',
    now,
  });
  assert.equal(phase.message, 'cloning');
  const notStreaming = buildReport({
    role: 'replica',
    leading: false,
    observation: { connected: true, inRecovery: true, receiverStatus: null },
    now,
  });
  assert.equal(notStreaming.message, 'WAL receiver is not running');
});

it("measures a replica's lag against the primary's furthest known LSN", () => {
  const report = buildReport({
    role: 'replica',
    leading: false,
    observation: {
      connected: true,
      inRecovery: true,
      timeline: 2,
      systemIdentifier: '7300000000000000001',
      receiveLsn: '0/3000100',
      replayLsn: '0/3000000',
      receiverStatus: 'streaming',
      senderEndLsn: '0/3000200',
    },
    primaryLsn: '0/3000180',
    now,
  });
  assert.equal(report.ready, true);
  assert.equal(report.lagBytes, 0x200);
  assert.deepEqual([report.receivedLsn, report.replayedLsn], ['0/3000100', '0/3000000']);
});

it('writes at once on a change that matters, otherwise at most every refresh period', () => {
  const a = buildReport({ role: 'primary', leading: true, observation: primaryObservation, now });
  const moved = { ...a, receivedLsn: '0/4000000', replayedLsn: '0/4000000', updatedAt: 'later' };
  assert.equal(shouldWriteReport(undefined, a, 0), true);
  assert.equal(shouldWriteReport({ report: a, atMs: 0 }, moved, 5_000), false);
  assert.equal(shouldWriteReport({ report: a, atMs: 0 }, moved, 10_000), true);
  assert.equal(shouldWriteReport({ report: a, atMs: 0 }, { ...a, ready: false, message: 'x' }, 1), true);
  assert.equal(shouldWriteReport({ report: a, atMs: 0 }, { ...a, timeline: 3 }, 1), true);
});

it('keeps a replica serving while its primary is gone, unlike its report', () => {
  const orphan = { connected: true, inRecovery: true, receiverStatus: null, replayLsn: '0/3000000' };
  assert.equal(buildReport({ role: 'replica', leading: false, observation: orphan, now }).ready, false);
  assert.equal(servingProblem({ role: 'replica', leading: false, observation: orphan }), undefined);
  // A primary serves only once promoted and holding the Lease; nobody serves without postgres.
  assert.match(servingProblem({ role: 'primary', leading: true, observation: orphan }) ?? '', /recovery/);
  assert.match(servingProblem({ role: 'primary', leading: false, observation: primaryObservation }) ?? '', /Lease/);
  assert.equal(servingProblem({ role: 'primary', leading: true, observation: primaryObservation }), undefined);
  assert.match(
    servingProblem({ role: 'replica', leading: false, observation: { connected: false } }) ?? '',
    /connections/,
  );
  assert.match(
    servingProblem({ role: 'replica', leading: false, observation: primaryObservation }) ?? '',
    /not a standby/,
  );
});
