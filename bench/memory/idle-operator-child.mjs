#!/usr/bin/env node
// A minimal operator that watches nothing but its own kind (Website, from examples/03): one
// controller whose reconcile does nothing, leader election on, health and metrics served, as an
// installed operator runs. KUBECONFIG and POD_NAMESPACE come from the driver.
import { controller, Manager } from '@kanri/runtime';

const widgets = controller('example.kanri.dev/v1', 'Website').reconcile(async () => undefined);
const manager = await Manager.create({
  name: 'idle-operator',
  bindAddress: '127.0.0.1:0',
  leaderElection: { namespace: process.env.POD_NAMESPACE ?? 'default' },
});
manager.add(widgets);
await manager.start();
