// The WAL segment size each side runs with. Kanri makes its clusters with 4 MiB segments
// (packages/postgres/src/agent/postgres/bootstrap.ts, WAL_SEGMENT_MIB); postgres's and so Patroni's
// default is 16 MiB. A promotion copies the old timeline's last segment into the new timeline's
// first, so the size is on the failover's path: by default both sides run Kanri's size
// (`--wal-segments equal`, Patroni's initdb gets `--wal-segsize`); `--wal-segments default` runs
// each with its own default, and the output says which it was and what each server reported.
import { queryOnce } from './writer.mjs';

/** Kanri's size, spelled out like KANRI_HA (kanri.mjs); every run checks it against the servers. */
export const KANRI_WAL_SEGMENT_MIB = 4;
export const WAL_SEGMENT_MODES = ['equal', 'default'];

/** What Patroni's initdb is given for `mode`: Kanri's size when equal, nothing (postgres's 16 MiB) by default. */
export const patroniWalSegmentMiB = (mode) => (mode === 'equal' ? KANRI_WAL_SEGMENT_MIB : undefined);

/** The segment size in bytes that the server at `address` runs with. */
export async function walSegmentBytesAt(address, credentials) {
  const [row] = await queryOnce(
    address,
    credentials,
    "SELECT setting::bigint AS bytes FROM pg_settings WHERE name = 'wal_segment_size'",
  );
  return Number(row?.bytes);
}

/**
 * What the output says about the segment sizes, from what each system's server reported
 * (`bytes`: system → bytes). `problem` is set when `equal` was asked for and the sizes differ, or
 * Kanri's differs from the size this file assumes: the run's comparison would not be what it says.
 *
 * @example
 * describeWalSegments('equal', { patroni: 4194304, kanri: 4194304 });
 * // { mode: 'equal', bytes: {…}, note: 'WAL segments equal: 4 MiB on both', problem: null }
 */
export function describeWalSegments(mode, bytes) {
  const mib = (b) => `${b / 2 ** 20} MiB`;
  const sizes = Object.values(bytes);
  const same = sizes.every((b) => b === sizes[0]);
  const note =
    mode === 'equal'
      ? `WAL segments equal: ${same ? `${mib(sizes[0])} on ${sizes.length > 2 ? `all ${sizes.length}` : sizes.length > 1 ? 'both' : 'the one system'}` : 'asked for, but they differ'}`
      : `WAL segments each system's default: ${Object.entries(bytes)
          .map(([name, b]) => `${name} ${mib(b)}`)
          .join(', ')}`;
  let problem = null;
  if (bytes.kanri !== undefined && bytes.kanri !== KANRI_WAL_SEGMENT_MIB * 2 ** 20)
    problem = `Kanri runs ${mib(bytes.kanri)} segments, not the ${KANRI_WAL_SEGMENT_MIB} MiB this benchmark assumes (bench/failover/wal-segments.mjs)`;
  else if (mode === 'equal' && !same)
    problem = `--wal-segments equal, but the servers run ${Object.entries(bytes)
      .map(([name, b]) => `${name} ${mib(b)}`)
      .join(', ')}`;
  return { mode, bytes, note, problem };
}
