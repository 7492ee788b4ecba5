import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ListDecoder } from './list-decoder.js';

/** Decodes `text` fed in chunks of `size` bytes; returns the list with its items put back. */
function decode(text: string, size: number): Record<string, unknown> {
  const items: unknown[] = [];
  const decoder = new ListDecoder<unknown>((item) => items.push(item));
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) decoder.write(bytes.subarray(i, i + size));
  return { ...decoder.end(), items };
}

describe('ListDecoder', () => {
  const list = {
    kind: 'ConfigMapList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '42', continue: 'x"y' },
    items: [
      {
        metadata: { name: 'a', annotations: { items: '[{"not": "an item"}]', q: 'say \\"hi\\" ]}' } },
        data: { k: 'ü€😀' },
      },
      { metadata: { name: 'b' }, data: { nested: '{[' }, list: [[1, 2], { items: [3] }] },
      { metadata: { name: 'c' } },
    ],
  };

  it('yields every item and the envelope, whatever the chunk boundaries', () => {
    const text = JSON.stringify(list, null, 1);
    for (const size of [1, 2, 3, 7, 64, text.length]) assert.deepEqual(decode(text, size), list, `chunks of ${size}`);
  });

  it('finds items wherever the key comes and with any whitespace', () => {
    const text = ' { "items" : [ {"a":1} , {"b":[2]} ] , "kind" : "List", "metadata": {"resourceVersion":"7"} } ';
    assert.deepEqual(decode(text, 5), {
      items: [{ a: 1 }, { b: [2] }],
      kind: 'List',
      metadata: { resourceVersion: '7' },
    });
    assert.deepEqual(decode('{"kind":"List","items":[]}', 4), { kind: 'List', items: [] });
  });

  it('rejects a truncated response', () => {
    const decoder = new ListDecoder(() => {});
    decoder.write(Buffer.from('{"items":[{"a":1},{"b"'));
    assert.throws(() => decoder.end(), SyntaxError);
  });
});
