import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BinaryBuildError } from '../errors.js';
import {
  allComponents,
  COREDNS_VERSION,
  type ComponentSpec,
  HELM_VERSION,
  KUBE_ROUTER_VERSION,
  KUBERNETES_VERSION,
  VERSITYGW_VERSION,
} from '../versions.js';
import {
  ensureBinaries,
  ensureCoreDns,
  ensureHelm,
  ensureNetworkPolicyEnforcer,
  ensureNodeBinaries,
  ensureVersitygw,
} from './ensure-binaries.js';
import type { GoBuildPlan } from './go-build-plan.js';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('../../test/fixtures/ensure-with-fake-build.js', import.meta.url));
const fake: ComponentSpec = { name: 'etcd', version: 'v0.0.0-unit', binaries: ['etcd'] };

async function fakeBuild(plan: GoBuildPlan): Promise<void> {
  const binary = join(plan.outDir, 'etcd');
  await writeFile(binary, '#!/bin/sh\n');
  await chmod(binary, 0o755);
}

describe('ensureBinaries', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-ensure-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const quiet = () => {};

  it('lets only one of two parallel processes build; the other waits and reuses the result', async () => {
    const cacheDir = join(dir, 'parallel');
    const counter = join(dir, 'builds.txt');
    const [a, b] = await Promise.all([
      run(process.execPath, [fixture, cacheDir, counter]),
      run(process.execPath, [fixture, cacheDir, counter]),
    ]);
    const builds = (await readFile(counter, 'utf8')).trim().split('\n');
    assert.equal(builds.length, 1, `exactly one build, got ${builds.length}`);
    const results = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
    assert.equal(results[0].path, results[1].path);
    assert.equal(results[0].path, join(cacheDir, 'etcd-v0.0.0-locktest', 'bin', 'etcd'));
    assert.ok(
      results.some((r) => r.phases.includes('waiting-for-lock')),
      'the second process reported that it waited',
    );
  });

  it('does not build again once cached', async () => {
    const cacheDir = join(dir, 'cached');
    let builds = 0;
    const build = async (plan: GoBuildPlan) => {
      builds++;
      await fakeBuild(plan);
    };
    const options = { cacheDir, assetsDir: '', components: [fake], build, onProgress: quiet };
    const first = await ensureBinaries(options);
    const second = await ensureBinaries(options);
    assert.equal(builds, 1);
    assert.equal(first.etcd, second.etcd);
  });

  it('takes binaries from KUBEBUILDER_ASSETS without building', async () => {
    const assetsDir = join(dir, 'assets');
    await mkdir(assetsDir);
    await writeFile(join(assetsDir, 'etcd'), '#!/bin/sh\n');
    await chmod(join(assetsDir, 'etcd'), 0o755);
    const paths = await ensureBinaries({
      cacheDir: join(dir, 'unused'),
      assetsDir,
      components: [fake],
      onProgress: quiet,
      build: async () => assert.fail('must not build'),
    });
    assert.equal(paths.etcd, join(assetsDir, 'etcd'));
  });

  it('breaks a lock left by a dead builder instead of waiting forever', async () => {
    const cacheDir = join(dir, 'stale');
    const lock = join(cacheDir, 'etcd-v0.0.0-unit.lock');
    await mkdir(lock, { recursive: true });
    const longAgo = new Date(Date.now() - 10 * 60_000);
    await utimes(lock, longAgo, longAgo);
    const paths = await ensureBinaries({
      cacheDir,
      assetsDir: '',
      components: [fake],
      build: fakeBuild,
      onProgress: quiet,
    });
    assert.equal(paths.etcd, join(cacheDir, 'etcd-v0.0.0-unit', 'bin', 'etcd'));
  });

  it('caches nothing from a failed build, releases the lock, and retries next time', async () => {
    const cacheDir = join(dir, 'failing');
    const failing = async () => {
      throw new BinaryBuildError('etcd', 'etcd: go build exited with code 1', 'compile error');
    };
    const options = { cacheDir, assetsDir: '', components: [fake], onProgress: quiet };
    await assert.rejects(ensureBinaries({ ...options, build: failing }), /go build exited with code 1/);
    const paths = await ensureBinaries({ ...options, build: fakeBuild });
    assert.equal(paths.etcd, join(cacheDir, 'etcd-v0.0.0-unit', 'bin', 'etcd'));
  });

  it('names the missing output when a build produces no binary', async () => {
    const options = { cacheDir: join(dir, 'empty'), assetsDir: '', components: [fake], onProgress: quiet };
    await assert.rejects(
      ensureBinaries({ ...options, build: async () => {} }),
      (error: unknown) => error instanceof BinaryBuildError && /produced no etcd/.test(error.message),
    );
  });

  it('builds helm only when asked: ensureHelm builds it into its own cache entry', async () => {
    assert.ok(!allComponents.some((c) => c.binaries.includes('helm')), 'a control plane never waits for helm');
    const cacheDir = join(dir, 'helm');
    const built: string[] = [];
    const helm = await ensureHelm({
      cacheDir,
      assetsDir: '',
      onProgress: quiet,
      build: async (plan) => {
        built.push(`${plan.component.name} ${plan.build.args.at(-1)}`);
        await writeFile(join(plan.outDir, 'helm'), '#!/bin/sh\n');
        await chmod(join(plan.outDir, 'helm'), 0o755);
      },
    });
    assert.deepEqual(built, ['helm helm.sh/helm/v3/cmd/helm']);
    assert.equal(helm, join(cacheDir, `helm-${HELM_VERSION}`, 'bin', 'helm'));
  });

  it('builds versitygw only when asked: ensureVersitygw builds it into its own cache entry', async () => {
    assert.ok(!allComponents.some((c) => c.binaries.includes('versitygw')), 'a control plane never waits for it');
    const cacheDir = join(dir, 'versitygw');
    const built: string[] = [];
    const versitygw = await ensureVersitygw({
      cacheDir,
      assetsDir: '',
      onProgress: quiet,
      build: async (plan) => {
        built.push(`${plan.component.name} ${plan.build.args.at(-1)}`);
        await writeFile(join(plan.outDir, 'versitygw'), '#!/bin/sh\n');
        await chmod(join(plan.outDir, 'versitygw'), 0o755);
      },
    });
    assert.deepEqual(built, ['versitygw github.com/versity/versitygw/cmd/versitygw']);
    assert.equal(versitygw, join(cacheDir, `versitygw-${VERSITYGW_VERSION}`, 'bin', 'versitygw'));
  });

  it('builds kubelet and kube-proxy only when asked, once, into their own cache entry', async () => {
    assert.ok(!allComponents.some((c) => c.binaries.includes('kubelet')), 'a control plane never waits for kubelet');
    const cacheDir = join(dir, 'node');
    const built: string[] = [];
    const options = {
      cacheDir,
      assetsDir: '',
      onProgress: quiet,
      build: async (plan: GoBuildPlan) => {
        built.push(`${plan.component.name} ${plan.build.args.slice(-2).join(' ')}`);
        for (const name of ['kubelet', 'kube-proxy']) {
          await writeFile(join(plan.outDir, name), '#!/bin/sh\n');
          await chmod(join(plan.outDir, name), 0o755);
        }
      },
    };
    const node = await ensureNodeBinaries(options);
    assert.deepEqual(built, ['kubernetes-node k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy']);
    const bin = join(cacheDir, `kubernetes-node-${KUBERNETES_VERSION}`, 'bin');
    assert.deepEqual(node, { kubelet: join(bin, 'kubelet'), 'kube-proxy': join(bin, 'kube-proxy') });
    assert.deepEqual(await ensureNodeBinaries(options), node);
    assert.equal(built.length, 1, 'the second call reuses the cache');
  });

  // The components real nodes run beside the kubelet, each from its own wrapper module in go/.
  for (const { what, module, binary, version, ensure } of [
    {
      what: 'the NetworkPolicy enforcer',
      module: 'kube-router',
      binary: 'kube-router-netpol',
      version: KUBE_ROUTER_VERSION,
      ensure: ensureNetworkPolicyEnforcer,
    },
    { what: 'the cluster DNS', module: 'coredns', binary: 'coredns', version: COREDNS_VERSION, ensure: ensureCoreDns },
  ] as const) {
    it(`builds ${what} only when asked, once, into its own cache entry`, async () => {
      assert.ok(!allComponents.some((c) => c.binaries.includes(binary)), 'a control plane never waits for it');
      const cacheDir = join(dir, module);
      const built: string[] = [];
      const options = {
        cacheDir,
        assetsDir: '',
        onProgress: quiet,
        build: async (plan: GoBuildPlan) => {
          built.push(`${plan.component.name} ${plan.build.cwd.endsWith(`/${module}`)}`);
          await writeFile(join(plan.outDir, binary), '#!/bin/sh\n');
          await chmod(join(plan.outDir, binary), 0o755);
        },
      };
      const path = await ensure(options);
      assert.equal(path, join(cacheDir, `${module}-${version}-kanri.1`, 'bin', binary));
      assert.equal(await ensure(options), path);
      assert.deepEqual(built, [`${module} true`], `built once, from go/${module}`);
    });
  }
});
