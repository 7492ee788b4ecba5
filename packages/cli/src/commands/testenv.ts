/**
 * `kanri testenv install`: build (or find) every control-plane binary, helm, and the backup test
 * tools (versitygw, pgBackRest) now, so the first test run does not pay for them.
 */

import {
  allComponents,
  cacheRoot,
  ensureBinaries,
  ensureHelm,
  ensurePgBackRest,
  ensureVersitygw,
  helmComponent,
  pgBackRestPackage,
  versitygwComponent,
} from '@kanri/testenv';
import { Command } from 'commander';

export function testenvCommand(): Command {
  const command = new Command('testenv').description('Manage the binaries of the local control plane');
  command
    .command('install')
    .description(
      'Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok, helm (for `kanri generate --check` and packaging tests) and versitygw (the S3 server of backup tests) from pinned Go modules, and fetch pgBackRest (Debian 13 package, checksum pinned), into the per-user cache (a no-op when cached; honours KUBEBUILDER_ASSETS)',
    )
    .option('--no-helm', 'skip helm')
    .option('--no-backup-tools', 'skip versitygw and pgBackRest (backup tests need them)')
    .action(async (options: { helm: boolean; backupTools: boolean }) => {
      const started = Date.now();
      const paths: Record<string, string> = { ...(await ensureBinaries()) };
      const versions = allComponents.map((c) => `${c.name} ${c.version}`);
      // One line per optional tool before its (possibly long) build, so a fresh machine's log shows what it waits for.
      const step = async (name: string, version: string, ensure: () => Promise<string>) => {
        console.error(`kanri testenv: ensuring ${name} ${version}…`);
        paths[name] = await ensure();
        versions.push(`${name} ${version}`);
      };
      if (options.helm) await step('helm', helmComponent.version, () => ensureHelm());
      if (options.backupTools) {
        await step('versitygw', versitygwComponent.version, () => ensureVersitygw());
        await step('pgbackrest', pgBackRestPackage.version, () => ensurePgBackRest());
      }
      console.log(`Binaries ready (${versions.join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
      for (const [name, path] of Object.entries(paths)) console.log(`  ${name.padEnd(24)} ${path}`);
      console.log(`Cache: ${cacheRoot()}`);
    });
  return command;
}
