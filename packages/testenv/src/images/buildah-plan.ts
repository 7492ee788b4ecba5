/**
 * Pure plans of buildah runs: where its storage and configuration live under the Kanri cache, the
 * configuration files (no registry is searched or trusted by name; images come from the builds
 * here), and the arguments of a Dockerfile build and of an export to an OCI archive.
 *
 * buildah runs as root with `chroot` isolation (no runc, no user namespace) and the `overlay`
 * driver, and reads nothing from the machine's `/etc/containers`: every setting comes from here.
 */
import { join } from 'node:path';

/** Where buildah keeps its images, its run state and its configuration. */
export interface BuildahPaths {
  /** Image and layer storage (`--root`), for example `~/.cache/kanri/buildah/storage`. */
  readonly storage: string;
  /** Run state and locks (`--runroot`). */
  readonly runRoot: string;
  /** The configuration files this module writes. */
  readonly configDir: string;
  /** Mounted over `/usr/local/etc` in every RUN step: npm's global configuration (`npmrc`). */
  readonly npmEtcDir: string;
}

/** A Dockerfile build. */
export interface BuildSpec {
  /** The Dockerfile, an absolute path. */
  readonly dockerfile: string;
  /** The build context directory (its `.dockerignore` applies). */
  readonly context: string;
  /** The name the image is stored under, for example `ghcr.io/kanri-dev/postgres:15`. */
  readonly tag: string;
  /** The stage to build; the last one when absent. */
  readonly target?: string;
  readonly buildArgs?: Readonly<Record<string, string>>;
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * A CA bundle (PEM) mounted over the image's `/etc/ssl/certs/ca-certificates.crt` in RUN steps
   * only, and named to npm, so that a build behind a TLS-inspecting proxy reaches the package
   * registries. The images keep their own bundle.
   */
  readonly trustStore?: string;
}

/**
 * The paths under `root` (`<cache>/buildah`).
 *
 * @example
 * ```ts
 * buildahPaths('/c/buildah').storage; // '/c/buildah/storage'
 * ```
 */
export function buildahPaths(root: string): BuildahPaths {
  const configDir = join(root, 'config');
  return {
    storage: join(root, 'storage'),
    runRoot: join(root, 'run'),
    configDir,
    npmEtcDir: join(configDir, 'npm-etc'),
  };
}

/**
 * The files to write before running buildah: path → content.
 *
 * @example
 * ```ts
 * Object.keys(buildahConfigFiles(buildahPaths('/c/buildah'))); // policy.json, registries.conf, containers.conf, npm-etc/npmrc
 * ```
 */
export function buildahConfigFiles(paths: BuildahPaths): Record<string, string> {
  return {
    // Images are only ever taken from this machine's own builds and archives, never pulled.
    [join(paths.configDir, 'policy.json')]: `${JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] })}\n`,
    // A short name (`node:20-bookworm-slim`) resolves to docker.io as Docker's would, and is looked up locally only.
    [join(paths.configDir, 'registries.conf')]:
      'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "disabled"\n',
    [join(paths.configDir, 'containers.conf')]: '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "none"\n',
    [join(paths.npmEtcDir, 'npmrc')]:
      'cafile=/etc/ssl/certs/ca-certificates.crt\nupdate-notifier=false\nfund=false\naudit=false\n',
  };
}

/**
 * The environment buildah runs with: its configuration files instead of `/etc/containers`.
 *
 * @example
 * ```ts
 * buildahEnv(buildahPaths('/c/buildah')).CONTAINERS_CONF; // '/c/buildah/config/containers.conf'
 * ```
 */
export function buildahEnv(paths: BuildahPaths): Record<string, string> {
  return {
    CONTAINERS_CONF: join(paths.configDir, 'containers.conf'),
    CONTAINERS_REGISTRIES_CONF: join(paths.configDir, 'registries.conf'),
    // buildah's temporary files (a whole layer at a time) go beside its storage, not to a small /var/tmp.
    TMPDIR: join(paths.runRoot, 'tmp'),
  };
}

/** The options every buildah command takes first. */
export function buildahGlobalArgs(paths: BuildahPaths): string[] {
  return ['--root', paths.storage, '--runroot', paths.runRoot, '--storage-driver', 'overlay'];
}

/**
 * `buildah bud` arguments for `spec`: chroot isolation, the host's network (the package registries
 * are the only network there is), never pulling, and caching layers between builds.
 *
 * @example
 * ```ts
 * planBuild(paths, { dockerfile: '/r/Dockerfile', context: '/r', tag: 'x:1', target: 'operator' });
 * // [...global, 'bud', '--isolation', 'chroot', …, '--target', 'operator', '-f', '/r/Dockerfile', '-t', 'x:1', '/r']
 * ```
 */
export function planBuild(paths: BuildahPaths, spec: BuildSpec): string[] {
  const args = [
    ...buildahGlobalArgs(paths),
    'bud',
    '--isolation',
    'chroot',
    '--network',
    'host',
    '--pull=never',
    '--layers',
    '--signature-policy',
    join(paths.configDir, 'policy.json'),
  ];
  if (spec.trustStore) {
    args.push('--volume', `${spec.trustStore}:/etc/ssl/certs/ca-certificates.crt:ro`);
    args.push('--volume', `${paths.npmEtcDir}:/usr/local/etc:ro`);
  }
  for (const [name, value] of Object.entries(spec.buildArgs ?? {})) args.push('--build-arg', `${name}=${value}`);
  for (const [name, value] of Object.entries(spec.labels ?? {})) args.push('--label', `${name}=${value}`);
  if (spec.target) args.push('--target', spec.target);
  args.push('-f', spec.dockerfile, '-t', spec.tag, spec.context);
  return args;
}

/**
 * `buildah push` arguments writing `image` as an OCI archive (gzip layers) that containerd imports
 * under the same name (`ctr images import` takes the name from the archive's index), or, with
 * `transport` `oci`, into an OCI layout directory that several images can share (their common
 * layers stored once).
 *
 * @example
 * ```ts
 * planExport(paths, 'ghcr.io/kanri-dev/postgres:15', '/c/images/postgres.oci.tar');
 * // [...global, 'push', …, 'oci-archive:/c/images/postgres.oci.tar:ghcr.io/kanri-dev/postgres:15']
 * ```
 */
export function planExport(
  paths: BuildahPaths,
  image: string,
  archive: string,
  transport: 'oci-archive' | 'oci' = 'oci-archive',
): string[] {
  if (archive.includes(':')) throw new Error(`planExport: the archive path ${archive} must not contain ':'`);
  return [
    ...buildahGlobalArgs(paths),
    'push',
    '--signature-policy',
    join(paths.configDir, 'policy.json'),
    image,
    `${transport}:${archive}:${image}`,
  ];
}

/**
 * `buildah inspect` arguments printing an image's description as JSON (`FromImageID`, and its
 * labels under `OCIv1.config.Labels`), or failing when there is no such image.
 *
 * @example
 * ```ts
 * planInspect(paths, 'node:20-bookworm-slim'); // [...global, 'inspect', '--type', 'image', 'node:20-bookworm-slim']
 * ```
 */
export function planInspect(paths: BuildahPaths, image: string): string[] {
  return [...buildahGlobalArgs(paths), 'inspect', '--type', 'image', image];
}
