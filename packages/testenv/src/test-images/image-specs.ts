/**
 * What the test images hold and how their programs are built: pure planning, so the choices that
 * matter on a node (the sandbox's entrypoint, the workload's non-root user, a static binary)
 * are checked by unit tests without building anything.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { OciImageSpec } from './oci-archive.js';
import { ECHO_IMAGE, ECHO_PORT, ECHO_UID, PAUSE_IMAGE } from './test-image-pins.js';

/** The Go module of the images' programs ships inside this package (this file runs from `dist/src/test-images/`). */
export const imagesModuleDir = fileURLToPath(new URL('../../../go/images/', import.meta.url));

/** The main packages of `go/images/`, named as `go build -o <dir>/` names their binaries. */
export const IMAGE_PROGRAMS = ['pause', 'echo-server'] as const;

/** One `go build` invocation with the environment it needs on top of the caller's. */
export interface ImagesGoBuild {
  readonly cwd: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Plans `go build` of both programs into `outDir`. Static (no cgo: the images hold no libc),
 * linux/amd64 whatever the host, no file paths or VCS stamps in the binary so the same sources
 * give the same bytes, stripped (`-s -w`) to keep the archives small.
 *
 * @example
 * ```ts
 * const { cwd, args, env } = planImagesGoBuild('/tmp/out');
 * execFileSync('go', args, { cwd, env: { ...process.env, ...env } }); // writes /tmp/out/pause and /tmp/out/echo-server
 * ```
 */
export function planImagesGoBuild(outDir: string, moduleDir = imagesModuleDir): ImagesGoBuild {
  return {
    cwd: moduleDir,
    args: ['build', '-trimpath', '-ldflags', '-s -w', '-o', `${outDir}/`, ...IMAGE_PROGRAMS.map((p) => `./${p}`)],
    env: {
      CGO_ENABLED: '0',
      GOOS: 'linux',
      GOARCH: 'amd64',
      // Replaces the caller's GOFLAGS too: flags like -race would make the binaries differ.
      GOFLAGS: '-buildvcs=false',
      // The module needs nothing newer than the local Go; never try to download a toolchain (no network).
      GOTOOLCHAIN: 'local',
    },
  };
}

/**
 * The sandbox image: `/pause` alone, as `registry.k8s.io/pause` is. Its user, 65535 like the
 * upstream image's, only applies where the image config is honoured (`ctr run`): the CRI starts
 * the sandbox as the Pod's `runAsUser`, else root.
 *
 * @example
 * ```ts
 * const image = await buildOciImageArchive(pauseImageSpec(await readFile('bin/pause')));
 * ```
 */
export function pauseImageSpec(binary: Uint8Array): OciImageSpec {
  return {
    ref: PAUSE_IMAGE,
    files: [{ path: '/pause', mode: 0o755, content: binary }],
    config: { entrypoint: ['/pause'], user: '65535:65535', workingDir: '/' },
  };
}

/**
 * The echo image: `/echo-server` run as the numeric non-root user 65532, so a Pod under the
 * `restricted` Pod Security Standard (`runAsNonRoot`) may run it unchanged; `/etc/passwd` and
 * `/etc/group` name that user for tools that look it up (containerd adds its groups from there).
 *
 * @example
 * ```ts
 * const image = await buildOciImageArchive(echoImageSpec(await readFile('bin/echo-server')));
 * ```
 */
export function echoImageSpec(binary: Uint8Array): OciImageSpec {
  const id = String(ECHO_UID);
  return {
    ref: ECHO_IMAGE,
    files: [
      { path: '/echo-server', mode: 0o755, content: binary },
      {
        path: '/etc/passwd',
        mode: 0o644,
        content: `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${id}:${id}:nonroot:/home/nonroot:/sbin/nologin\n`,
      },
      { path: '/etc/group', mode: 0o644, content: `root:x:0:\nnonroot:x:${id}:\n` },
    ],
    config: {
      entrypoint: ['/echo-server'],
      env: ['PATH=/usr/local/bin:/usr/bin:/bin'],
      user: `${id}:${id}`,
      workingDir: '/',
      exposedPorts: [`${ECHO_PORT}/tcp`],
    },
  };
}

/** One source file of `go/images/`, its path relative to the module. */
export interface SourceFile {
  readonly path: string;
  readonly content: Uint8Array;
}

/**
 * A digest of the module's sources, independent of file order, for the test that makes a change
 * to them fail until `TEST_IMAGES_VERSION` is bumped (see `test-image-pins.ts`).
 *
 * @example
 * ```ts
 * goSourcesDigest([{ path: 'go.mod', content: Buffer.from('module x\n') }]); // 64 hex digits
 * ```
 */
export function goSourcesDigest(files: readonly SourceFile[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    // Length-prefixed so that moving bytes from one file to the next changes the digest.
    hash.update(`${file.path}\0${file.content.byteLength}\0`);
    hash.update(file.content);
  }
  return hash.digest('hex');
}
