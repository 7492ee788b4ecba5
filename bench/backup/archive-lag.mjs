// Archive lag under load: a sampler that reads, once a second on the primary, the WAL segment
// being written and what pg_stat_archiver says was archived last (and when, on postgres's clock),
// and the pure computation of each segment's lag from those samples, and the goal it is held to.
// Segment names are numbered with the server's own segment size (Kanri's clusters: 4 MiB), read
// from the server, never assumed.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The goal for the p99 archive lag: measured at 3.0–4.3 s under 1,000–2,100 TPS in four runs on
 * the 2-core machine (bench/results/backup-2026-12-01T*.json), with room for a loaded machine.
 * A segment that waits for `archive_timeout` (60 s) would miss it by far, as a stuck archiver does.
 */
export const ARCHIVE_LAG_P99_GOAL_MS = 10_000;

/** The run's p99 against {@link ARCHIVE_LAG_P99_GOAL_MS}: pass null when there was nothing to measure. */
export function archiveLagGoal(p99Ms) {
  return {
    goal: `p99 archive lag ≤ ${ARCHIVE_LAG_P99_GOAL_MS / 1000} s`,
    result: p99Ms,
    pass: p99Ms == null ? null : p99Ms <= ARCHIVE_LAG_P99_GOAL_MS,
  };
}

/** The server's WAL segment size in bytes (`wal_segment_size`: fixed at initdb, 4 MiB in Kanri's clusters). */
export async function walSegmentBytes(client) {
  const { rows } = await client.query(
    "SELECT setting::bigint AS bytes FROM pg_settings WHERE name = 'wal_segment_size'",
  );
  const bytes = Number(rows[0]?.bytes);
  if (!Number.isInteger(bytes) || bytes <= 0) throw new Error(`wal_segment_size: unexpected ${rows[0]?.bytes}`);
  return bytes;
}

const SAMPLE_SQL = `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS t,
  pg_walfile_name(pg_current_wal_lsn()) AS current,
  a.last_archived_wal AS archived,
  (extract(epoch FROM a.last_archived_time) * 1000)::float8 AS archived_at,
  a.failed_count::int AS failed,
  a.archived_count::int AS archived_count
FROM pg_stat_archiver a`;

/**
 * A WAL file name (`TTTTTTTTLLLLLLLLSSSSSSSS`) → its position on the timeline, for segments of
 * `segmentBytes`: the `LLLLLLLL` part counts 4 GiB of WAL, so it holds 4 GiB / `segmentBytes`
 * segments (256 of 16 MiB, 1,024 of 4 MiB). Null for anything else (a backup's history file
 * `….backup` is archived after later segments).
 *
 * @example
 * segmentNumber('000000010000000100000000', 4 * 2 ** 20); // 1024
 */
export function segmentNumber(name, segmentBytes) {
  if (!Number.isInteger(segmentBytes) || segmentBytes <= 0)
    throw new Error(`segmentNumber: segmentBytes ${segmentBytes}`);
  if (!/^[0-9A-F]{24}$/.test(name ?? '')) return null;
  const perLog = 2 ** 32 / segmentBytes;
  return Number.parseInt(name.slice(8, 16), 16) * perLog + Number.parseInt(name.slice(16), 16);
}

/** Samples every `everyMs` through `client` until `stop()`; resolves the samples. */
export function sampleArchiver(client, { segmentBytes, everyMs = 1_000 }) {
  const samples = [];
  let errors = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const started = Date.now();
      try {
        const row = (await client.query(SAMPLE_SQL)).rows[0];
        samples.push({
          t: row.t,
          current: segmentNumber(row.current, segmentBytes),
          archived: segmentNumber(row.archived, segmentBytes),
          archivedAt: row.archived_at,
          failed: row.failed,
          archivedCount: row.archived_count,
        });
      } catch {
        errors++;
      }
      await sleep(Math.max(0, everyMs - (Date.now() - started)));
    }
  })();
  return {
    samples,
    async stop() {
      stopped = true;
      await loop;
      return { samples, errors };
    },
  };
}

/**
 * Each segment that was finished (the write position moved past it) between `fromMs` and `toMs`:
 * ready at the last sample that still saw it (or an earlier one) being written, an early bound;
 * archived at pg_stat_archiver's `last_archived_time` of the first sample whose last archived
 * segment is it or a later one, a late bound (archiving is in order). So each lag is at most one
 * sampling period too long, never too short. Segments never seen archived count from their ready
 * time to the last sample, and are listed as unarchived.
 */
export function archiveLags(samples, { fromMs, toMs }) {
  const lags = [];
  const unarchived = [];
  for (let i = 1; i < samples.length; i++) {
    const before = samples[i - 1];
    const now = samples[i];
    if (now.t < fromMs || now.t > toMs || before.current == null || now.current == null) continue;
    // At a segment boundary pg_walfile_name names the segment before it: a segment the previous
    // sample already saw archived was finished before that sample, so it is not counted here.
    const first = Math.max(before.current, (before.archived ?? -1) + 1);
    for (let segment = first; segment < now.current; segment++) {
      const readyAt = before.t;
      const seen = samples.slice(i - 1).find((s) => s.archived != null && s.archived >= segment);
      if (seen) lags.push({ segment, lagMs: Math.max(0, seen.archivedAt - readyAt) });
      else unarchived.push({ segment, lagMs: samples[samples.length - 1].t - readyAt });
    }
  }
  return { lags, unarchived };
}

/** Nearest-rank percentile. */
export function percentile(xs, p) {
  if (xs.length === 0) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
