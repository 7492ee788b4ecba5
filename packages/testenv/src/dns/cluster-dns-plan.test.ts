import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildCoreDnsRbac,
  buildKubeDnsEndpointSlice,
  buildKubeDnsService,
  CLUSTER_DOMAIN,
  COREDNS_USER,
  clusterDnsObjects,
  corefile,
} from './cluster-dns-plan.js';

const input = { hostAddress: '172.30.3.1', clusterDnsIp: '10.131.255.10' };

describe('cluster DNS plan', () => {
  const text = corefile(input, '/d/coredns.kubeconfig');

  it('binds every server block to the bridge address alone', () => {
    const blocks = text.split(/^}$/m).filter((b) => b.includes('{'));
    assert.equal(blocks.length, 2);
    for (const block of blocks) assert.match(block, /^ {2}bind 172\.30\.3\.1$/m);
    assert.doesNotMatch(text, /bind (0\.0\.0\.0|::)/);
  });

  it('answers cluster.local and reverse lookups from the API, without Pod records', () => {
    assert.match(text, /^cluster\.local:53 in-addr\.arpa:53 \{$/m);
    assert.match(
      text,
      /^ {2}kubernetes cluster\.local in-addr\.arpa \{\n {4}kubeconfig \/d\/coredns\.kubeconfig\n {4}pods disabled\n {2}\}$/m,
    );
    assert.match(text, /^ {2}ready 172\.30\.3\.1:8181$/m);
    assert.equal(CLUSTER_DOMAIN, 'cluster.local');
  });

  it('forwards nothing: every other name gets NXDOMAIN from CoreDNS itself', () => {
    assert.doesNotMatch(text, /forward|proxy|resolv\.conf/);
    assert.match(
      text,
      /^\.:53 \{\n {2}bind 172\.30\.3\.1\n {2}errors\n {2}template ANY ANY \{\n {4}rcode NXDOMAIN\n {2}\}\n\}$/m,
    );
  });

  it('lets CoreDNS list and watch what the kubernetes plugin reads, and write nothing', () => {
    const [role, binding] = buildCoreDnsRbac();
    const rules = role.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    const granted = rules.flatMap((r) => r.resources.map((res) => `${r.apiGroups[0]}/${res}`)).sort();
    assert.deepEqual(granted, ['/namespaces', '/services', 'discovery.k8s.io/endpointslices']);
    for (const rule of rules) assert.deepEqual(rule.verbs, ['list', 'watch']);
    assert.deepEqual(binding.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: COREDNS_USER }]);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: (role.metadata as { name: string }).name,
    });
  });

  it('gives kube-system/kube-dns the fixed ClusterIP and no selector, on 53 over UDP and TCP', () => {
    const service = buildKubeDnsService(input) as {
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      spec: { clusterIP: string; selector?: unknown; ports: { name: string; port: number; protocol: string }[] };
    };
    assert.equal(`${service.metadata.namespace}/${service.metadata.name}`, 'kube-system/kube-dns');
    assert.equal(service.metadata.labels['k8s-app'], 'kube-dns');
    assert.equal(service.spec.clusterIP, '10.131.255.10');
    assert.equal(service.spec.selector, undefined);
    assert.deepEqual(
      service.spec.ports.map((p) => `${p.name} ${p.port}/${p.protocol}`),
      ['dns 53/UDP', 'dns-tcp 53/TCP'],
    );
  });

  it('points the Service at the host through an EndpointSlice of its own', () => {
    const slice = buildKubeDnsEndpointSlice(input) as {
      metadata: { namespace: string; labels: Record<string, string> };
      endpoints: { addresses: string[]; conditions: { ready: boolean } }[];
      ports: { name: string; port: number; protocol: string }[];
    };
    assert.equal(slice.metadata.namespace, 'kube-system');
    assert.equal(slice.metadata.labels['kubernetes.io/service-name'], 'kube-dns');
    // The EndpointSlice controller manages only its own (endpointslice-controller.k8s.io) slices.
    assert.notEqual(slice.metadata.labels['endpointslice.kubernetes.io/managed-by'], 'endpointslice-controller.k8s.io');
    assert.deepEqual(slice.endpoints, [{ addresses: ['172.30.3.1'], conditions: { ready: true } }]);
    assert.deepEqual(
      slice.ports.map((p) => `${p.name} ${p.port}/${p.protocol}`),
      ['dns 53/UDP', 'dns-tcp 53/TCP'],
    );
  });

  it('creates the Service before its EndpointSlice, in the namespaces the objects name', () => {
    const objects = clusterDnsObjects(input);
    assert.deepEqual(
      objects.map((o) => o.body.kind),
      ['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'Service', 'EndpointSlice'],
    );
    for (const { path, body } of objects) {
      const namespace = (body.metadata as { namespace?: string }).namespace;
      if (namespace) assert.ok(path.includes(`/namespaces/${namespace}/`), path);
    }
  });
});
