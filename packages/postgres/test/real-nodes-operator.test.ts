/**
 * The operator as users run it: its image built from packages/postgres/Dockerfile (`--target
 * operator`) by buildah, installed by the generated Helm chart, and run by a real kubelet and
 * containerd under the `restricted` Pod Security Standard, reaching the API server through the
 * `kubernetes` Service and kube-proxy.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { helmChart } from '@kanri/api';
import { KubeClient, type KubeObject } from '@kanri/client';
import {
  type BuiltImage,
  buildImages,
  type ControlPlane,
  ensureHelm,
  realNodesUnsupportedReason,
  startControlPlane,
  waitFor,
} from '@kanri/testenv';
import type { Namespace, Pod } from 'kubernetes-types/core/v1.js';
import { names, postgresOperator } from '../src/index.js';
import { clusterManifest, clusters } from './harness.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../../../', import.meta.url));
const NAMESPACE = postgresOperator.namespace ?? 'postgres-operator';
const unsupported = await realNodesUnsupportedReason();

describe('the operator on real nodes, from its Dockerfile and Helm chart', { skip: unsupported }, () => {
  let image: BuiltImage;
  let cp: ControlPlane;
  let client: KubeClient;
  let dir: string;
  let helm: string;
  let operatorPod: Pod;
  const kubectl = async (...args: string[]) => {
    const { kubectl: program } = cp.binaries;
    assert.ok(program, 'the control plane has kubectl');
    return (await run(program, args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } })).stdout;
  };

  before(async () => {
    [image] = (await buildImages([
      {
        dockerfile: join(repo, 'packages', 'postgres', 'Dockerfile'),
        context: repo,
        tag: postgresOperator.image,
        target: 'operator',
      },
    ])) as [BuiltImage];
    cp = await startControlPlane({ realNodes: { count: 1, imageArchives: [image.archive] } });
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    helm = await ensureHelm();
    dir = await mkdtemp(join(tmpdir(), 'kanri-pg-chart-'));
    for (const file of helmChart(postgresOperator)) {
      await mkdir(dirname(join(dir, file.path)), { recursive: true });
      await writeFile(join(dir, file.path), file.content);
    }
    // The namespace enforces `restricted` before the chart puts anything in it.
    await client.resource<Namespace>('v1', 'Namespace').create({
      metadata: {
        name: NAMESPACE,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    });
    await run(
      helm,
      [
        'install',
        'pg',
        dir,
        '--namespace',
        NAMESPACE,
        '--set',
        'image.pullPolicy=IfNotPresent',
        '--wait',
        '--timeout',
        '3m',
      ],
      { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } },
    );
  });

  after(async () => {
    await client?.close();
    await cp?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('becomes Ready through the kubelet probing /readyz, in a container of the built image', async () => {
    operatorPod = await waitFor(
      'a Ready operator Pod',
      async () =>
        (await client.resource<Pod>('v1', 'Pod').list({ namespace: NAMESPACE })).items.find((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ),
      120_000,
      500,
    );
    const container = operatorPod.spec?.containers[0];
    assert.equal(container?.image, postgresOperator.image);
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(operatorPod.spec?.nodeName, 'real-node-0');
    const status = operatorPod.status?.containerStatuses?.[0];
    assert.match(status?.containerID ?? '', /^containerd:\/\//);
    assert.match(status?.imageID ?? '', /sha256:[0-9a-f]{64}$/);
    assert.match(operatorPod.status?.podIP ?? '', /^10\.\d+\.0\.\d+$/, 'a Pod address of real-node-0, not loopback');
  });

  it('runs as the image’s unprivileged user with the restricted profile the namespace enforces', async () => {
    const stdout = await kubectl(
      'exec',
      '-n',
      NAMESPACE,
      operatorPod.metadata?.name ?? '',
      '--',
      'sh',
      '-c',
      'id -u; id -g; cat /proc/1/status',
    );
    const [uid, gid] = stdout.split('\n');
    assert.equal(uid, '1000');
    assert.equal(gid, '1000');
    assert.match(stdout, /^NoNewPrivs:\s+1$/m, 'allowPrivilegeEscalation: false reached the process');
    assert.match(stdout, /^CapEff:\s+0+$/m, 'every capability dropped');
    assert.match(stdout, /^Seccomp:\s+2$/m, 'the RuntimeDefault seccomp profile (filter mode)');
    // The same namespace refuses a Pod that asks for more: the standard is enforced, not just labelled.
    await assert.rejects(
      client.resource<Pod>('v1', 'Pod').create(
        {
          metadata: { name: 'privileged', namespace: NAMESPACE },
          spec: { containers: [{ name: 'c', image: postgresOperator.image, securityContext: { privileged: true } }] },
        },
        { namespace: NAMESPACE },
      ),
      /violates PodSecurity "restricted:latest"/,
    );
  });

  it('reconciles through the kubernetes Service: a PostgresCluster gets its Services and Secrets', async () => {
    const cluster = 'real';
    await clusters(client).create(clusterManifest(cluster, 1), { namespace: 'default' });
    await waitFor(
      `the ${names.primaryService(cluster)} Service the operator creates`,
      async () =>
        (await client.resource<KubeObject>('v1', 'Service').list({ namespace: 'default' })).items.some(
          (s) => s.metadata?.name === names.primaryService(cluster),
        ),
      120_000,
      500,
    );
    const logs = await kubectl('logs', '-n', NAMESPACE, operatorPod.metadata?.name ?? '');
    assert.match(logs, /"level":\d+/, 'the operator logs JSON lines, read from the kubelet');
  });
});
