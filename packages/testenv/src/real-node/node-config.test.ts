import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { PAUSE_IMAGE } from '../test-images/test-image-pins.js';
import { cniConfig, containerdConfig, kubeletConfig, kubeProxyConfig } from './node-config.js';

const kubeletInput = {
  socket: '/d/c.sock',
  address: '172.30.0.10',
  cgroupRoot: '/kanri-s0-real-node-0',
  clientCaFile: '/pki/ca.crt',
  resolvConf: '/d/resolv.conf',
  clusterDns: '10.128.255.10',
  clusterDomain: 'cluster.local',
};

describe('real node configuration', () => {
  it('points containerd at the imported sandbox image, its own directories and the fetched runc and CNI plugins', () => {
    const toml = containerdConfig({
      dir: '/d/n0',
      socket: '/d/n0/containerd.sock',
      runc: '/c/bin/runc',
      cniBinDir: '/c/cni',
      cniConfDir: '/d/n0/cni',
    });
    assert.match(toml, new RegExp(`sandbox_image = "${PAUSE_IMAGE.replaceAll('.', '\\.')}"`));
    assert.match(toml, /restrict_oom_score_adj = true/, 'sandboxes cannot start on this VM without it');
    assert.match(toml, /^root = "\/d\/n0\/containerd\/root"$/m);
    assert.match(toml, /^state = "\/d\/n0\/containerd\/state"$/m);
    assert.match(toml, /address = "\/d\/n0\/containerd.sock"/);
    assert.match(toml, /BinaryName = "\/c\/bin\/runc"/);
    assert.match(toml, /bin_dir = "\/c\/cni"/);
    assert.match(toml, /SystemdCgroup = false/);
  });

  it("gives Pods addresses from the node's range and masquerades nothing", () => {
    const conf = JSON.parse(cniConfig({ podCidr: '10.128.1.0/24', ipamDir: '/d/ipam' }));
    const [bridge] = conf.plugins;
    assert.equal(bridge.type, 'bridge');
    assert.equal(bridge.ipMasq, false);
    assert.deepEqual(bridge.ipam.ranges, [[{ subnet: '10.128.1.0/24' }]]);
    assert.equal(bridge.ipam.dataDir, '/d/ipam', "not the machine's /var/lib/cni");
  });

  it('runs the kubelet on cgroup v1 with cgroupfs, without lowering its OOM score or collecting images', () => {
    const config = parse(kubeletConfig(kubeletInput));
    assert.equal(config.kind, 'KubeletConfiguration');
    assert.equal(config.cgroupDriver, 'cgroupfs');
    assert.equal(config.cgroupRoot, '/kanri-s0-real-node-0');
    assert.equal(config.failCgroupV1, false);
    assert.equal(config.oomScoreAdj, 0);
    assert.equal(config.imageGCHighThresholdPercent, 100, 'an image collected here cannot be pulled again');
    assert.equal(config.containerRuntimeEndpoint, 'unix:///d/c.sock');
    assert.equal(config.authentication.anonymous.enabled, false);
    assert.equal(config.authentication.x509.clientCAFile, '/pki/ca.crt');
    assert.equal(config.authorization.mode, 'Webhook');
  });

  it('gives ClusterFirst Pods the cluster DNS as their only nameserver', () => {
    const config = parse(kubeletConfig(kubeletInput));
    // Without clusterDNS every Pod warns MissingClusterDNS and resolves nothing of the cluster.
    assert.deepEqual(config.clusterDNS, ['10.128.255.10']);
    assert.equal(config.clusterDomain, 'cluster.local');
    assert.equal(config.resolvConf, '/d/resolv.conf', "the node's own empty file, not the machine's");
  });

  it("keeps kube-proxy's NodePorts on the node's bridge address and masquerades traffic from outside the Pods", () => {
    const config = parse(
      kubeProxyConfig({
        kubeconfig: '/d/kp.kubeconfig',
        nodeName: 'real-node-0',
        address: '172.30.0.10',
        clusterCidr: '10.128.0.0/18',
        mode: 'nftables',
      }),
    );
    assert.equal(config.mode, 'nftables');
    assert.equal(config.clusterCIDR, '10.128.0.0/18');
    assert.deepEqual(config.nodePortAddresses, ['172.30.0.10/32']);
    assert.equal(config.conntrack.maxPerCore, 0, "the conntrack table is the machine's");
  });
});
