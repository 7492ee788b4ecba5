import assert from 'node:assert/strict';
import { it } from 'node:test';
import { certificateLifetime, renewalDueInMs } from './certificate-lifetime.js';

it('defaults to a year renewed 30 days ahead, and renews a short lifetime when a third remains', () => {
  assert.deepEqual(certificateLifetime({}), { validityDays: 365, renewBeforeDays: 30 });
  const short = certificateLifetime({ KANRI_CERTIFICATE_VALIDITY_SECONDS: '90' });
  assert.equal(Math.round(short.validityDays * 86_400), 90);
  assert.equal(Math.round(short.renewBeforeDays * 86_400), 30);
  assert.equal(
    certificateLifetime({ KANRI_CERTIFICATE_VALIDITY_SECONDS: String(10 * 365 * 86_400) }).renewBeforeDays,
    30,
  );
  for (const bad of ['59', '1.5', 'a day', '-60']) {
    assert.throws(
      () => certificateLifetime({ KANRI_CERTIFICATE_VALIDITY_SECONDS: bad }),
      /KANRI_CERTIFICATE_VALIDITY_SECONDS must be a whole number of seconds, at least 60/,
    );
  }
});

it('says when the first certificate enters its renewal window', () => {
  const now = new Date('2026-12-02T12:00:00Z');
  const lifetime = { renewBeforeDays: 30 / 86_400 }; // 30 s
  assert.equal(renewalDueInMs(['Dec  2 12:01:00 2026 GMT', 'Dec  2 12:05:00 2026 GMT'], lifetime, now), 30_000);
  assert.equal(renewalDueInMs(['Dec  2 12:00:10 2026 GMT'], lifetime, now), 0, 'already due');
  assert.equal(renewalDueInMs([undefined, 'not a date'], lifetime, now), undefined);
});
