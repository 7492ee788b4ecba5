import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MANAGED_ROLE_COMMENT, markRoleSql, planMarks, planRemovedUsers } from './removed-users-plan.js';

describe('planRemovedUsers', () => {
  const managed = [
    { name: 'app', ownedDatabases: ['app'] },
    { name: 'temp', ownedDatabases: [] },
    { name: 'owner', ownedDatabases: ['a', 'b'] },
  ];

  it('keeps every removed role under Retain, saying why, and never lists a declared one', () => {
    const { drop, kept } = planRemovedUsers(managed, new Set(['app']), 'Retain');
    assert.deepEqual(drop, []);
    assert.deepEqual(
      kept.map((u) => u.name),
      ['owner', 'temp'],
    );
    assert.match(kept[0]?.reason ?? '', /userRemovalPolicy is Retain/);
  });

  it('under Drop, drops a removed role that owns no database and keeps one that owns some, naming them', () => {
    const { drop, kept } = planRemovedUsers(managed, new Set(['app']), 'Drop');
    assert.deepEqual(drop, [{ name: 'temp', sql: 'DROP ROLE "temp"' }]);
    assert.deepEqual(kept, [
      { name: 'owner', reason: 'owns database "a", "b": drop it or change its owner, and the role is dropped' },
    ]);
  });

  it('under Drop, drops nothing while spec.users has an entry it cannot read, saying why', () => {
    const { drop, kept } = planRemovedUsers(managed, new Set(['app']), 'Drop', { unreadableEntries: true });
    assert.deepEqual(drop, []);
    assert.deepEqual(
      kept.map((u) => u.name),
      ['owner', 'temp'],
    );
    assert.match(kept[1]?.reason ?? '', /invalid entries: nothing is dropped/);
  });

  it('quotes the role it drops', () => {
    const { drop } = planRemovedUsers([{ name: 'we"ird', ownedDatabases: [] }], new Set(), 'Drop');
    assert.equal(drop[0]?.sql, 'DROP ROLE "we""ird"');
  });
});

describe('planMarks', () => {
  it('marks declared roles that lack the mark, quoting name and comment', () => {
    assert.deepEqual(planMarks(['app', 'new'], new Set(['app'])), [markRoleSql('new')]);
    assert.equal(markRoleSql("o'k"), `COMMENT ON ROLE "o'k" IS '${MANAGED_ROLE_COMMENT}'`);
  });
});
