import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allComponents,
  corednsComponent,
  etcdComponent,
  helmComponent,
  KUBE_ROUTER_VERSION,
  KUBERNETES_VERSION,
  kubeRouterComponent,
  kubernetesComponent,
  kubernetesNodeComponent,
  kwokComponent,
  VERSITYGW_VERSION,
  versitygwComponent,
} from '../versions.js';
import { formatProgress } from './build-progress.js';
import { planGoBuild } from './go-build-plan.js';

describe('planGoBuild', () => {
  it('builds every Kubernetes binary from its wrapper module with the version stamped in', () => {
    const plan = planGoBuild(kubernetesComponent, '/out', '/mods/');
    assert.equal(plan.build.cwd, '/mods/kubernetes');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/', 'a directory, since several main packages are built');
    for (const b of kubernetesComponent.binaries) assert.ok(args.includes(`k8s.io/kubernetes/cmd/${b}`), b);
    const ldflags = args[args.indexOf('-ldflags') + 1] ?? '';
    assert.match(ldflags, /component-base\/version\.gitVersion=v1\.34\.\d+/);
    assert.match(ldflags, /gitMinor=34/);
  });

  it('builds kubelet and kube-proxy from their own wrapper module, stamped like the control plane', () => {
    const plan = planGoBuild(kubernetesNodeComponent, '/out', '/mods/');
    assert.equal(
      plan.build.cwd,
      '/mods/kubernetes-node',
      'not the control plane module: its go.sum lacks the node deps',
    );
    assert.equal(plan.download.cwd, '/mods/kubernetes-node');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/', 'a directory: two main packages');
    assert.deepEqual(args.slice(-2), ['k8s.io/kubernetes/cmd/kubelet', 'k8s.io/kubernetes/cmd/kube-proxy']);
    assert.deepEqual(plan.list.args.slice(-2), args.slice(-2));
    assert.ok(args.includes('-trimpath'));
    const control = planGoBuild(kubernetesComponent, '/out', '/mods/');
    assert.equal(
      args[args.indexOf('-ldflags') + 1],
      control.build.args[control.build.args.indexOf('-ldflags') + 1],
      'the same version stamp as kube-apiserver',
    );
    assert.match(args[args.indexOf('-ldflags') + 1] ?? '', new RegExp(`gitVersion=${KUBERNETES_VERSION}`));
    assert.equal(plan.bundle, undefined);
    assert.ok(!allComponents.includes(kubernetesNodeComponent), 'a control plane never waits for kubelet');
  });

  it('names the single output file for etcd and bundles kwok stages', () => {
    const etcd = planGoBuild(etcdComponent, '/out', '/mods/');
    assert.equal(etcd.build.args[etcd.build.args.indexOf('-o') + 1], '/out/etcd');
    assert.equal(etcd.bundle, undefined);
    const kwok = planGoBuild(kwokComponent, '/out', '/mods/');
    assert.equal(kwok.bundle?.output, '/out/kwok-stages.yaml');
    assert.ok(kwok.bundle?.files.some((f) => f.endsWith('pod-ready.yaml')));
  });

  it('builds helm from its wrapper module, stamped with its version and our Kubernetes minor', () => {
    const plan = planGoBuild(helmComponent, '/out', '/mods/');
    assert.equal(plan.build.cwd, '/mods/helm');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/helm');
    assert.ok(args.includes('helm.sh/helm/v3/cmd/helm'));
    const ldflags = args[args.indexOf('-ldflags') + 1] ?? '';
    assert.match(ldflags, /internal\/version\.version=v3\.19\.\d+/);
    assert.match(ldflags, /chartutil\.k8sVersionMinor=34/);
  });

  it('builds versitygw from its wrapper module, stripped, trimmed and stamped with its version', () => {
    const plan = planGoBuild(versitygwComponent, '/out', '/mods/');
    assert.equal(plan.build.cwd, '/mods/versitygw');
    assert.equal(plan.download.cwd, '/mods/versitygw');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/versitygw');
    assert.equal(args.at(-1), 'github.com/versity/versitygw/cmd/versitygw');
    assert.ok(args.includes('-trimpath'));
    assert.equal(args[args.indexOf('-ldflags') + 1], `-s -w -X main.Version=${VERSITYGW_VERSION}`);
    assert.deepEqual(plan.list.args.slice(-1), ['github.com/versity/versitygw/cmd/versitygw']);
    assert.equal(plan.bundle, undefined);
  });

  it('builds the NetworkPolicy enforcer from its wrapper module’s own main package, stamped with kube-router’s version', () => {
    const plan = planGoBuild(kubeRouterComponent, '/out', '/mods/');
    assert.equal(plan.build.cwd, '/mods/kube-router');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/kube-router-netpol');
    assert.equal(args.at(-1), '.');
    assert.equal(
      args[args.indexOf('-ldflags') + 1],
      `-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=${KUBE_ROUTER_VERSION}`,
    );
  });

  it('builds CoreDNS from its wrapper module’s own main package, which links only the plugins testenv uses', () => {
    const plan = planGoBuild(corednsComponent, '/out', '/mods/');
    assert.equal(plan.build.cwd, '/mods/coredns');
    const args = plan.build.args;
    assert.equal(args[args.indexOf('-o') + 1], '/out/coredns');
    assert.equal(args.at(-1), '.');
    assert.deepEqual(plan.list.args.slice(-1), ['.']);
    assert.equal(plan.bundle, undefined);
  });

  it('formats progress as a percentage that never claims 100% before done', () => {
    const line = formatProgress({
      component: 'kubernetes',
      version: 'v1',
      phase: 'compiling',
      built: 50,
      total: 50,
      elapsedMs: 65_000,
    });
    assert.match(line, /50\/50 packages \(99%\), 1m05s/);
    assert.match(
      formatProgress({ component: 'etcd', version: 'v3', phase: 'done', elapsedMs: 1000 }),
      /built etcd v3 in 1s/,
    );
  });
});
