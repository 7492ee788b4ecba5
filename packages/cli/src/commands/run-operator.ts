/**
 * `kanri dev run`: the inner loop of writing an operator. Against the `kanri dev up` control
 * plane (started if none runs, and left running for the next try), it installs the operator's
 * CRDs and admission policies by server-side apply and runs its manager in this process with readable logs until Ctrl-C,
 * then stops it gracefully. One replica, so no leader election; the health and metrics server
 * listens on loopback only.
 */
import type { KubeClient, KubeObject } from '@kanri/client';
import { isProcessAlive, waitFor } from '@kanri/testenv';
import { Command } from 'commander';
import { type DevState, readDevState } from '../dev-state.js';
import { waitForShutdownSignal } from '../options.js';

interface RunOptions {
  readonly operator?: string;
  readonly bindAddress: string;
}

interface CustomResourceDefinition extends KubeObject {
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

/** Starts the `kanri dev up` control plane; given by `dev.ts`, which owns it. */
export type StartDevControlPlane = () => Promise<void>;

async function devControlPlane(start: StartDevControlPlane): Promise<DevState> {
  const current = await readDevState();
  if (current && isProcessAlive(current.pid)) return current;
  console.log('No `kanri dev up` control plane is running; starting one (it keeps running after Ctrl-C here).');
  await start();
  const started = await readDevState();
  if (!started) throw new Error('kanri dev up finished but left no state; see `kanri dev status`');
  return started;
}

/** Server-side applies each CRD and waits until the API server serves it. */
async function installCrds(client: KubeClient, crds: readonly KubeObject[], shown: string): Promise<string[]> {
  const definitions = client.resource<CustomResourceDefinition>('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
  const names: string[] = [];
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    try {
      await client.apply(crd, { fieldManager: 'kanri-dev', force: true });
    } catch (error) {
      throw new Error(
        `${shown}: the API server refused CRD ${name}: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    names.push(name);
  }
  for (const name of names) {
    await waitFor(
      `CRD ${name} to be Established`,
      async () => {
        const crd = await definitions.get(name);
        return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      },
      60_000,
      200,
    );
  }
  return names;
}

export async function runOperator(options: RunOptions, startControlPlane: StartDevControlPlane): Promise<void> {
  // Loaded on use, so that every other `kanri` command starts quickly.
  const [{ KubeClient }, { pino }, { loadOperator, resolveOperatorModule }, { prettyDestination }] = await Promise.all([
    import('@kanri/client'),
    import('pino'),
    import('../operator-module.js'),
    import('../pretty-log.js'),
  ]);
  // The operator loads first: a mistake in the project is reported before anything starts.
  const path = await resolveOperatorModule(options.operator);
  const { definition, shown } = await loadOperator(path);
  const state = await devControlPlane(startControlPlane);

  const client = await KubeClient.load({ kubeconfig: state.kubeconfigPath });
  let crds: string[];
  let policies: string[];
  try {
    crds = await installCrds(client, definition.crds(), shown);
    // After the CRDs: a policy whose params are custom resources needs their kind served. An
    // operator that checks its policies (the PostgreSQL operator's) runs nothing without them.
    for (const policy of definition.policies())
      await client.apply(policy as KubeObject, { fieldManager: 'kanri-dev', force: true });
    policies = definition.policyNames();
  } finally {
    await client.close();
  }

  // The operator builds its own client from its own @kanri/client, pointed here.
  process.env.KUBECONFIG = state.kubeconfigPath;
  const logger = pino({ name: definition.name, level: process.env.KANRI_LOG_LEVEL ?? 'info' }, prettyDestination());
  const manager = await definition.manager({
    leaderElection: undefined,
    bindAddress: options.bindAddress,
    handleSignals: false,
    logger,
  });
  console.log(`Operator ${definition.name} from ${shown}`);
  console.log(`Control plane ${state.server}; export KUBECONFIG=${state.kubeconfigPath}`);
  console.log(`CRDs installed: ${crds.join(', ') || '(none)'}`);
  if (policies.length > 0) console.log(`Admission policies installed: ${policies.join(', ')}`);
  console.log(`Running ${definition.controllers.length} controller(s); Ctrl-C stops the operator.`);

  const running = manager.start();
  const outcome = await Promise.race([waitForShutdownSignal(), running.then(() => 'exited' as const)]);
  if (outcome !== 'exited') {
    console.log(`${outcome}: stopping ${definition.name} gracefully (again to force)`);
    process.once('SIGINT', () => process.exit(130));
    manager.stop();
    await running;
  }
  await manager.client.close();
  console.log(`Stopped ${definition.name}. The control plane keeps running; \`kanri dev down\` stops it.`);
}

export function devRunCommand(startControlPlane: StartDevControlPlane): Command {
  return new Command('run')
    .description(
      "Install an operator's CRDs into the `kanri dev up` control plane (starting one if none runs) and run the operator here with readable logs until Ctrl-C",
    )
    .option(
      '--operator <module>',
      'the built module whose default (or `operator`) export is a defineOperator value (default: package.json "kanri.operator")',
    )
    .option('--bind-address <host:port>', 'where the operator serves /healthz, /readyz and /metrics', '127.0.0.1:0')
    .addHelpText(
      'after',
      '\nIn a project made by `kanri init`:\n  npm run build && kanri dev run\nElsewhere:\n  kanri dev run --operator dist/src/operator.js',
    )
    .action((options: RunOptions) => runOperator(options, startControlPlane));
}
