// The load every fault script puts on a cluster: a writer committing through the system's own
// primary locator (writer.mjs) and a split-brain watcher writing to every instance directly
// (split-brain.mjs), with the tables both need.
import { BRAIN_TABLE, SplitBrainWatcher } from './split-brain.mjs';
import { createTable, queryOnce, Writer } from './writer.mjs';

/**
 * Creates the tables on the primary at `primaryAddress` and starts both, the writer tagging its
 * rows with `trial`. Stop both when done.
 */
export async function startWorkload(system, primaryAddress, trial) {
  const { credentials } = system;
  await createTable(primaryAddress, credentials);
  await queryOnce(
    primaryAddress,
    credentials,
    `create table ${BRAIN_TABLE} (instance text not null, at timestamptz not null default now())`,
  );
  const writer = new Writer(() => system.candidates(), credentials);
  writer.resume(trial);
  const watcher = new SplitBrainWatcher(() => system.instances(), credentials);
  watcher.start();
  return { writer, watcher };
}
