import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binDirFor, majorOfVersionLine, planUpgradeBoot, type UpgradeBootInput } from './major-upgrade-plan.js';

const input = (over: Partial<UpgradeBootInput>): UpgradeBootInput => ({
  dataMajor: 15,
  binaryMajor: 15,
  allowedFrom: undefined,
  marker: undefined,
  controlMoved: false,
  ...over,
});

describe('planUpgradeBoot', () => {
  it('does nothing when data and binaries agree, or there is no data', () => {
    assert.deepEqual(planUpgradeBoot(input({})), { kind: 'none' });
    assert.deepEqual(planUpgradeBoot(input({ dataMajor: undefined, binaryMajor: 16 })), { kind: 'none' });
  });
  it('upgrades older data only on the Pod made for it, from exactly that major', () => {
    assert.deepEqual(planUpgradeBoot(input({ binaryMajor: 16, allowedFrom: 15 })), {
      kind: 'upgrade',
      from: 15,
      to: 16,
    });
    const refused = planUpgradeBoot(input({ binaryMajor: 16 }));
    assert.equal(refused.kind, 'refuse');
    assert.match(refused.kind === 'refuse' ? refused.reason : '', /allow-major-upgrade=16/);
    assert.equal(planUpgradeBoot(input({ binaryMajor: 16, allowedFrom: 14 })).kind, 'refuse');
  });
  it('never runs newer data on older binaries', () => {
    const step = planUpgradeBoot(input({ dataMajor: 16, binaryMajor: 15, allowedFrom: 16 }));
    assert.equal(step.kind, 'refuse');
    assert.match(step.kind === 'refuse' ? step.reason : '', /cannot run on older binaries/);
  });
  it('rolls an interrupted upgrade back when the old binaries come back', () => {
    assert.deepEqual(planUpgradeBoot(input({ controlMoved: true })), { kind: 'rollBack' });
    assert.deepEqual(planUpgradeBoot(input({ marker: { from: 15, to: 16, stage: 'linking' } })), { kind: 'rollBack' });
  });
  it('finishes a committed upgrade, whatever PGDATA holds now, and only on the new binaries', () => {
    const marker = { from: 15, to: 16, stage: 'committed' as const };
    assert.deepEqual(planUpgradeBoot(input({ marker, binaryMajor: 16, dataMajor: undefined })), { kind: 'finish' });
    assert.deepEqual(planUpgradeBoot(input({ marker, binaryMajor: 16, dataMajor: 15 })), { kind: 'finish' });
    const back = planUpgradeBoot(input({ marker, binaryMajor: 15 }));
    assert.equal(back.kind, 'refuse');
    assert.match(back.kind === 'refuse' ? back.reason : '', /past the point of no return/);
  });
});

describe('binDirFor and majorOfVersionLine', () => {
  it('reads KANRI_PG_BIN_DIRS, else Debian’s layout', () => {
    assert.equal(binDirFor(14, '14=/opt/14/bin; 16=/opt/16/bin'), '/opt/14/bin');
    assert.equal(binDirFor(16, '14=/opt/14/bin; 16=/opt/16/bin'), '/opt/16/bin');
    assert.equal(binDirFor(13, '14=/opt/14/bin'), '/usr/lib/postgresql/13/bin');
    assert.equal(binDirFor(15, undefined), '/usr/lib/postgresql/15/bin');
  });
  it('takes the major of postgres --version', () => {
    assert.equal(majorOfVersionLine('postgres (PostgreSQL) 16.15\n'), 16);
    assert.equal(majorOfVersionLine('postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'), 15);
    assert.equal(majorOfVersionLine('nonsense'), undefined);
  });
});
