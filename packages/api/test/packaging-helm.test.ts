import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ForbiddenError, KubeClient, type KubeObject, NotFoundError } from '@kanri/client';
import { type ControlPlane, ensureHelm, startControlPlane, waitFor } from '@kanri/testenv';
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { parseAllDocuments } from 'yaml';
import { helmChart, operatorManifests } from '../src/index.js';
import { gizmoOperator } from './packaging-fixture.js';

const run = promisify(execFile);
const RELEASE = 'gizmo';
const NAMESPACE = 'gizmo-system';
const FIELD_MANAGER = 'packaging-test';

interface Rendered {
  readonly source: string;
  readonly object: KubeObject & { apiVersion: string; kind: string };
}

/** `helm template` output as objects, each with the chart file it came from. */
function parseRendered(text: string): Rendered[] {
  return parseAllDocuments(text)
    .map((doc) => ({
      source: /# Source: (\S+)/.exec(doc.commentBefore ?? doc.toString())?.[1] ?? '',
      object: doc.toJS() as Rendered['object'] | null,
    }))
    .filter((r): r is Rendered => r.object !== null && typeof r.object === 'object');
}

describe('the generated Helm chart with the real helm on a real control plane', () => {
  let helm: string;
  let dir: string;
  let chartDir: string;
  let cp: ControlPlane;
  let client: KubeClient;

  const helmRun = async (...args: string[]) => (await run(helm, args, { maxBuffer: 32 * 1024 * 1024 })).stdout;
  const apply = async (objects: readonly KubeObject[], options: { dryRun?: boolean; force?: boolean } = {}) => {
    for (const o of objects) {
      await client
        .resource<KubeObject>(o.apiVersion ?? '', o.kind ?? '')
        .apply(o, { fieldManager: FIELD_MANAGER, ...options });
    }
  };
  const readyPod = (namespace: string, selector: string) =>
    waitFor(
      `a Ready operator Pod in ${namespace}`,
      async () => {
        const pods = await client.resource<Pod>('v1', 'Pod').list({ namespace, labelSelector: selector });
        return pods.items.find((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      },
      60_000,
      250,
    );

  before(async () => {
    helm = await ensureHelm();
    dir = await mkdtemp(join(tmpdir(), 'kanri-chart-'));
    chartDir = join(dir, gizmoOperator.name);
    for (const file of helmChart(gizmoOperator)) {
      await mkdir(dirname(join(chartDir, file.path)), { recursive: true });
      await writeFile(join(chartDir, file.path), file.content);
    }
    cp = await startControlPlane({ controllers: true, nodes: 1 });
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  });

  after(async () => {
    await client?.close();
    await cp?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes helm lint --strict', async () => {
    const out = await helmRun('lint', '--strict', chartDir);
    assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders RBAC, Deployment and Service from templates/ and the CRDs only from crds/', async () => {
    const rendered = parseRendered(await helmRun('template', RELEASE, chartDir, '--namespace', NAMESPACE));
    assert.deepEqual(rendered.map((r) => r.object.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    // What `helm uninstall` deletes is exactly what the templates render: no CRD is among them.
    for (const r of rendered) assert.match(r.source, /^gizmo-operator\/templates\//, r.object.kind);
    const withCrds = parseRendered(await helmRun('template', RELEASE, chartDir, '--include-crds'));
    const crds = withCrds.filter((r) => r.object.kind === 'CustomResourceDefinition');
    assert.deepEqual(
      crds.map((r) => r.source),
      ['gizmo-operator/crds/gizmos.packaging-test.kanri.dev.yaml'],
    );
    const monitored = parseRendered(
      await helmRun('template', RELEASE, chartDir, '--set', 'serviceMonitor.enabled=true', '--set', 'replicas=2'),
    );
    assert.equal(monitored.filter((r) => r.object.kind === 'ServiceMonitor').length, 1);
    const deployment = monitored.find((r) => r.object.kind === 'Deployment')?.object as Deployment;
    assert.equal(deployment.spec?.replicas, 2);
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, 'registry.example/gizmo-operator:1.4.2');
    await assert.rejects(helmRun('template', RELEASE, chartDir, '--set', 'leaderElection=maybe'), /leaderElection/);
  });

  it('applies to the API server, dry run first and then for real, and the operator Pod becomes Ready', async () => {
    const rendered = parseRendered(await helmRun('template', RELEASE, chartDir, '--namespace', NAMESPACE));
    const objects = rendered.map((r) => r.object);
    const crds = gizmoOperator.crds() as unknown as KubeObject[];
    // The namespace enforces the restricted Pod Security profile: a Pod that is not non-root,
    // seccomp-confined and capability-free is refused.
    await client.resource<KubeObject>('v1', 'Namespace').create({
      metadata: { name: NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    await assert.rejects(
      client.resource<Pod>('v1', 'Pod').create({
        metadata: { name: 'root-pod', namespace: NAMESPACE },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      }),
      ForbiddenError,
      'the restricted profile is enforced',
    );

    await apply(crds, { dryRun: true });
    await apply(objects, { dryRun: true });
    await assert.rejects(
      client.resource<Deployment>('apps/v1', 'Deployment').get('gizmo-operator', { namespace: NAMESPACE }),
      NotFoundError,
      'a dry run persists nothing',
    );

    await apply(crds);
    await waitFor('the Gizmo CRD to be Established', async () => {
      const crd = await client
        .resource<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
          'apiextensions.k8s.io/v1',
          'CustomResourceDefinition',
        )
        .get('gizmos.packaging-test.kanri.dev');
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    });
    await apply(objects);
    const pod = await readyPod(NAMESPACE, `app.kubernetes.io/instance=${RELEASE}`);
    assert.equal(pod.spec?.serviceAccountName, 'gizmo-operator');
    assert.equal(pod.spec?.securityContext?.runAsNonRoot, true);
    assert.equal(pod.spec?.containers[0]?.readinessProbe?.httpGet?.path, '/readyz');
    const deployment = await waitFor(
      'the Deployment to report 1 ready replica',
      async () => {
        const d = await client
          .resource<Deployment>('apps/v1', 'Deployment')
          .get('gizmo-operator', { namespace: NAMESPACE });
        return d.status?.readyReplicas === 1 ? d : undefined;
      },
      60_000,
    );
    assert.equal(deployment.metadata?.labels?.['app.kubernetes.io/managed-by'], 'Helm');
  });

  it('applies the plain manifests (operator.yaml) too, with their own restricted Namespace', async () => {
    const { all } = operatorManifests(gizmoOperator, { namespace: 'gizmo-plain' });
    // The chart's release already owns the cluster-scoped RBAC under another field manager.
    await apply(all as KubeObject[], { dryRun: false, force: true });
    const ns = await client.resource<KubeObject>('v1', 'Namespace').get('gizmo-plain');
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    const pod = await readyPod('gizmo-plain', 'app.kubernetes.io/name=gizmo-operator');
    assert.equal(pod.metadata?.namespace, 'gizmo-plain');
  });
});
