/** `kanri testenv install`: build (or find) every control-plane binary now, so the first test run does not pay for it. */

import { allComponents, cacheRoot, ensureBinaries } from '@kanri/testenv';
import { Command } from 'commander';

export function testenvCommand(): Command {
  const command = new Command('testenv').description('Manage the binaries of the local control plane');
  command
    .command('install')
    .description(
      'Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from pinned Go modules into the per-user cache (a no-op when cached; honours KUBEBUILDER_ASSETS)',
    )
    .action(async () => {
      const started = Date.now();
      const paths = await ensureBinaries();
      const versions = allComponents.map((c) => `${c.name} ${c.version}`).join(', ');
      console.log(`Control-plane binaries ready (${versions}) in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
      for (const [name, path] of Object.entries(paths)) console.log(`  ${name.padEnd(24)} ${path}`);
      console.log(`Cache: ${cacheRoot()}`);
    });
  return command;
}
