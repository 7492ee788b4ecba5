import assert from 'node:assert/strict';
import { it } from 'node:test';
import { parseNdjson } from './ndjson.js';

async function collect(chunks: Buffer[]): Promise<unknown[]> {
  const out: unknown[] = [];
  async function* source() {
    yield* chunks;
  }
  for await (const value of parseNdjson(source())) out.push(value);
  return out;
}

it('splits lines across chunk boundaries, even inside a multi-byte character', async () => {
  const text = Buffer.from('{"a":"é"}\n{"b":2}\n\n{"c":3}');
  const split = [text.subarray(0, 7), text.subarray(7, 13), text.subarray(13)];
  assert.deepEqual(await collect(split), [{ a: 'é' }, { b: 2 }, { c: 3 }]);
});
