import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cidrsOverlap,
  conflictingRoutes,
  ipRouteArgs,
  MAX_REAL_NODES,
  planNetwork,
  SLOT_COUNT,
} from './network-plan.js';

const name = (i: number) => `real-node-${i}`;

describe('planNetwork', () => {
  it('gives each slot its own bridge, supernet and Service range, and each node a Pod range inside it', () => {
    const plan = planNetwork(3, 2, name);
    assert.equal(plan.bridge, 'kanri-br3');
    assert.equal(plan.hostAddress, '172.30.3.1');
    assert.equal(plan.supernet, '10.131.0.0/16');
    assert.equal(plan.serviceCidr, '10.131.255.0/24');
    assert.equal(plan.kubernetesServiceIp, '10.131.255.1');
    assert.equal(plan.clusterDnsIp, '10.131.255.10');
    assert.ok(cidrsOverlap(`${plan.clusterDnsIp}/32`, plan.serviceCidr), 'the DNS Service is in the Service range');
    assert.deepEqual(
      plan.nodes.map((n) => [n.name, n.address, n.podCidr]),
      [
        ['real-node-0', '172.30.3.10', '10.131.0.0/24'],
        ['real-node-1', '172.30.3.11', '10.131.1.0/24'],
      ],
    );
    for (const node of plan.nodes) {
      assert.ok(cidrsOverlap(node.podCidr, plan.clusterCidr), `${node.podCidr} is in the cluster CIDR`);
      assert.ok(!cidrsOverlap(node.podCidr, plan.serviceCidr));
    }
    assert.ok(!cidrsOverlap(plan.clusterCidr, plan.serviceCidr), 'Services are not masqueraded as Pods');
  });

  it('blackholes the supernet before any other host route, and routes only inside it', () => {
    const plan = planNetwork(0, 3, name);
    assert.deepEqual(plan.hostRoutes[0], { kind: 'blackhole', destination: '10.128.0.0/16' });
    assert.deepEqual(plan.hostRoutes.slice(1), [
      { kind: 'via', destination: '10.128.0.0/24', gateway: '172.30.0.10' },
      { kind: 'via', destination: '10.128.1.0/24', gateway: '172.30.0.11' },
      { kind: 'via', destination: '10.128.2.0/24', gateway: '172.30.0.12' },
      { kind: 'via', destination: '10.128.255.0/24', gateway: '172.30.0.10' },
    ]);
    for (const route of plan.hostRoutes) assert.ok(cidrsOverlap(route.destination, plan.supernet));
  });

  it("gives nodes no default route: only the other nodes' Pods and the Service range", () => {
    const plan = planNetwork(0, 3, name);
    const [first] = plan.nodes;
    assert.ok(first);
    assert.deepEqual(first.routes, [
      { kind: 'via', destination: '10.128.1.0/24', gateway: '172.30.0.11' },
      { kind: 'via', destination: '10.128.2.0/24', gateway: '172.30.0.12' },
      { kind: 'link', destination: '10.128.255.0/24', device: 'eth0' },
    ]);
    for (const node of plan.nodes) {
      for (const route of node.routes) {
        assert.ok(cidrsOverlap(route.destination, plan.supernet), `${route.destination} stays in the supernet`);
      }
    }
  });

  it("keeps interface names within Linux's 15 characters at the largest slot and node", () => {
    const plan = planNetwork(SLOT_COUNT - 1, MAX_REAL_NODES, name);
    for (const interfaceName of [plan.bridge, ...plan.nodes.map((n) => n.hostInterface)]) {
      assert.ok(interfaceName.length <= 15, `${interfaceName} is ${interfaceName.length} characters`);
    }
  });

  it('refuses slots and node counts outside the ranges, naming the field', () => {
    assert.throws(() => planNetwork(SLOT_COUNT, 1, name), /slot 64/);
    assert.throws(() => planNetwork(0, 0, name), /realNodes\.count is 0/);
    assert.throws(() => planNetwork(0, MAX_REAL_NODES + 1, name), /realNodes\.count is 65/);
  });
});

describe('routes', () => {
  it('tells overlapping ranges apart', () => {
    assert.ok(cidrsOverlap('10.128.0.0/16', '10.128.5.0/24'));
    assert.ok(cidrsOverlap('10.0.0.0/8', '10.128.0.0/16'));
    assert.ok(!cidrsOverlap('10.128.0.0/16', '10.129.0.0/16'));
    assert.throws(() => cidrsOverlap('10.0.0/8', '10.0.0.0/8'), /not an IPv4 range/);
  });

  it("finds the machine's routes a slot would collide with, ignoring the default route", () => {
    const plan = planNetwork(0, 1, name);
    const lines = [
      'default via 192.0.2.1 dev eth0',
      '192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2',
      '10.128.7.0/24 via 192.0.2.9 dev eth0',
      '172.30.0.5 dev tun0 scope link',
    ];
    assert.deepEqual(conflictingRoutes(plan, lines), [lines[2], lines[3]]);
    assert.deepEqual(conflictingRoutes(planNetwork(1, 1, name), lines), []);
  });

  it('writes each route kind as `ip route` arguments', () => {
    assert.deepEqual(ipRouteArgs('add', { kind: 'blackhole', destination: '10.128.0.0/16' }), [
      'route',
      'add',
      'blackhole',
      '10.128.0.0/16',
    ]);
    assert.deepEqual(ipRouteArgs('del', { kind: 'via', destination: '10.128.1.0/24', gateway: '172.30.0.11' }), [
      'route',
      'del',
      '10.128.1.0/24',
      'via',
      '172.30.0.11',
    ]);
    assert.deepEqual(ipRouteArgs('add', { kind: 'link', destination: '10.128.255.0/24', device: 'eth0' }), [
      'route',
      'add',
      '10.128.255.0/24',
      'dev',
      'eth0',
    ]);
  });
});
