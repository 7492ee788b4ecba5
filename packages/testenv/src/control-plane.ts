/**
 * startControlPlane: a real etcd + kube-apiserver (and optionally controllers, scheduler and
 * kwok nodes) on loopback, for tests and `kanri dev`.
 *
 * Guarantees: every component listens on 127.0.0.1 on a free port; the call resolves only when
 * /readyz (and, if asked for, every node's Ready condition) says so; on any failure everything
 * already started is stopped and the error names the component with the tail of its log;
 * `stop()` ends each child by PID, waits for it, and removes the data directory.
 * Caveats: Pods on kwok nodes run no containers; they only report Running and Ready. Pods on
 * process nodes (`processNodes`) run real local processes, with the limits listed there.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Agent } from 'undici';
import { type BinaryPaths, ensureBinaries } from './binaries/ensure-binaries.js';
import { buildEtcdArgs, etcdUrl } from './components/etcd.js';
import { buildApiServerArgs, KUBERNETES_SERVICE_IP } from './components/kube-apiserver.js';
import { buildControllerManagerArgs } from './components/kube-controller-manager.js';
import { buildSchedulerArgs } from './components/kube-scheduler.js';
import { buildKwokArgs, buildKwokConfiguration } from './components/kwok.js';
import type { ControlPlane, ControlPlaneOptions, UserCredentials, UserOptions } from './control-plane-types.js';
import { buildKubeconfig, writeKubeconfig } from './credentials/kubeconfig.js';
import { createCertificateAuthority, createServiceAccountKeys } from './credentials/pki.js';
import { issueUser } from './credentials/user-credentials.js';
import { TestenvError } from './errors.js';
import { existingClusterRequested } from './existing-cluster.js';
import { connectExistingCluster, startS3 } from './existing-control-plane.js';
import { LOOPBACK, reservePorts } from './free-port.js';
import { startKwok, waitNodesReady } from './kwok-nodes-ready.js';
import { type ManagedProcess, startProcess } from './managed-process.js';
import { type ProcessNodeSet, startProcessNodes } from './process-node/process-nodes.js';
import { planRealNodes, type RealNodeSet, type RealNodesPlan } from './real-node/real-nodes.js';
import type { S3Server } from './s3/s3-server.js';
import { DATA_DIR_PREFIX, sweepStaleDataDirs, writeOwnerPid } from './stale-data-dirs.js';
import type { BinaryName } from './versions.js';
import { waitHealthy } from './wait-healthy.js';

export type { ControlPlane, ControlPlaneOptions, UserCredentials, UserOptions };

function processNodeCount(options: ControlPlaneOptions): number {
  return options.processNodes ? (options.processNodes.count ?? 1) : 0;
}

/** Nodes that need the scheduler and controllers: process nodes and real nodes. */
function runningNodeCount(options: ControlPlaneOptions): number {
  return processNodeCount(options) + (options.realNodes ? (options.realNodes.count ?? 1) : 0);
}

function neededBinaries(options: ControlPlaneOptions): BinaryName[] {
  const names: BinaryName[] = ['etcd', 'kube-apiserver', 'kubectl'];
  if (options.controllers || (options.nodes ?? 0) > 0 || runningNodeCount(options) > 0)
    names.push('kube-controller-manager', 'kube-scheduler');
  if ((options.nodes ?? 0) > 0) names.push('kwok');
  return names;
}

function required(paths: BinaryPaths, name: BinaryName): string {
  const path = paths[name];
  if (!path) throw new TestenvError(`binary ${name} was not resolved`);
  return path;
}

/**
 * Starts a local control plane. With `KANRI_USE_EXISTING_CLUSTER=true` it connects to the
 * cluster in `KUBECONFIG` instead (see `useExistingCluster`).
 *
 * @example
 * ```ts
 * import { startControlPlane } from '@kanri/testenv';
 *
 * const cp = await startControlPlane({ controllers: true, nodes: 2 });
 * try {
 *   console.log(`export KUBECONFIG=${cp.kubeconfigPath}`);
 * } finally {
 *   await cp.stop();
 * }
 * ```
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  if (options.useExistingCluster ?? existingClusterRequested()) return connectExistingCluster(options);
  if (options.nodeLifecycle && !options.realNodes) throw new TestenvError('nodeLifecycle needs realNodes');
  const nodes = options.nodes ?? 0;
  const withControllers = options.controllers === true || nodes > 0 || runningNodeCount(options) > 0;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const binaries = await ensureBinaries({ binaries: neededBinaries(options), onProgress: options.onBuildProgress });

  const base = options.baseDir ?? tmpdir();
  await sweepStaleDataDirs(base);
  const dataDir = await mkdtemp(join(base, DATA_DIR_PREFIX));
  await writeOwnerPid(dataDir);
  const logs = join(dataDir, 'logs');
  const pki = join(dataDir, 'pki');
  await Promise.all([mkdir(logs), mkdir(pki, { mode: 0o700 }), mkdir(join(dataDir, 'users'))]);

  const processes: ManagedProcess[] = [];
  // How to start each component again, for tests that kill one (see ControlPlane.startComponent).
  const launchers = new Map<string, () => Promise<ManagedProcess>>();
  const start = (name: string, binary: BinaryName, args: string[]) => {
    const child = startProcess({ name, command: required(binaries, binary), args, logFile: join(logs, `${name}.log`) });
    const previous = processes.findIndex((p) => p.name === name);
    if (previous === -1) processes.push(child);
    else processes[previous] = child;
    return child;
  };
  /** Starts a component, remembers how, and waits until `healthy` says it is up. */
  const launch = async (
    name: string,
    binary: BinaryName,
    args: string[],
    healthy: (child: ManagedProcess) => Promise<void>,
  ) => {
    const run = async () => {
      const child = start(name, binary, args);
      await healthy(child);
      return child;
    };
    launchers.set(name, run);
    return run();
  };
  let stopped = false;
  let processNodes: ProcessNodeSet | undefined;
  let realNodesPlan: RealNodesPlan | undefined;
  let realNodes: RealNodeSet | undefined;
  let s3: S3Server | undefined;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // First, while the API server still answers: their containers' processes, then their Nodes.
    await processNodes?.stop();
    await realNodes?.stop();
    await s3?.close(); // after the Pods, which may still be writing to it
    // Reverse start order: dependents go before what they depend on, so nothing logs spurious connection errors.
    for (const child of [...processes].reverse()) await child.stop();
    await realNodesPlan?.release(); // the API server listened on its bridge
    await rm(dataDir, { recursive: true, force: true });
  };

  try {
    const { etcdClientPort, etcdPeerPort, apiPort, kcmPort, schedulerPort, kwokPort } = await reservePorts([
      'etcdClientPort',
      'etcdPeerPort',
      'apiPort',
      'kcmPort',
      'schedulerPort',
      'kwokPort',
    ]);
    const ports = withControllers
      ? [etcdClientPort, etcdPeerPort, apiPort, kcmPort, schedulerPort, ...(nodes > 0 ? [kwokPort] : [])]
      : [etcdClientPort, etcdPeerPort, apiPort];
    // Before the API server, which listens on the real nodes' bridge.
    if (options.realNodes) realNodesPlan = await planRealNodes(options.realNodes, options.onBuildProgress);
    const apiAddress = realNodesPlan?.network.hostAddress ?? LOOPBACK;
    const [ca, serviceAccount] = await Promise.all([
      createCertificateAuthority('kanri-testenv-ca'),
      createServiceAccountKeys(),
    ]);
    const serving = await ca.issue({
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: [
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
      ],
      ipAddresses: [LOOPBACK, KUBERNETES_SERVICE_IP, ...(realNodesPlan?.apiServerAddresses ?? [])],
    });
    const admin = await ca.issue({ commonName: 'kanri-admin', organizations: ['system:masters'], usage: 'client' });
    // The API server's identity towards kubelets (logs, exec), which check it against the CA.
    const kubeletClient = realNodesPlan
      ? await ca.issue({
          commonName: 'kube-apiserver-kubelet-client',
          organizations: ['system:masters'],
          usage: 'client',
        })
      : undefined;
    const file = (name: string) => join(pki, name);
    await Promise.all([
      writeFile(file('ca.crt'), ca.certPem),
      writeFile(file('apiserver.crt'), serving.certPem),
      writeFile(file('apiserver.key'), serving.keyPem, { mode: 0o600 }),
      writeFile(file('sa.pub'), serviceAccount.publicKeyPem),
      writeFile(file('sa.key'), serviceAccount.privateKeyPem, { mode: 0o600 }),
      ...(kubeletClient
        ? [
            writeFile(file('kubelet-client.crt'), kubeletClient.certPem),
            writeFile(file('kubelet-client.key'), kubeletClient.keyPem, { mode: 0o600 }),
          ]
        : []),
    ]);

    const server = `https://${apiAddress}:${apiPort}`;
    const kubeconfig = buildKubeconfig({
      clusterName: 'kanri-testenv',
      server,
      caPem: ca.certPem,
      userName: 'kanri-admin',
      certPem: admin.certPem,
      keyPem: admin.keyPem,
    });
    const kubeconfigPath = join(dataDir, 'kubeconfig');
    await writeKubeconfig(kubeconfigPath, kubeconfig);

    await launch(
      'etcd',
      'etcd',
      buildEtcdArgs({ dataDir: join(dataDir, 'etcd'), clientPort: etcdClientPort, peerPort: etcdPeerPort }),
      (etcd) => waitHealthy({ process: etcd, url: `${etcdUrl({ clientPort: etcdClientPort })}/health`, timeoutMs }),
    );

    await launch(
      'kube-apiserver',
      'kube-apiserver',
      buildApiServerArgs({
        port: apiPort,
        etcdUrl: etcdUrl({ clientPort: etcdClientPort }),
        certDir: join(dataDir, 'apiserver-certs'),
        servingCertFile: file('apiserver.crt'),
        servingKeyFile: file('apiserver.key'),
        clientCaFile: file('ca.crt'),
        serviceAccountPublicKeyFile: file('sa.pub'),
        serviceAccountPrivateKeyFile: file('sa.key'),
        extraArgs: [
          ...(realNodesPlan?.apiServerArgs({
            kubeletClientCert: file('kubelet-client.crt'),
            kubeletClientKey: file('kubelet-client.key'),
          }) ?? []),
          ...(options.apiServerArgs ?? []),
        ],
      }),
      async (apiserver) => {
        const adminAgent = new Agent({ connect: { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem } });
        try {
          await waitHealthy({ process: apiserver, url: `${server}/readyz`, dispatcher: adminAgent, timeoutMs });
        } finally {
          await adminAgent.close();
        }
      },
    );

    const nodeNames = Array.from({ length: nodes }, (_, i) => `kwok-node-${i}`);
    if (withControllers) {
      // Their own serving certificates are self-signed, so the health probe skips verification (loopback only).
      const selfSigned = new Agent({ connect: { rejectUnauthorized: false } });
      try {
        const kcm = start(
          'kube-controller-manager',
          'kube-controller-manager',
          buildControllerManagerArgs({
            port: kcmPort,
            kubeconfigFile: kubeconfigPath,
            certDir: join(dataDir, 'kcm-certs'),
            serviceAccountPrivateKeyFile: file('sa.key'),
            rootCaFile: file('ca.crt'),
            nodeLifecycle: options.nodeLifecycle === true,
          }),
        );
        const scheduler = start(
          'kube-scheduler',
          'kube-scheduler',
          buildSchedulerArgs({
            port: schedulerPort,
            kubeconfigFile: kubeconfigPath,
            certDir: join(dataDir, 'scheduler-certs'),
          }),
        );
        const waits = [
          waitHealthy({
            process: kcm,
            url: `https://${LOOPBACK}:${kcmPort}/healthz`,
            dispatcher: selfSigned,
            timeoutMs,
          }),
          waitHealthy({
            process: scheduler,
            url: `https://${LOOPBACK}:${schedulerPort}/healthz`,
            dispatcher: selfSigned,
            timeoutMs,
          }),
        ];
        if (nodes > 0) {
          const kwokConfig = join(dataDir, 'kwok.yaml');
          const stages = await readFile(join(dirname(required(binaries, 'kwok')), 'kwok-stages.yaml'), 'utf8');
          await writeFile(kwokConfig, buildKwokConfiguration(stages));
          const args = buildKwokArgs({ kubeconfigFile: kubeconfigPath, configFile: kwokConfig, serverPort: kwokPort });
          waits.push(
            startKwok(
              () => start('kwok', 'kwok', args),
              (kwok) => waitNodesReady(kubeconfig, nodeNames, kwok, timeoutMs),
            ),
          );
        }
        await Promise.all(waits);
      } finally {
        await selfSigned.close();
      }
    }

    // Before the process nodes, so that Pods find it from their first start.
    // On real nodes, where their Pods can reach it: the host's bridge address.
    s3 = await startS3(options, realNodesPlan?.network.hostAddress);
    if (options.processNodes && processNodeCount(options) > 0) {
      processNodes = await startProcessNodes({
        options: options.processNodes,
        kubeconfig,
        caPem: ca.certPem,
        dataDir,
        logsDir: logs,
      });
    }
    realNodes = await realNodesPlan?.start({
      server,
      adminKubeconfig: kubeconfig,
      caPem: ca.certPem,
      caFile: file('ca.crt'),
      issue: (commonName, organizations) => ca.issue({ commonName, organizations, usage: 'client' }),
      dataDir,
      logsDir: logs,
      timeoutMs,
    });

    const component = (name: string) => {
      const child = processes.find((p) => p.name === name);
      const relaunch = launchers.get(name);
      if (!child || !relaunch)
        throw new TestenvError(`this control plane has no component "${name}" that can be restarted`);
      return { child, relaunch };
    };
    return {
      server,
      kubeconfig,
      kubeconfigPath,
      dataDir,
      etcdUrl: etcdUrl({ clientPort: etcdClientPort }),
      get processes() {
        return processes.map((p) => ({ name: p.name, pid: p.pid }));
      },
      ports,
      async killComponent(name, signal = 'SIGKILL') {
        const { child } = component(name);
        if (child.running) process.kill(child.pid, signal);
        await child.exited;
      },
      async startComponent(name) {
        const { child, relaunch } = component(name);
        if (child.running) throw new TestenvError(`${name} is still running (PID ${child.pid}); kill it first`);
        await relaunch();
      },
      binaries,
      nodeNames,
      processNodeNames: processNodes?.names ?? [],
      processNodes: processNodes?.nodes ?? [],
      realNodes: realNodes?.nodes ?? [],
      realNodeNetwork: realNodesPlan?.network,
      addUser: (user) => issueUser(ca, dataDir, server, user),
      s3,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
