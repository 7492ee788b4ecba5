// The load every fault script puts on a cluster: a writer committing through the system's own
// primary locator (writer.mjs) and a split-brain watcher writing to every instance directly
// (split-brain.mjs), with the tables both need.
import { createBrainTable, SplitBrainWatcher } from './split-brain.mjs';
import { createTable, Writer } from './writer.mjs';

/**
 * Creates the tables on the primary at `primaryAddress` and starts both, the writer tagging its
 * rows with `trial`. Stop both when done.
 */
export async function startWorkload(system, primaryAddress, trial) {
  const { credentials } = system;
  await createTable(primaryAddress, credentials);
  await createBrainTable(primaryAddress, credentials);
  const writer = new Writer(() => system.candidates(), credentials);
  writer.resume(trial);
  const watcher = new SplitBrainWatcher(() => system.instances(), credentials);
  watcher.start();
  return { writer, watcher };
}
