import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildahConfigFiles, buildahEnv, buildahPaths, planBuild, planExport, planInspect } from './buildah-plan.js';

const paths = buildahPaths('/c/buildah');
const global = ['--root', '/c/buildah/storage', '--runroot', '/c/buildah/run', '--storage-driver', 'overlay'];

describe('buildah plans', () => {
  it('keeps storage, run state and configuration under its own root, never /etc/containers', () => {
    assert.deepEqual(Object.keys(buildahConfigFiles(paths)).sort(), [
      '/c/buildah/config/containers.conf',
      '/c/buildah/config/npm-etc/npmrc',
      '/c/buildah/config/policy.json',
      '/c/buildah/config/registries.conf',
    ]);
    assert.deepEqual(buildahEnv(paths), {
      CONTAINERS_CONF: '/c/buildah/config/containers.conf',
      CONTAINERS_REGISTRIES_CONF: '/c/buildah/config/registries.conf',
      TMPDIR: '/c/buildah/run/tmp',
    });
    assert.deepEqual(planInspect(paths, 'x:1'), [...global, 'inspect', '--type', 'image', 'x:1']);
  });

  it('resolves short names to docker.io and points npm at the mounted CA bundle', () => {
    const files = buildahConfigFiles(paths);
    assert.match(files['/c/buildah/config/registries.conf'] ?? '', /unqualified-search-registries = \["docker.io"\]/);
    assert.match(files['/c/buildah/config/npm-etc/npmrc'] ?? '', /^cafile=\/etc\/ssl\/certs\/ca-certificates.crt$/m);
  });

  it('builds with chroot isolation, never pulling, caching layers, with the stage, arguments and labels given', () => {
    const args = planBuild(paths, {
      dockerfile: '/r/Dockerfile',
      context: '/r',
      tag: 'x:1',
      target: 'operator',
      buildArgs: { PG_SOURCE: 'debian' },
      labels: { a: 'b' },
    });
    assert.deepEqual(args.slice(0, global.length), global);
    for (const flag of [
      ['--isolation', 'chroot'],
      ['--build-arg', 'PG_SOURCE=debian'],
      ['--label', 'a=b'],
      ['--target', 'operator'],
    ]) {
      const at = args.indexOf(flag[0] ?? '');
      assert.ok(at >= 0 && args[at + 1] === flag[1], `${flag.join(' ')} in ${args.join(' ')}`);
    }
    assert.ok(args.includes('--pull=never') && args.includes('--layers'));
    assert.deepEqual(args.slice(-5), ['-f', '/r/Dockerfile', '-t', 'x:1', '/r']);
    assert.ok(!args.includes('--volume'), 'no CA bundle mounted unless given');
  });

  it('mounts a given CA bundle over the image’s for RUN steps, and npm’s configuration beside it', () => {
    const args = planBuild(paths, { dockerfile: '/r/D', context: '/r', tag: 'x:1', trustStore: '/etc/ca.pem' });
    const volumes = args.flatMap((a, i) => (a === '--volume' ? [args[i + 1]] : []));
    assert.deepEqual(volumes, [
      '/etc/ca.pem:/etc/ssl/certs/ca-certificates.crt:ro',
      '/c/buildah/config/npm-etc:/usr/local/etc:ro',
    ]);
  });

  it('exports an OCI archive named as the image, and refuses a path with a colon', () => {
    assert.deepEqual(planExport(paths, 'ghcr.io/a/b:15', '/c/images/b.tar').slice(-3), [
      '/c/buildah/config/policy.json',
      'ghcr.io/a/b:15',
      'oci-archive:/c/images/b.tar:ghcr.io/a/b:15',
    ]);
    assert.throws(() => planExport(paths, 'a:1', '/c/a:b.tar'), /must not contain ':'/);
    assert.equal(planExport(paths, 'ghcr.io/a/b:15', '/c/layout', 'oci').at(-1), 'oci:/c/layout:ghcr.io/a/b:15');
  });
});
