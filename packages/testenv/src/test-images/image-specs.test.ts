import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import {
  echoImageSpec,
  goSourcesDigest,
  imagesModuleDir,
  pauseImageSpec,
  planImagesGoBuild,
  type SourceFile,
} from './image-specs.js';
import { buildOciImageArchive } from './oci-archive.js';
import {
  ECHO_IMAGE,
  ECHO_PORT,
  ECHO_UID,
  PAUSE_IMAGE,
  TEST_IMAGES_SOURCES_SHA256,
  TEST_IMAGES_VERSION,
} from './test-image-pins.js';

async function sourcesOf(dir: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.push({ path: relative(dir, path), content: await readFile(path) });
  }
  return files;
}

describe('planImagesGoBuild', () => {
  it('builds both programs static, for linux/amd64, reproducibly and stripped', async () => {
    const plan = planImagesGoBuild('/out');
    assert.equal(plan.cwd, imagesModuleDir);
    assert.match(await readFile(join(plan.cwd, 'go.mod'), 'utf8'), /^module kanri\.dev\/testenv\/images$/m);
    assert.equal(plan.args[0], 'build');
    assert.ok(plan.args.includes('-trimpath'));
    assert.equal(plan.args[plan.args.indexOf('-ldflags') + 1], '-s -w');
    assert.equal(plan.args[plan.args.indexOf('-o') + 1], '/out/', 'a directory: one binary per main package');
    assert.deepEqual(plan.args.slice(-2), ['./pause', './echo-server']);
    assert.equal(plan.env.CGO_ENABLED, '0');
    assert.equal(plan.env.GOOS, 'linux');
    assert.equal(plan.env.GOARCH, 'amd64');
    assert.equal(plan.env.GOFLAGS, '-buildvcs=false');
  });
});

describe('image specs', () => {
  it('names the sandbox image as containerd is configured to find it, with /pause as entrypoint', () => {
    const spec = pauseImageSpec(Buffer.from('pause'));
    assert.equal(PAUSE_IMAGE, 'registry.k8s.io/pause:3.10');
    assert.equal(spec.ref, PAUSE_IMAGE);
    assert.deepEqual(
      spec.files.map((f) => [f.path, f.mode]),
      [['/pause', 0o755]],
    );
    assert.deepEqual(spec.config?.entrypoint, ['/pause']);
  });

  it('runs the echo image as a numeric non-root user that /etc/passwd and /etc/group name', () => {
    const spec = echoImageSpec(Buffer.from('echo'));
    assert.equal(spec.ref, ECHO_IMAGE);
    assert.equal(ECHO_IMAGE, `kanri.dev/testenv/echo:${TEST_IMAGES_VERSION}`);
    assert.deepEqual(spec.config?.entrypoint, ['/echo-server']);
    assert.match(spec.config?.user ?? '', /^[1-9]\d*:\d+$/, 'numeric and not 0, so runAsNonRoot can verify it');
    assert.equal(spec.config?.user, `${ECHO_UID}:${ECHO_UID}`);
    assert.deepEqual(spec.config?.exposedPorts, [`${ECHO_PORT}/tcp`]);
    const file = (path: string) => String(spec.files.find((f) => f.path === path)?.content ?? '');
    assert.equal(spec.files.find((f) => f.path === '/echo-server')?.mode, 0o755);
    assert.match(file('/etc/passwd'), new RegExp(`^nonroot:x:${ECHO_UID}:${ECHO_UID}:`, 'm'));
    assert.match(file('/etc/group'), new RegExp(`^nonroot:x:${ECHO_UID}:$`, 'm'));
  });

  it('builds both specs into importable archives', async () => {
    for (const spec of [pauseImageSpec(Buffer.from('p')), echoImageSpec(Buffer.from('e'))]) {
      const image = await buildOciImageArchive(spec);
      assert.ok(image.archive.byteLength > 0, spec.ref);
    }
  });
});

describe('goSourcesDigest', () => {
  it('ignores the order of files but not their names, contents or boundaries', () => {
    const a = { path: 'a.go', content: Buffer.from('ab') };
    const b = { path: 'b.go', content: Buffer.from('c') };
    const digest = goSourcesDigest([a, b]);
    assert.match(digest, /^[0-9a-f]{64}$/);
    assert.equal(goSourcesDigest([b, a]), digest);
    assert.notEqual(goSourcesDigest([a, { ...b, path: 'c.go' }]), digest);
    assert.notEqual(goSourcesDigest([a, { ...b, content: Buffer.from('d') }]), digest);
    assert.notEqual(
      goSourcesDigest([
        { ...a, content: Buffer.from('a') },
        { ...b, content: Buffer.from('bc') },
      ]),
      digest,
    );
  });

  it('matches the pinned digest of go/images/, so a change there comes with a new TEST_IMAGES_VERSION', async () => {
    const actual = goSourcesDigest(await sourcesOf(imagesModuleDir));
    assert.equal(
      actual,
      TEST_IMAGES_SOURCES_SHA256,
      `go/images/ changed: bump TEST_IMAGES_VERSION and set TEST_IMAGES_SOURCES_SHA256 to '${actual}' in test-image-pins.ts`,
    );
  });
});
