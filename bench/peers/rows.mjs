// The rows of bench:peers (issue 39), pure: what each injects and which figure it reports.

/**
 * @typedef {object} PeerRow
 * @property {number} row
 * @property {string} key
 * @property {string} title
 * @property {'fault' | 'rollout' | 'backup' | 'ready' | 'memory'} kind
 * @property {boolean} [failover]  the fault should move the primary
 * @property {boolean} [bothModes]  measured with asynchronous and with synchronous replication
 */

/** @type {readonly PeerRow[]} */
export const PEER_ROWS = Object.freeze([
  { row: 1, key: 'pod-deleted', title: 'primary Pod deleted (graceful)', kind: 'fault' },
  {
    row: 2,
    key: 'node-power-off',
    title: "primary's node powered off",
    kind: 'fault',
    failover: true,
    bothModes: true,
  },
  { row: 3, key: 'postgres-killed', title: 'postgres killed in the primary Pod', kind: 'fault' },
  { row: 4, key: 'switchover', title: 'planned switchover', kind: 'fault', failover: true },
  { row: 5, key: 'rolling-update', title: 'rolling update of the image', kind: 'rollout' },
  { row: 6, key: 'backup-restore', title: 'backup of 1 GB to S3, restore into a new cluster', kind: 'backup' },
  { row: 7, key: 'time-to-ready', title: 'time to Ready: 1 cluster, 20 at once', kind: 'ready' },
  { row: 8, key: 'memory', title: 'memory: operator idle, with 20 clusters; per-instance overhead', kind: 'memory' },
]);

/** `--quick`: one trial of the rows every later issue is judged on first. */
export const QUICK_ROWS = Object.freeze([1, 2, 4]);

/**
 * Parses `--rows 1,2,4` against PEER_ROWS; throws naming the first unknown row.
 *
 * @example
 * parseRows('4,1'); // [1, 4]
 */
export function parseRows(text) {
  const rows = text.split(',').map((s) => Number(s.trim()));
  const unknown = rows.find((r) => !PEER_ROWS.some((p) => p.row === r));
  if (unknown !== undefined) throw new Error(`--rows: no row ${unknown} (rows are 1–${PEER_ROWS.length})`);
  return [...new Set(rows)].sort((a, b) => a - b);
}
