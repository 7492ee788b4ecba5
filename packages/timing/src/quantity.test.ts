import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  NON_NEGATIVE_QUANTITY_PATTERN,
  parseQuantity,
  QUANTITY_PATTERN,
  quantityMilliValue,
  quantityNanos,
  quantityValue,
} from './quantity.js';

describe('parseQuantity', () => {
  it('reads binary suffixes Ki to Ei', () => {
    assert.equal(parseQuantity('1Ki'), 1024);
    assert.equal(parseQuantity('1Mi'), 2 ** 20);
    assert.equal(parseQuantity('2Gi'), 2 * 2 ** 30);
    assert.equal(parseQuantity('1Ti'), 2 ** 40);
    assert.equal(parseQuantity('1Pi'), 2 ** 50);
    assert.equal(parseQuantity('1Ei'), 2 ** 60);
    assert.equal(parseQuantity('1.5Gi'), 1.5 * 2 ** 30);
  });

  it('reads decimal suffixes n, u, m, k to E, and plain numbers', () => {
    assert.equal(parseQuantity('500m'), 0.5);
    assert.equal(parseQuantity('250u'), 0.00025);
    assert.equal(parseQuantity('3n'), 3e-9);
    assert.equal(parseQuantity('20k'), 20_000);
    assert.equal(parseQuantity('500M'), 500_000_000);
    assert.equal(parseQuantity('10G'), 10e9);
    assert.equal(parseQuantity('1T'), 1e12);
    assert.equal(parseQuantity('1P'), 1e15);
    assert.equal(parseQuantity('1E'), 1e18);
    assert.equal(parseQuantity('1073741824'), 2 ** 30);
    assert.equal(parseQuantity('0'), 0);
  });

  it('reads exponents, signs and the short number forms', () => {
    assert.equal(parseQuantity('1e3'), 1000);
    assert.equal(parseQuantity('2E3'), 2000, 'E followed by digits is an exponent, alone it is exa');
    assert.equal(parseQuantity('1.5e+3'), 1500);
    assert.equal(parseQuantity('15e-1'), 1.5);
    assert.equal(parseQuantity('-1Gi'), -(2 ** 30));
    assert.equal(parseQuantity('+2k'), 2000);
    assert.equal(parseQuantity('.5'), 0.5);
    assert.equal(parseQuantity('5.'), 5);
  });

  it('refuses what resource.Quantity refuses', () => {
    for (const text of [
      '',
      ' 1Gi',
      '1Gi ',
      '1 Gi',
      'lots',
      '1K',
      '1gi',
      '1e',
      '1e3.5',
      '.',
      '+',
      '1..2',
      '1Ki2',
      '0x10',
      '--1',
    ]) {
      assert.equal(parseQuantity(text), undefined, JSON.stringify(text));
      assert.equal(QUANTITY_PATTERN.test(text), false, JSON.stringify(text));
    }
  });
});

describe('exact values, rounded as resource.Quantity rounds', () => {
  it('computes without float error', () => {
    assert.equal(quantityValue('1.1k'), 1100, '1.1 × 1000 in floats is 1100.0000000000002');
    assert.equal(quantityNanos('0.3'), 300_000_000n);
    assert.equal(quantityMilliValue('0.1'), 100);
  });

  it('rounds Value() and MilliValue() up, away from zero', () => {
    assert.equal(quantityValue('1500m'), 2);
    assert.equal(quantityValue('1.1'), 2);
    assert.equal(quantityValue('-1500m'), -2);
    assert.equal(quantityValue('1.5Gi'), 1_610_612_736);
    assert.equal(quantityMilliValue('1n'), 1);
    assert.equal(quantityMilliValue('250m'), 250);
    assert.equal(quantityMilliValue('2'), 2000);
  });

  it('rounds what is finer than a nano up to one nano, and caps at 2^63-1', () => {
    assert.equal(quantityNanos('0.1n'), 1n);
    assert.equal(quantityNanos('-0.1n'), -1n);
    assert.equal(quantityNanos('1e-30'), 1n);
    assert.equal(quantityNanos('1e-99999999999'), 1n);
    assert.equal(quantityNanos('0e-99999999999'), 0n);
    assert.equal(quantityNanos('1e99999999999'), (2n ** 63n - 1n) * 10n ** 9n);
    assert.equal(quantityValue('9Ei'), 2 ** 63, 'capped at 2^63-1, which as a number is 2^63');
  });
});

describe('NON_NEGATIVE_QUANTITY_PATTERN', () => {
  it('is the quantity grammar without a minus', () => {
    for (const text of ['20Gi', '+1G', '1e9', '.5Ti']) assert.ok(NON_NEGATIVE_QUANTITY_PATTERN.test(text), text);
    for (const text of ['-1Gi', '1 Gi', 'Gi']) assert.equal(NON_NEGATIVE_QUANTITY_PATTERN.test(text), false, text);
  });
});
