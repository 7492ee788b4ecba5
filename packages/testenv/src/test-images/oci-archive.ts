/**
 * Builds a single-layer container image as an OCI image layout archive, in memory: the format
 * `ctr images import` accepts, so real nodes can run images that never came from a registry
 * (none can be reached from the machines testenv runs on).
 *
 * Pure: no file system, no clock. Every tar header carries uid/gid 0 and one fixed mtime, entries
 * are sorted and every JSON document is written with a fixed key order, so the same input gives
 * the same archive byte for byte (and so the same image digest, which keeps a re-import a no-op).
 */
import { createHash } from 'node:crypto';
import { pack } from 'tar-stream';

/** One regular file of the image's only layer. */
export interface ImageFile {
  /** Absolute or relative path inside the image, for example `/etc/passwd`. */
  readonly path: string;
  /** Permission bits, for example `0o755` for an executable. */
  readonly mode: number;
  readonly content: string | Uint8Array;
}

/** The runtime part of the image configuration (OCI `config`); absent fields stay absent. */
export interface ImageRuntimeConfig {
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
  /** `NAME=value` entries. */
  readonly env?: readonly string[];
  /** `uid`, `uid:gid` or a name; numeric keeps it checkable by `runAsNonRoot`. */
  readonly user?: string;
  readonly workingDir?: string;
  /** For example `8080/tcp`. */
  readonly exposedPorts?: readonly string[];
}

export interface OciImageSpec {
  /** The full reference the image is imported under, for example `registry.k8s.io/pause:3.10`. */
  readonly ref: string;
  readonly files: readonly ImageFile[];
  readonly config?: ImageRuntimeConfig;
  /** The mtime of every tar entry and the config's `created`; defaults to the Unix epoch. */
  readonly created?: Date;
}

/** An OCI content descriptor. */
export interface OciDescriptor {
  readonly mediaType: string;
  /** `sha256:<hex>`. */
  readonly digest: string;
  readonly size: number;
}

export interface OciImageArchive {
  /** The OCI image layout as a tar archive. */
  readonly archive: Buffer;
  readonly manifest: OciDescriptor;
  readonly config: OciDescriptor;
  readonly layer: OciDescriptor;
  /** The layer's uncompressed digest (equal to `layer.digest`: the layer is stored uncompressed). */
  readonly diffId: string;
}

export const MEDIA_TYPE_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MEDIA_TYPE_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MEDIA_TYPE_CONFIG = 'application/vnd.oci.image.config.v1+json';
/** Uncompressed: gzip would only shrink a local file that is read once, and cost time at every build. */
export const MEDIA_TYPE_LAYER = 'application/vnd.oci.image.layer.v1.tar';
/** containerd's importer names the image after this annotation, ignoring any `--base-name`. */
export const ANNOTATION_IMAGE_NAME = 'io.containerd.image.name';
export const ANNOTATION_REF_NAME = 'org.opencontainers.image.ref.name';

interface TarEntry {
  readonly name: string;
  readonly mode: number;
  /** Absent for a directory. */
  readonly content?: Uint8Array;
}

function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/**
 * The tag of a full reference, for example `3.10` of `registry.k8s.io/pause:3.10`. Throws for a
 * reference without a registry host, a tag, or with a digest: the CRI looks images up by their
 * normalized name (`busybox:1` is `docker.io/library/busybox:1` to it), so a short name imported
 * as it is would never be found by the kubelet.
 *
 * @example
 * ```ts
 * imageTag('kanri.dev/testenv/echo:v1'); // 'v1'
 * imageTag('busybox:1'); // throws: no registry host
 * ```
 */
export function imageTag(ref: string): string {
  const slash = ref.indexOf('/');
  const host = slash > 0 ? ref.slice(0, slash) : '';
  if (!host.includes('.') && !host.includes(':') && host !== 'localhost') {
    throw new Error(`image reference ${JSON.stringify(ref)} must start with a registry host, like registry.k8s.io/`);
  }
  if (ref.includes('@')) throw new Error(`image reference ${JSON.stringify(ref)} must not carry a digest`);
  const colon = ref.lastIndexOf(':');
  if (colon <= ref.lastIndexOf('/')) throw new Error(`image reference ${JSON.stringify(ref)} has no tag`);
  const tag = ref.slice(colon + 1);
  if (!/^[\w][\w.-]{0,127}$/.test(tag)) throw new Error(`image reference ${JSON.stringify(ref)} has an invalid tag`);
  return tag;
}

/** `/etc/passwd` → `etc/passwd`; refuses paths that would leave the root or name it. */
function layerPath(path: string): string {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.includes('..')) throw new Error(`image file path ${JSON.stringify(path)} is invalid`);
  return parts.join('/');
}

/**
 * The layer's entries: every file plus each parent directory (0755) before it, sorted. Runtimes
 * create missing parents themselves, but with whatever mode they choose; explicit entries make
 * `/etc` the same everywhere.
 */
function layerEntries(files: readonly ImageFile[]): TarEntry[] {
  const entries = new Map<string, TarEntry>();
  for (const file of files) {
    const name = layerPath(file.path);
    if (entries.has(name)) throw new Error(`image file ${JSON.stringify(file.path)} is given twice`);
    const content = typeof file.content === 'string' ? Buffer.from(file.content) : file.content;
    entries.set(name, { name, mode: file.mode & 0o7777, content });
  }
  for (const name of [...entries.keys()]) {
    const parts = name.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = `${parts.slice(0, i).join('/')}/`;
      if (entries.has(parts.slice(0, i).join('/'))) throw new Error(`image file ${dir} is also a directory`);
      if (!entries.has(dir)) entries.set(dir, { name: dir, mode: 0o755 });
    }
  }
  return [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A tar archive of `entries` in the given order, owned by root, all with mtime `mtime`. */
async function tarOf(entries: readonly TarEntry[], mtime: Date): Promise<Buffer> {
  const archive = pack();
  for (const entry of entries) {
    const common = { name: entry.name, mode: entry.mode, mtime, uid: 0, gid: 0, uname: 'root', gname: 'root' };
    if (entry.content) archive.entry({ ...common, type: 'file' }, entry.content);
    else archive.entry({ ...common, type: 'directory' });
  }
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function descriptor(mediaType: string, data: Uint8Array): OciDescriptor {
  return { mediaType, digest: sha256(data), size: data.byteLength };
}

/** The OCI image configuration; key order is fixed by construction so the digest is stable. */
function imageConfig(spec: OciImageSpec, created: Date, diffId: string): Buffer {
  const c = spec.config ?? {};
  const config = {
    User: c.user,
    ExposedPorts: c.exposedPorts ? Object.fromEntries([...c.exposedPorts].sort().map((p) => [p, {}])) : undefined,
    Env: c.env,
    Entrypoint: c.entrypoint,
    Cmd: c.cmd,
    WorkingDir: c.workingDir,
  };
  return json({
    created: created.toISOString(),
    architecture: 'amd64',
    os: 'linux',
    config,
    rootfs: { type: 'layers', diff_ids: [diffId] },
  });
}

/**
 * Builds `spec` as an OCI image layout archive for `ctr -n k8s.io images import`. The index names
 * the image twice: `io.containerd.image.name` (the full reference, which containerd uses) and
 * `org.opencontainers.image.ref.name` (the tag, which the OCI layout specification defines).
 *
 * @example
 * ```ts
 * const image = await buildOciImageArchive({
 *   ref: 'kanri.dev/testenv/hello:v1',
 *   files: [{ path: '/hello', mode: 0o755, content: helloBinary }],
 *   config: { entrypoint: ['/hello'], user: '65532:65532' },
 * });
 * await writeFile('hello.oci.tar', image.archive); // then: ctr -n k8s.io images import hello.oci.tar
 * ```
 */
export async function buildOciImageArchive(spec: OciImageSpec): Promise<OciImageArchive> {
  const tag = imageTag(spec.ref);
  const created = spec.created ?? new Date(0);
  const layerTar = await tarOf(layerEntries(spec.files), created);
  const layer = descriptor(MEDIA_TYPE_LAYER, layerTar);
  const configJson = imageConfig(spec, created, layer.digest);
  const config = descriptor(MEDIA_TYPE_CONFIG, configJson);
  const manifestJson = json({ schemaVersion: 2, mediaType: MEDIA_TYPE_MANIFEST, config, layers: [layer] });
  const manifest = descriptor(MEDIA_TYPE_MANIFEST, manifestJson);
  const index = json({
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_INDEX,
    manifests: [
      {
        ...manifest,
        // Lets an importer filtering by platform (ctr's default) decide without opening the config.
        platform: { architecture: 'amd64', os: 'linux' },
        annotations: { [ANNOTATION_IMAGE_NAME]: spec.ref, [ANNOTATION_REF_NAME]: tag },
      },
    ],
  });
  const blob = (d: OciDescriptor, content: Uint8Array): TarEntry => ({
    name: `blobs/sha256/${d.digest.slice('sha256:'.length)}`,
    mode: 0o644,
    content,
  });
  const archive = await tarOf(
    [
      { name: 'oci-layout', mode: 0o644, content: json({ imageLayoutVersion: '1.0.0' }) },
      { name: 'index.json', mode: 0o644, content: index },
      { name: 'blobs/', mode: 0o755 },
      { name: 'blobs/sha256/', mode: 0o755 },
      blob(layer, layerTar),
      blob(config, configJson),
      blob(manifest, manifestJson),
    ],
    created,
  );
  return { archive, manifest, config, layer, diffId: layer.digest };
}
