// A node:test reporter that prints nothing: it adds up each file's top-level test durations and,
// when the run ends, merges them into the JSON file named by KANRI_TEST_DURATIONS (path relative
// to the repository → ms). scripts/run-tests.mjs starts the longest files first from it, so that
// the last minutes of a run are not one long file running alone. A filtered run updates only the
// files it ran; a file that failed keeps its figure too (a hang is as long as it gets).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export default async function* durations(source) {
  const ms = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
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
