// A node:test reporter that prints nothing: it appends every skipped test (file, name, reason) as
// one JSON line to the file named by KANRI_TEST_SKIPS, for scripts/run-tests.mjs to print and
// count at the end of the run (scripts/test-skips.mjs).
import { appendFileSync } from 'node:fs';
import { skipReason } from './test-skips.mjs';

export default async function* skips(source) {
  const path = process.env.KANRI_TEST_SKIPS;
  for await (const event of source) {
    if (event.type !== 'test:pass' || !event.data.skip || !path) continue;
    const record = { file: event.data.file, name: event.data.name, reason: skipReason(event.data.skip) };
    appendFileSync(path, `${JSON.stringify(record)}\n`);
  }
  // node:test takes a reporter only as a stream or a generator; this one has nothing to print.
  yield '';
}
