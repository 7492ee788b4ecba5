import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildEtcdArgs } from './etcd.js';
import { buildApiServerArgs } from './kube-apiserver.js';
import { buildControllerManagerArgs } from './kube-controller-manager.js';
import { buildSchedulerArgs } from './kube-scheduler.js';
import { buildKwokArgs, buildKwokConfiguration } from './kwok.js';
import { buildVersitygwCommand, type VersitygwConfig } from './versitygw.js';

const flag = (args: string[], name: string) =>
  args
    .find((a) => a.startsWith(`--${name}=`))
    ?.split('=')
    .slice(1)
    .join('=');

const apiServer = {
  port: 3,
  etcdUrl: 'http://127.0.0.1:1',
  certDir: '/c',
  servingCertFile: '/s.crt',
  servingKeyFile: '/s.key',
  clientCaFile: '/ca.crt',
  serviceAccountPublicKeyFile: '/sa.pub',
  serviceAccountPrivateKeyFile: '/sa.key',
};

describe('component flags', () => {
  it('keeps etcd on loopback', () => {
    const args = buildEtcdArgs({ dataDir: '/d', clientPort: 1, peerPort: 2 });
    assert.equal(flag(args, 'listen-client-urls'), 'http://127.0.0.1:1');
    assert.equal(flag(args, 'listen-peer-urls'), 'http://127.0.0.1:2');
  });

  it('runs kube-apiserver on loopback with RBAC and client-certificate auth', () => {
    const args = buildApiServerArgs({ ...apiServer, extraArgs: ['--v=2'] });
    assert.equal(flag(args, 'bind-address'), '127.0.0.1');
    assert.equal(flag(args, 'secure-port'), '3');
    assert.equal(flag(args, 'authorization-mode'), 'RBAC');
    assert.equal(flag(args, 'client-ca-file'), '/ca.crt');
    assert.equal(args.at(-1), '--v=2', 'extra flags come last so they win');
  });

  it("lets an extra flag replace testenv's own instead of repeating it (the API server refuses a mode twice)", () => {
    const args = buildApiServerArgs({
      ...apiServer,
      extraArgs: ['--authorization-mode=Node,RBAC', '--bind-address=172.30.0.1'],
    });
    assert.deepEqual(
      args.filter((a) => a.startsWith('--authorization-mode=')),
      ['--authorization-mode=Node,RBAC'],
    );
    assert.deepEqual(
      args.filter((a) => a.startsWith('--bind-address=')),
      ['--bind-address=172.30.0.1'],
    );
    assert.equal(flag(args, 'secure-port'), '3', 'the flags not overridden stay');
  });

  it('binds the controller manager and scheduler to loopback on the given ports, without leader election', () => {
    const kcm = buildControllerManagerArgs({
      port: 4,
      kubeconfigFile: '/k',
      certDir: '/c',
      serviceAccountPrivateKeyFile: '/sa.key',
      rootCaFile: '/ca.crt',
    });
    const scheduler = buildSchedulerArgs({ port: 5, kubeconfigFile: '/k', certDir: '/c' });
    for (const [args, port] of [
      [kcm, '4'],
      [scheduler, '5'],
    ] as const) {
      assert.equal(flag(args, 'bind-address'), '127.0.0.1');
      assert.equal(flag(args, 'secure-port'), port);
      assert.equal(flag(args, 'leader-elect'), 'false');
    }
    const controllers = flag(kcm, 'controllers')?.split(',') ?? [];
    for (const needed of ['garbage-collector-controller', 'statefulset-controller', 'endpointslice-controller']) {
      assert.ok(controllers.includes(needed), needed);
    }
    assert.ok(!controllers.includes('node-lifecycle-controller'), 'kwok and process nodes would be marked NotReady');
    assert.ok(!controllers.includes('taint-eviction-controller'));
  });

  it('adds the node-lifecycle and taint-eviction controllers, at their default periods, only when asked (real nodes)', () => {
    const base = {
      port: 4,
      kubeconfigFile: '/k',
      certDir: '/c',
      serviceAccountPrivateKeyFile: '/sa.key',
      rootCaFile: '/ca.crt',
    };
    const args = buildControllerManagerArgs({ ...base, nodeLifecycle: true });
    const controllers = flag(args, 'controllers')?.split(',');
    assert.ok(controllers?.includes('node-lifecycle-controller'));
    assert.ok(controllers?.includes('taint-eviction-controller'), 'which evicts the Pods of a NotReady Node');
    assert.ok(controllers?.includes('garbage-collector-controller'), 'in addition to the others');
    assert.equal(flag(args, 'node-monitor-grace-period'), undefined, "Kubernetes' default, as a real cluster has");
  });

  it('points kwok at its own config and only at annotated nodes', () => {
    const args = buildKwokArgs({ kubeconfigFile: '/k', configFile: '/kwok.yaml', serverPort: 6 });
    assert.equal(flag(args, 'config'), '/kwok.yaml');
    assert.equal(flag(args, 'server-address'), '127.0.0.1:6');
    assert.equal(flag(args, 'manage-nodes-with-annotation-selector'), 'kwok.x-k8s.io/node=fake');
    const config = buildKwokConfiguration('kind: Stage');
    assert.match(config, /podPlayStageParallelism: 4/);
    assert.match(config, /---\nkind: Stage/);
  });

  it('runs versitygw on loopback with TLS over a data dir whose metadata lives beside it, credentials out of argv', () => {
    const config: VersitygwConfig = {
      port: 7,
      dataDir: '/s3/data',
      sidecarDir: '/s3/meta',
      certFile: '/s3/tls/server.crt',
      keyFile: '/s3/tls/server.key',
      region: 'eu-west-3',
      accessKeyId: 'AKID',
      secretAccessKey: 'SECRET',
    };
    const { args, env } = buildVersitygwCommand(config);
    assert.equal(flag(args, 'port'), '127.0.0.1:7');
    assert.equal(flag(args, 'cert'), '/s3/tls/server.crt');
    assert.equal(flag(args, 'key'), '/s3/tls/server.key');
    assert.equal(flag(args, 'region'), 'eu-west-3');
    assert.ok(args.indexOf('posix') < args.indexOf('--sidecar=/s3/meta'), 'the sidecar is a posix backend flag');
    assert.equal(args.at(-1), '/s3/data', 'the backend root comes last');
    assert.deepEqual(env, { ROOT_ACCESS_KEY_ID: 'AKID', ROOT_SECRET_ACCESS_KEY: 'SECRET' });
    assert.ok(!args.some((a) => a.includes('SECRET') || a.includes('AKID')), 'no credential in argv');
    assert.throws(() => buildVersitygwCommand({ ...config, sidecarDir: '/s3/data/.meta' }), /must not nest/);
    assert.throws(() => buildVersitygwCommand({ ...config, dataDir: '/s3/meta/data' }), /must not nest/);
    assert.throws(() => buildVersitygwCommand({ ...config, dataDir: 'data' }), /absolute/);
  });
});
