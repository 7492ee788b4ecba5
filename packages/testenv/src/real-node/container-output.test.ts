import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { criLogLines } from './container-output.js';

describe('criLogLines', () => {
  it('removes the kubelet’s time, stream and tag from each line', () => {
    const text = [
      '2026-12-04T02:00:00.123456789Z stdout F {"msg":"started"}',
      '2026-12-04T02:00:01.5Z stderr F warning: something',
      '',
    ].join('\n');
    assert.deepEqual(criLogLines(text), ['{"msg":"started"}', 'warning: something']);
  });

  it('joins the fragments of a long line, and keeps a line that ends in a fragment', () => {
    const text = [
      '2026-12-04T02:00:00Z stdout P {"a":',
      '2026-12-04T02:00:00Z stdout P "b",',
      '2026-12-04T02:00:00Z stdout F "c":1}',
      '2026-12-04T02:00:02Z stdout P cut short',
    ].join('\n');
    assert.deepEqual(criLogLines(text), ['{"a":"b","c":1}', 'cut short']);
  });

  it('keeps an empty printed line, and a line not in the format as it is', () => {
    assert.deepEqual(criLogLines('2026-12-04T02:00:00Z stdout F \nplain text\n'), ['', 'plain text']);
  });
});
