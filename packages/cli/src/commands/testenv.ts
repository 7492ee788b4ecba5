/** `kanri testenv install`: build (or find) every control-plane binary and helm now, so the first test run does not pay for it. */

import { allComponents, cacheRoot, ensureBinaries, ensureHelm, helmComponent } from '@kanri/testenv';
import { Command } from 'commander';

export function testenvCommand(): Command {
  const command = new Command('testenv').description('Manage the binaries of the local control plane');
  command
    .command('install')
    .description(
      'Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok, and helm (for `kanri generate --check` and packaging tests), from pinned Go modules into the per-user cache (a no-op when cached; honours KUBEBUILDER_ASSETS)',
    )
    .option('--no-helm', 'skip helm: only the control-plane binaries')
    .action(async (options: { helm: boolean }) => {
      const started = Date.now();
      const paths: Record<string, string> = { ...(await ensureBinaries()) };
      const components = [...allComponents];
      if (options.helm) {
        paths.helm = await ensureHelm();
        components.push(helmComponent);
      }
      const versions = components.map((c) => `${c.name} ${c.version}`).join(', ');
      console.log(`Binaries ready (${versions}) in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
      for (const [name, path] of Object.entries(paths)) console.log(`  ${name.padEnd(24)} ${path}`);
      console.log(`Cache: ${cacheRoot()}`);
    });
  return command;
}
