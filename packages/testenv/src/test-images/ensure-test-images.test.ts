import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { extract } from 'tar-stream';
import type { BuildProgress } from '../binaries/build-progress.js';
import { freePort } from '../free-port.js';
import { waitFor, within } from '../wait-for.js';
import { ensureTestImages, type TestImages } from './ensure-test-images.js';
import { ECHO_IMAGE, PAUSE_IMAGE, TEST_IMAGES_VERSION } from './test-image-pins.js';

/** The files of a tar archive, by name. */
async function untar(archive: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const parser = extract();
  const done = (async () => {
    for await (const entry of parser) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(Buffer.from(chunk as Uint8Array));
      files.set(entry.header.name, Buffer.concat(chunks));
    }
  })();
  parser.end(archive);
  await done;
  return files;
}

/** The files of the only layer of an OCI archive, and its image name. */
async function imageOf(archivePath: string): Promise<{ name: string; files: Map<string, Buffer> }> {
  const outer = await untar(await readFile(archivePath));
  const index = JSON.parse(String(outer.get('index.json')));
  const blob = (digest: string) => outer.get(`blobs/sha256/${digest.slice('sha256:'.length)}`) ?? Buffer.alloc(0);
  const manifest = JSON.parse(String(blob(index.manifests[0].digest)));
  return {
    name: index.manifests[0].annotations['io.containerd.image.name'],
    files: await untar(blob(manifest.layers[0].digest)),
  };
}

async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const [code] = await within(`${child.spawnfile} to exit`, once(child, 'exit'), 10_000);
  return code as number | null;
}

describe('ensureTestImages', () => {
  let dir: string;
  let images: TestImages;
  const phases: BuildProgress[] = [];
  const children: ChildProcess[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-test-images-'));
    images = await ensureTestImages({ cacheDir: join(dir, 'a'), onProgress: (p) => phases.push(p) });
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('builds both archives into the versioned cache entry, named as the pins say', async () => {
    assert.equal(images.pause.ref, PAUSE_IMAGE);
    assert.equal(images.echo.ref, ECHO_IMAGE);
    const bin = join(dir, 'a', `test-images-${TEST_IMAGES_VERSION}`, 'bin');
    assert.equal(images.pause.archive, join(bin, 'pause.oci.tar'));
    assert.equal(images.echo.archive, join(bin, 'echo.oci.tar'));
    assert.equal((await readFile(join(bin, '.complete'), 'utf8')).trim(), TEST_IMAGES_VERSION);
    assert.deepEqual(
      phases.map((p) => p.phase),
      ['compiling', 'done'],
    );
  });

  it('puts the compiled static binaries into the images', async () => {
    const pause = await imageOf(images.pause.archive);
    assert.equal(pause.name, PAUSE_IMAGE);
    const bin = dirname(images.pause.archive);
    assert.deepEqual(pause.files.get('pause'), await readFile(join(bin, 'pause')));
    const echo = await imageOf(images.echo.archive);
    assert.equal(echo.name, ECHO_IMAGE);
    const server = echo.files.get('echo-server');
    assert.deepEqual(server, await readFile(join(bin, 'echo-server')));
    // ELF, and no PT_INTERP program header: no dynamic loader, so it runs in an image without libc.
    assert.equal(server?.subarray(0, 4).toString('latin1'), '\x7fELF');
    assert.ok(!server?.includes('/lib64/ld-linux'), 'statically linked');
    assert.ok(echo.files.has('etc/passwd'));
  });

  it('reuses the cache entry and builds the same bytes in another one', async () => {
    const before = await stat(images.echo.archive);
    let progress = 0;
    const again = await ensureTestImages({ cacheDir: join(dir, 'a'), onProgress: () => progress++ });
    assert.deepEqual(again, images);
    assert.equal(progress, 0, 'no build');
    assert.equal((await stat(images.echo.archive)).mtimeMs, before.mtimeMs);
    const other = await ensureTestImages({ cacheDir: join(dir, 'b'), onProgress: () => {} });
    for (const name of ['pause', 'echo'] as const) {
      assert.ok(
        (await readFile(other[name].archive)).equals(await readFile(images[name].archive)),
        `${name} is reproducible`,
      );
    }
  });

  it('serves /healthz and / from the echo server, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(join(dirname(images.echo.archive), 'echo-server'), [], {
      env: { PORT: String(port), POD_IP: '10.1.2.3' },
      stdio: 'ignore',
    });
    children.push(child);
    const health = await waitFor('the echo server to answer', async () => {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      return { status: response.status, body: await response.text() };
    });
    assert.deepEqual(health, { status: 200, body: 'ok' });
    const response = await fetch(`http://127.0.0.1:${port}/`);
    const body = (await response.json()) as { hostname: unknown; podIP: unknown; remoteAddr: string };
    assert.equal(body.podIP, '10.1.2.3');
    assert.equal(typeof body.hostname, 'string');
    assert.match(body.remoteAddr, /^127\.0\.0\.1:\d+$/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/missing`)).status, 404);
    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0);
  });

  it('keeps pause waiting until SIGTERM, then exits 0', async () => {
    const child = spawn(join(dirname(images.pause.archive), 'pause'), [], { stdio: 'ignore' });
    children.push(child);
    await once(child, 'spawn');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(child.exitCode, null, 'still running');
    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0);
  });
});
