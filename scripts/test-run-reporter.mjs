// A node:test reporter that prints nothing and keeps two records of the run (one reporter, not two:
// a third reporter beside the spec one passes Node's limit of 10 listeners on the test stream, and
// Node warns about a leak on every run).
//
// Durations: it adds up each file's top-level test durations and, when the run ends, merges them
// into the JSON file named by KANRI_TEST_DURATIONS (path relative to the repository → ms).
// scripts/run-tests.mjs starts the longest files first from it, so that the last minutes of a run
// are not one long file running alone. A filtered run updates only the files it ran; a file that
// failed keeps its figure too (a hang is as long as it gets).
//
// Skips: it appends every skipped test (file, name, reason) as one JSON line to the file named by
// KANRI_TEST_SKIPS, for scripts/run-tests.mjs to print and count at the end (scripts/test-skips.mjs).
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { skipReason } from './test-skips.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export default async function* testRun(source) {
  const ms = new Map();
  const skipsFile = process.env.KANRI_TEST_SKIPS;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.type === 'test:pass' && event.data.skip && skipsFile) {
      const record = { file: event.data.file, name: event.data.name, reason: skipReason(event.data.skip) };
      appendFileSync(skipsFile, `${JSON.stringify(record)}\n`);
    }
    if (event.data.nesting !== 0) continue;
    const file = event.data.file;
    if (!file) continue;
    const key = relative(root, file);
    ms.set(key, (ms.get(key) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const path = process.env.KANRI_TEST_DURATIONS;
  if (!path || ms.size === 0) return;
  let known = {};
  try {
    known = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    // First run, or a file cut short: start again from this run's figures.
  }
  for (const [file, total] of ms) known[file] = Math.round(total);
  // Written whole, then renamed: two runs ending at once leave one complete file, not a torn one.
  writeFileSync(`${path}.${process.pid}`, `${JSON.stringify(known, null, 1)}\n`);
  renameSync(`${path}.${process.pid}`, path);
  // node:test takes a reporter only as a stream or a generator; this one has nothing to print.
  yield '';
}
