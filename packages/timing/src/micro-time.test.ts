import assert from 'node:assert/strict';
import { it } from 'node:test';
import { formatMicroTime } from './micro-time.js';

it('formats MicroTime with six fractional digits, the milliseconds first', () => {
  assert.equal(formatMicroTime(new Date(0)), '1970-01-01T00:00:00.000000Z');
  assert.equal(formatMicroTime(new Date('2025-03-04T05:06:07.089Z')), '2025-03-04T05:06:07.089000Z');
  assert.match(formatMicroTime(new Date()), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
});
