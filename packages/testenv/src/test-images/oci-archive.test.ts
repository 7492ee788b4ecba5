import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { extract, type Header } from 'tar-stream';
import {
  ANNOTATION_IMAGE_NAME,
  ANNOTATION_REF_NAME,
  buildOciImageArchive,
  imageTag,
  type OciImageSpec,
} from './oci-archive.js';

interface Entry {
  readonly header: Header;
  readonly content: Buffer;
}

/** Reads a tar archive back with tar-stream's parser, in order. */
async function untar(archive: Buffer): Promise<Map<string, Entry>> {
  const entries = new Map<string, Entry>();
  const parser = extract();
  const done = (async () => {
    for await (const entry of parser) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(Buffer.from(chunk as Uint8Array));
      assert.ok(!entries.has(entry.header.name), `${entry.header.name} appears once`);
      entries.set(entry.header.name, { header: entry.header, content: Buffer.concat(chunks) });
    }
  })();
  parser.end(archive);
  await done;
  return entries;
}

const sha256 = (data: Uint8Array) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

function blob(entries: Map<string, Entry>, digest: string): Buffer {
  const entry = entries.get(`blobs/sha256/${digest.replace(/^sha256:/, '')}`);
  assert.ok(entry, `blob ${digest} is in the archive`);
  assert.equal(sha256(entry.content), digest, 'a blob is named after its own digest');
  return entry.content;
}

const binary = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3, 255]);
const spec: OciImageSpec = {
  ref: 'kanri.dev/testenv/echo:v1',
  files: [
    { path: '/echo-server', mode: 0o755, content: binary },
    { path: '/etc/passwd', mode: 0o644, content: 'nonroot:x:65532:65532::/:/sbin/nologin\n' },
    { path: 'etc/group', mode: 0o100644, content: 'nonroot:x:65532:\n' },
  ],
  config: {
    entrypoint: ['/echo-server'],
    cmd: ['--flag'],
    env: ['PATH=/', 'PORT=8080'],
    user: '65532:65532',
    workingDir: '/',
    exposedPorts: ['8080/tcp'],
  },
};

async function readImage(s: OciImageSpec) {
  const built = await buildOciImageArchive(s);
  const entries = await untar(built.archive);
  const index = JSON.parse(entries.get('index.json')?.content.toString() ?? 'null');
  const [described] = index.manifests;
  const manifestBytes = blob(entries, described.digest);
  const manifest = JSON.parse(manifestBytes.toString());
  const configBytes = blob(entries, manifest.config.digest);
  const layerBytes = blob(entries, manifest.layers[0].digest);
  return {
    built,
    entries,
    index,
    described,
    manifestBytes,
    manifest,
    configBytes,
    config: JSON.parse(configBytes.toString()),
    layerBytes,
    layer: await untar(layerBytes),
  };
}

describe('buildOciImageArchive', () => {
  it('writes an OCI layout whose index names the image for containerd and by tag', async () => {
    const { entries, index, described, built } = await readImage(spec);
    assert.deepEqual(JSON.parse(entries.get('oci-layout')?.content.toString() ?? ''), {
      imageLayoutVersion: '1.0.0',
    });
    assert.equal(index.schemaVersion, 2);
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json');
    assert.equal(index.manifests.length, 1);
    assert.equal(described.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.deepEqual(described.annotations, {
      [ANNOTATION_IMAGE_NAME]: 'kanri.dev/testenv/echo:v1',
      [ANNOTATION_REF_NAME]: 'v1',
    });
    assert.deepEqual(described.platform, { architecture: 'amd64', os: 'linux' });
    assert.equal(described.digest, built.manifest.digest);
    assert.equal(
      [...entries.keys()].filter((n) => n.startsWith('blobs/sha256/') && n !== 'blobs/sha256/').length,
      3,
      'config, manifest and one layer',
    );
  });

  it('gives every descriptor the digest and size of the blob it points to', async () => {
    const { described, manifestBytes, manifest, configBytes, layerBytes, built } = await readImage(spec);
    assert.equal(described.size, manifestBytes.byteLength);
    assert.equal(manifest.schemaVersion, 2);
    assert.equal(manifest.config.mediaType, 'application/vnd.oci.image.config.v1+json');
    assert.equal(manifest.config.size, configBytes.byteLength);
    assert.equal(manifest.layers.length, 1);
    assert.equal(
      manifest.layers[0].mediaType,
      'application/vnd.oci.image.layer.v1.tar',
      'an uncompressed layer says so',
    );
    assert.equal(layerBytes.subarray(257, 262).toString('latin1'), 'ustar', 'and is a plain tar');
    assert.equal(manifest.layers[0].size, layerBytes.byteLength);
    assert.deepEqual(built.config, manifest.config);
    assert.deepEqual(built.layer, manifest.layers[0]);
  });

  it("records the layer's own sha256 as its diff_id, and the runtime config as given", async () => {
    const { config, layerBytes, built } = await readImage(spec);
    assert.deepEqual(config.rootfs, { type: 'layers', diff_ids: [sha256(layerBytes)] });
    assert.equal(built.diffId, sha256(layerBytes));
    assert.equal(config.architecture, 'amd64');
    assert.equal(config.os, 'linux');
    assert.equal(config.created, '1970-01-01T00:00:00.000Z');
    assert.deepEqual(config.config, {
      User: '65532:65532',
      ExposedPorts: { '8080/tcp': {} },
      Env: ['PATH=/', 'PORT=8080'],
      Entrypoint: ['/echo-server'],
      Cmd: ['--flag'],
      WorkingDir: '/',
    });
  });

  it('leaves out config fields that were not given', async () => {
    const { config } = await readImage({ ref: 'registry.k8s.io/pause:3.10', files: spec.files.slice(0, 1) });
    assert.deepEqual(config.config, {});
  });

  it('holds the files, their parent directories, root ownership and one fixed mtime in the layer', async () => {
    const { layer } = await readImage(spec);
    assert.deepEqual([...layer.keys()], ['echo-server', 'etc/', 'etc/group', 'etc/passwd']);
    const file = (name: string) => {
      const entry = layer.get(name);
      assert.ok(entry, name);
      return entry;
    };
    assert.deepEqual(file('echo-server').content, binary);
    assert.equal(file('echo-server').header.mode, 0o755);
    assert.equal(file('etc/group').header.mode, 0o644, 'only permission bits are kept');
    assert.equal(file('etc/passwd').content.toString(), 'nonroot:x:65532:65532::/:/sbin/nologin\n');
    assert.equal(file('etc/').header.type, 'directory');
    assert.equal(file('etc/').header.mode, 0o755);
    for (const { header } of layer.values()) {
      assert.equal(header.uid, 0, header.name);
      assert.equal(header.gid, 0, header.name);
      assert.equal(header.mtime.getTime(), 0, header.name);
    }
  });

  it('stamps archive and layer entries with the given creation time', async () => {
    const created = new Date('2026-01-02T03:04:05Z');
    const { entries, layer, config } = await readImage({ ...spec, created });
    for (const { header } of [...entries.values(), ...layer.values()]) {
      assert.equal(header.mtime.getTime(), created.getTime(), header.name);
    }
    assert.equal(config.created, '2026-01-02T03:04:05.000Z');
  });

  it('is reproducible byte for byte, and changes with the content', async () => {
    const a = await buildOciImageArchive(spec);
    const b = await buildOciImageArchive({ ...spec, files: [...spec.files].reverse() });
    assert.ok(a.archive.equals(b.archive), 'same files in another order give the same archive');
    assert.equal(a.manifest.digest, b.manifest.digest);
    const changed = await buildOciImageArchive({
      ...spec,
      files: [{ path: '/echo-server', mode: 0o755, content: Buffer.from('other') }],
    });
    assert.notEqual(changed.layer.digest, a.layer.digest);
    assert.notEqual(changed.manifest.digest, a.manifest.digest);
  });

  it('refuses paths outside the root, duplicates, and a file that is also a directory', async () => {
    const file = (path: string) => ({ path, mode: 0o644, content: '' });
    await assert.rejects(buildOciImageArchive({ ...spec, files: [file('/../x')] }), /invalid/);
    await assert.rejects(buildOciImageArchive({ ...spec, files: [file('/')] }), /invalid/);
    await assert.rejects(buildOciImageArchive({ ...spec, files: [file('/a'), file('a')] }), /twice/);
    await assert.rejects(buildOciImageArchive({ ...spec, files: [file('/etc'), file('/etc/passwd')] }), /directory/);
  });
});

describe('imageTag', () => {
  it('returns the tag of a full reference, a registry port notwithstanding', () => {
    assert.equal(imageTag('registry.k8s.io/pause:3.10'), '3.10');
    assert.equal(imageTag('localhost:5000/a/b:v1.2'), 'v1.2');
    assert.equal(imageTag('localhost/x:latest'), 'latest');
  });

  it('refuses references the kubelet would not find as written', () => {
    assert.throws(() => imageTag('busybox:1'), /registry host/);
    assert.throws(() => imageTag('library/busybox:1'), /registry host/);
    assert.throws(() => imageTag('localhost:5000/a'), /no tag/);
    assert.throws(() => imageTag('kanri.dev/a:v1@sha256:00'), /digest/);
    assert.throws(() => imageTag('kanri.dev/a:-bad'), /invalid tag/);
  });
});
