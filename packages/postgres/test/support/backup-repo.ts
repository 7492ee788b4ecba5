/**
 * What the backup failure tests read of a pgBackRest repo on the test S3 server (its objects are
 * plain files): the WAL segments it archived, and the gaps between them. Pure but for `repoObjects`.
 */
import type { S3Server } from '@kanri/testenv';
import { WAL_SEGMENT_MIB } from '../../src/agent/postgres/bootstrap.js';

/** A WAL file name counts segments within 4 GiB "log files": 1024 of Kanri's 4 MiB segments each. */
const PER_LOG_FILE = 2 ** 32 / (WAL_SEGMENT_MIB * 2 ** 20);

/** A stored segment's key ends `…/<24 hex digits>-<sha1>[.gz]`; history, backup and partial files do not. */
const SEGMENT = /\/([0-9A-F]{24})-[0-9a-f]{40}(\.[a-z0-9]+)?$/;

/** `000000010000000000000003` → 3; `000000010000000100000002` → 1026. */
export function segmentNumber(name: string): number {
  return Number.parseInt(name.slice(8, 16), 16) * PER_LOG_FILE + Number.parseInt(name.slice(16, 24), 16);
}

/** The segment names of timeline `timeline` among the repo's archive keys, ascending, without duplicates. */
export function archivedSegments(keys: readonly string[], timeline = 1): string[] {
  const prefix = timeline.toString(16).toUpperCase().padStart(8, '0');
  const names = keys.map((k) => SEGMENT.exec(k)?.[1]).filter((n): n is string => n?.startsWith(prefix) ?? false);
  return [...new Set(names)].sort();
}

/** Segments missing between the first and `last` (inclusive) of `segments`; [] when none. */
export function segmentGaps(segments: readonly string[], last: string): string[] {
  const have = new Set(segments.map(segmentNumber));
  const first = segments[0];
  if (!first) return [last];
  const missing: string[] = [];
  for (let n = segmentNumber(first); n <= segmentNumber(last); n++) {
    if (!have.has(n))
      missing.push(
        `${last.slice(0, 8)}${Math.floor(n / PER_LOG_FILE)
          .toString(16)
          .toUpperCase()
          .padStart(8, '0')}${(n % PER_LOG_FILE).toString(16).toUpperCase().padStart(8, '0')}`,
      );
  }
  return missing;
}

/** Every object key under a cluster's repo path (`/pgbackrest/<namespace>/<cluster>/<repo>`). */
export async function repoObjects(s3: S3Server, bucket: string, repoPath: string, under: string): Promise<string[]> {
  return (await s3.listObjects(bucket, `${repoPath.replace(/^\//, '')}/${under}`)).map((o) => o.key);
}
