import assert from 'node:assert/strict';
import { it } from 'node:test';
import { encodeLeaderHistory, LEADER_HISTORY_ANNOTATION, leadRefusal, readLeaderHistory } from './leader-history.js';

it('reads back what it encodes, and treats a malformed record as none', () => {
  const history = { timeline: 3, lsn: '0/3000060', holder: 'db-i-1' };
  assert.deepEqual(readLeaderHistory({ [LEADER_HISTORY_ANNOTATION]: encodeLeaderHistory(history) }), history);
  assert.equal(readLeaderHistory({ [LEADER_HISTORY_ANNOTATION]: '{"timeline":"3","holder":"x"}' }), undefined);
  assert.equal(readLeaderHistory({ [LEADER_HISTORY_ANNOTATION]: 'not json' }), undefined);
  assert.equal(readLeaderHistory(undefined), undefined);
});

it('refuses a candidate whose timeline is behind the recorded one, and only that one', () => {
  const recorded = { timeline: 3, holder: 'db-i-1', lsn: '0/3000060' };
  assert.match(
    leadRefusal(recorded, 2) ?? '',
    /timeline 2, behind the leader's timeline 3 \(recorded by db-i-1 at 0\/3000060\)/,
  );
  assert.equal(leadRefusal(recorded, 3), undefined);
  assert.equal(leadRefusal(recorded, 4), undefined);
  assert.equal(leadRefusal(undefined, 1), undefined, 'no record: as before');
});
