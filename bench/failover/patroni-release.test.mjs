// Which Patroni the failover benchmarks run, and what it makes of their settings.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  PATRONI_DCS,
  PATRONI_RELEASES,
  parsePatroniVersion,
  patroniTimings,
  pinnedVersion,
  versionAtLeast,
  watchdogSetting,
} from './patroni-release.mjs';

describe('the Patroni the failover benchmarks run', () => {
  it('pins Patroni 4.1.x with its etcd3 extra in the committed requirements file', () => {
    const text = readFileSync(new URL(`../../${PATRONI_RELEASES.patroni.requirements}`, import.meta.url), 'utf8');
    assert.match(pinnedVersion(text, 'patroni') ?? '', /^4\.1\.\d+$/);
    assert.match(text, /^patroni\[etcd3\]==/m);
    // Every line a pin: an unpinned dependency would let two runs run different code.
    const lines = text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    for (const line of lines) assert.match(line, /^[A-Za-z0-9._-]+(\[[^\]]+\])?==\S+$/, line);
  });

  it('reads a pin with or without extras, skipping comments and other packages', () => {
    const text =
      '# patroni==1.0.0 in a comment\npsycopg==3.3.9\nPatroni[etcd3,psycopg3] == 4.1.5 ; python_version >= "3.9"\n';
    assert.equal(pinnedVersion(text, 'patroni'), '4.1.5');
    assert.equal(pinnedVersion(text, 'psycopg'), '3.3.9');
    assert.equal(pinnedVersion(text, 'click'), null);
  });

  it("reads the version from either form of Patroni's --version", () => {
    assert.equal(parsePatroniVersion('patroni 3.0.2\n'), '3.0.2');
    assert.equal(parsePatroniVersion('__main__.py 4.1.5'), '4.1.5');
    assert.equal(parsePatroniVersion('Traceback (most recent call last):'), null);
    assert.equal(parsePatroniVersion(null), null);
  });

  it('compares dotted versions numerically', () => {
    assert.equal(versionAtLeast('4.1.5', '3.2.0'), true);
    assert.equal(versionAtLeast('3.10.0', '3.2.0'), true);
    assert.equal(versionAtLeast('3.2.0', '3.2.0'), true);
    assert.equal(versionAtLeast('3.0.2', '3.2.0'), false);
  });
});

describe("Patroni's HA timings", () => {
  it("gives 3.0.2 Kanri's timings unchanged", () => {
    assert.deepEqual(patroniTimings(PATRONI_DCS, '3.0.2'), {
      ttl: 15,
      loop_wait: 2,
      retry_timeout: 10,
      changed: [],
    });
  });

  it('gives Patroni 4 the nearest timings it keeps: the same renew period, its ttl floor, a shorter retry_timeout', () => {
    const t = patroniTimings(PATRONI_DCS, '4.1.5');
    assert.deepEqual([t.ttl, t.loop_wait, t.retry_timeout], [20, 2, 9]);
    assert.equal(t.changed.length, 2);
    assert.match(t.changed[0], /^ttl 15 → 20/);
    assert.match(t.changed[1], /^retry_timeout 10 → 9/);
  });

  it("meets Patroni's rule for any wish, so Patroni never rewrites them behind the benchmark's back", () => {
    for (const ttl of [10, 15, 20, 30])
      for (const loop_wait of [0, 1, 2, 10])
        for (const retry_timeout of [1, 3, 10, 20]) {
          const t = patroniTimings({ ttl, loop_wait, retry_timeout }, '4.0.0');
          assert.ok(t.ttl >= 20 && t.loop_wait >= 1 && t.retry_timeout >= 3, JSON.stringify(t));
          assert.ok(t.loop_wait + 2 * t.retry_timeout <= t.ttl, JSON.stringify(t));
          assert.equal(t.loop_wait, Math.max(loop_wait, 1));
        }
  });

  it('leaves timings Patroni already accepts alone', () => {
    assert.deepEqual(patroniTimings({ ttl: 30, loop_wait: 10, retry_timeout: 10 }, '4.1.5').changed, []);
  });
});

describe("Patroni's watchdog here", () => {
  it('is off, with the reason, whether or not the machine has a device', () => {
    const absent = watchdogSetting({ devicePresent: false });
    assert.equal(absent.mode, 'off');
    assert.equal(absent.available, false);
    assert.match(absent.why, /no \/dev\/watchdog/);
    const present = watchdogSetting({ devicePresent: true });
    assert.equal(present.mode, 'off');
    assert.equal(present.available, true);
    assert.match(present.why, /reset the whole machine/);
  });
});
