/**
 * What a starting agent does about PGDATA of another major than its binaries, and where the
 * programs of another major are. Pure.
 *
 * A major upgrade (roles/major-upgrade.ts) is `pg_upgrade --link` into a sibling directory, then a
 * switch of directories. The marker beside PGDATA records how far it got, so that a crash at any
 * point resumes safely:
 * - `linking`: `pg_upgrade` may have run, but the new server never started. The old data is
 *   whole once `global/pg_control.old` is renamed back (pg_upgrade's own rollback for `--link`).
 * - `committed`: past the point of no return. The new cluster is complete and is moved into
 *   place; the old one is never run again.
 */

/** The marker `kanri-upgrade.json` beside PGDATA. */
export interface UpgradeMarker {
  readonly from: number;
  readonly to: number;
  readonly stage: 'linking' | 'committed' | 'succeeded' | 'rolledBack';
  /** With `succeeded`: pgBackRest's stanza follows the new cluster (`stanza-upgrade` ran). */
  readonly stanzaUpgraded?: boolean;
  /** How long pg_upgrade took, in ms. */
  readonly pgUpgradeMs?: number;
}

export interface UpgradeBootInput {
  /** The major in PGDATA/PG_VERSION; undefined without PGDATA. */
  readonly dataMajor: number | undefined;
  /** The major of this image's `postgres`. */
  readonly binaryMajor: number;
  /** ENV.majorUpgradeFrom: set only on the Pod a major upgrade creates. */
  readonly allowedFrom: number | undefined;
  readonly marker: UpgradeMarker | undefined;
  /** `global/pg_control` is missing and `global/pg_control.old` exists: pg_upgrade --link began. */
  readonly controlMoved: boolean;
}

export type UpgradeBootStep =
  | { readonly kind: 'none' }
  /** Past the point of no return: move the new cluster into place (idempotent). */
  | { readonly kind: 'finish' }
  /** Put the old data back (`pg_control.old`), drop the new cluster, and boot the old one. */
  | { readonly kind: 'rollBack' }
  | { readonly kind: 'upgrade'; readonly from: number; readonly to: number }
  /** Never start postgres on this data: the reason says why and what to do. */
  | { readonly kind: 'refuse'; readonly reason: string };

/**
 * @example
 * ```ts
 * planUpgradeBoot({ dataMajor: 15, binaryMajor: 16, allowedFrom: 15, marker: undefined, controlMoved: false });
 * // { kind: 'upgrade', from: 15, to: 16 }
 * ```
 */
export function planUpgradeBoot(input: UpgradeBootInput): UpgradeBootStep {
  const { dataMajor, binaryMajor, allowedFrom, marker } = input;
  if (marker?.stage === 'committed') {
    if (marker.to === binaryMajor) return { kind: 'finish' };
    return {
      kind: 'refuse',
      reason: `PGDATA was upgraded to PostgreSQL ${marker.to} past the point of no return, but this image runs ${binaryMajor}: use an image of ${marker.to}`,
    };
  }
  if (dataMajor === undefined) return { kind: 'none' };
  if (dataMajor === binaryMajor) {
    // An upgrade that began here and never committed left the old cluster without its pg_control.
    return input.controlMoved || marker?.stage === 'linking' ? { kind: 'rollBack' } : { kind: 'none' };
  }
  if (dataMajor < binaryMajor) {
    if (allowedFrom === dataMajor) return { kind: 'upgrade', from: dataMajor, to: binaryMajor };
    return {
      kind: 'refuse',
      reason: `PGDATA holds PostgreSQL ${dataMajor} data and this image runs ${binaryMajor}: a major upgrade runs only when spec.postgresVersion is raised with the annotation postgres.kanri.dev/allow-major-upgrade=${binaryMajor}`,
    };
  }
  return {
    kind: 'refuse',
    reason: `PGDATA holds PostgreSQL ${dataMajor} data and this image runs the older ${binaryMajor}: data of a newer major cannot run on older binaries; use an image of ${dataMajor}`,
  };
}

/**
 * The directory of `major`'s programs: ENV.pgBinDirs (`14=/a/bin;16=/b/bin`) first, else Debian's
 * layout, where packages of several majors install side by side.
 *
 * @example
 * ```ts
 * binDirFor(14, '14=/opt/pg14/bin;16=/opt/pg16/bin'); // '/opt/pg14/bin'
 * binDirFor(13, undefined); // '/usr/lib/postgresql/13/bin'
 * ```
 */
export function binDirFor(major: number, dirs: string | undefined): string {
  for (const entry of (dirs ?? '').split(';')) {
    const at = entry.indexOf('=');
    if (at > 0 && Number(entry.slice(0, at).trim()) === major) return entry.slice(at + 1).trim();
  }
  return `/usr/lib/postgresql/${major}/bin`;
}

/** The programs an instance runs besides `pg_upgrade`: a new installation lacking one is not committed to. */
export const INSTANCE_PROGRAMS = ['postgres', 'initdb', 'pg_ctl', 'pg_controldata', 'pg_basebackup', 'pg_rewind'];

/** The major of a `postgres --version` line, e.g. 16 for `postgres (PostgreSQL) 16.15`. */
export function majorOfVersionLine(line: string): number | undefined {
  const match = /\(PostgreSQL\) (\d+)/.exec(line);
  return match ? Number(match[1]) : undefined;
}
