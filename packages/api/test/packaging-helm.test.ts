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
import { gizmoOperator, ownedGizmoOperator } from './packaging-fixture.js';

const run = promisify(execFile);
const RELEASE = 'gizmo';
const NAMESPACE = 'gizmo-system';
const FIELD_MANAGER = 'packaging-test';

interface EndpointSliceShape {
  endpoints?: { targetRef?: { name?: string } }[];
  ports?: { name?: string; port?: number }[];
}

interface WebhookConfigurationShape {
  webhooks: {
    failurePolicy: string;
    clientConfig: { service: { name: string; namespace: string; port: number; path: string } };
  }[];
}

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
    // With no webhook server behind it (kwok Pods run nothing) the guard fails closed, and any CRD
    // deletion would make the API server dial the Service's ClusterIP, off the loopback. So the
    // configuration goes first, and nothing here deletes a CRD while it exists.
    await client
      ?.resource<KubeObject>('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration')
      .delete('gizmo-operator-crd-deletion-guard')
      .catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) throw error;
      });
    await client?.close();
    await cp?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes helm lint --strict', async () => {
    const out = await helmRun('lint', '--strict', chartDir);
    assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders RBAC, Deployment, Services and the webhook configuration from templates/ and the CRDs only from crds/', async () => {
    const rendered = parseRendered(await helmRun('template', RELEASE, chartDir, '--namespace', NAMESPACE));
    assert.deepEqual(rendered.map((r) => r.object.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Service',
      'Service',
      'ServiceAccount',
      'ValidatingWebhookConfiguration',
    ]);
    for (const r of rendered) {
      if (r.object.kind.startsWith('Cluster') || r.object.kind === 'ValidatingWebhookConfiguration') {
        assert.equal(r.object.metadata?.namespace, undefined, `${r.object.kind} is cluster-scoped`);
      } else {
        assert.equal(r.object.metadata?.namespace, NAMESPACE, `${r.object.kind} ${r.object.metadata?.name}`);
      }
    }
    const configuration = rendered.find((r) => r.object.kind === 'ValidatingWebhookConfiguration')
      ?.object as unknown as {
      webhooks: { clientConfig: { service: { name: string; namespace: string } } }[];
    };
    assert.deepEqual(configuration.webhooks[0]?.clientConfig.service.namespace, NAMESPACE);
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
    await assert.rejects(helmRun('template', RELEASE, chartDir, '--set', 'metrics.port=9443'), /webhook's port/);
  });

  it('renders no webhook objects, none of their RBAC, and tells the operator, with crdDeletionGuard.enabled=false', async () => {
    const rendered = parseRendered(
      await helmRun('template', RELEASE, chartDir, '--namespace', NAMESPACE, '--set', 'crdDeletionGuard.enabled=false'),
    );
    assert.deepEqual(rendered.map((r) => `${r.object.kind}/${r.object.metadata?.name}`).sort(), [
      'ClusterRole/gizmo-operator',
      'ClusterRoleBinding/gizmo-operator',
      'Deployment/gizmo-operator',
      'Role/gizmo-operator-leader-election',
      'RoleBinding/gizmo-operator-leader-election',
      'Service/gizmo-operator-metrics',
      'ServiceAccount/gizmo-operator',
    ]);
    const clusterRole = rendered.find((r) => r.object.kind === 'ClusterRole')?.object as unknown as {
      rules: { resources: string[] }[];
    };
    assert.ok(clusterRole.rules.length > 0);
    assert.equal(
      clusterRole.rules.some((r) => r.resources.includes('validatingwebhookconfigurations')),
      false,
    );
    const deployment = rendered.find((r) => r.object.kind === 'Deployment')?.object as Deployment;
    const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'KANRI_CRD_DELETION_GUARD')?.value, 'false');
    await assert.rejects(
      helmRun('template', RELEASE, chartDir, '--set', 'crdDeletionGuard.enabled=sometimes'),
      /crdDeletionGuard/,
    );
  });

  it('renders the admission policies keyed on the release namespace, needs Kubernetes 1.30, and the API server takes them', async () => {
    const ownedDir = join(dir, ownedGizmoOperator.name);
    for (const file of helmChart(ownedGizmoOperator)) {
      await mkdir(dirname(join(ownedDir, file.path)), { recursive: true });
      await writeFile(join(ownedDir, file.path), file.content);
    }
    await helmRun('lint', '--strict', ownedDir);
    await assert.rejects(
      helmRun('template', 'owned', ownedDir, '--kube-version', '1.29.0'),
      /chart requires kubeVersion: >=1\.30\.0-0 which is incompatible with Kubernetes v1\.29\.0/,
    );
    const policies = parseRendered(
      await helmRun('template', 'owned', ownedDir, '--namespace', 'owned-ns', '--kube-version', '1.30.0'),
    ).filter((r) => r.source.endsWith('templates/admission-policies.yaml'));
    assert.deepEqual(
      policies.filter((r) => r.object.kind === 'ValidatingAdmissionPolicy').map((r) => r.object.metadata?.name),
      ownedGizmoOperator.policyNames(),
    );
    const text = JSON.stringify(policies.map((r) => r.object));
    assert.ok(text.includes("'system:serviceaccount:owned-ns:owned-gizmo-operator'"));
    assert.ok(!text.includes('kanri-release-namespace'));
    // A dry run compiles every CEL expression and checks every field the API server knows.
    await apply(
      policies.map((r) => r.object),
      { dryRun: true },
    );
  });

  it('watching one namespace: Roles there and in its own, no ClusterRole, no webhook, and the operator told', async () => {
    const rendered = parseRendered(
      await helmRun('template', RELEASE, chartDir, '--namespace', NAMESPACE, '--set', 'watchNamespace=team-a'),
    );
    const placed = rendered.map((r) => `${r.object.kind}/${r.object.metadata?.namespace}/${r.object.metadata?.name}`);
    assert.deepEqual(placed.sort(), [
      'Deployment/gizmo-system/gizmo-operator',
      'Role/gizmo-system/gizmo-operator-leader-election',
      'Role/team-a/gizmo-operator',
      'RoleBinding/gizmo-system/gizmo-operator-leader-election',
      'RoleBinding/team-a/gizmo-operator',
      'Service/gizmo-system/gizmo-operator-metrics',
      'ServiceAccount/gizmo-system/gizmo-operator',
    ]);
    const binding = rendered.find((r) => r.object.kind === 'RoleBinding' && r.object.metadata?.namespace === 'team-a')
      ?.object as unknown as { subjects: { namespace: string }[] };
    assert.equal(binding.subjects[0]?.namespace, NAMESPACE, "it binds the release's ServiceAccount");
    const deployment = rendered.find((r) => r.object.kind === 'Deployment')?.object as Deployment;
    const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'KANRI_WATCH_NAMESPACE')?.value, 'team-a');
    assert.equal(env.find((e) => e.name === 'KANRI_CRD_DELETION_GUARD')?.value, 'false');
    await assert.rejects(helmRun('template', RELEASE, chartDir, '--set', 'watchNamespace=Team_A'), /watchNamespace/);
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

    // The webhook Service selects exactly this Pod, on the container port named "webhook".
    const slice = await waitFor(
      'an EndpointSlice of the webhook Service with the operator Pod in it',
      async () => {
        const slices = await client
          .resource<KubeObject & EndpointSliceShape>('discovery.k8s.io/v1', 'EndpointSlice')
          .list({
            namespace: NAMESPACE,
            labelSelector: 'kubernetes.io/service-name=gizmo-operator-webhook',
          });
        return slices.items.find((s) => s.endpoints?.some((e) => e.targetRef?.name === pod.metadata?.name));
      },
      60_000,
      250,
    );
    assert.deepEqual(
      slice.ports?.map((p) => [p.name, p.port]),
      [['webhook', 9443]],
    );
    const configuration = await client
      .resource<KubeObject & WebhookConfigurationShape>(
        'admissionregistration.k8s.io/v1',
        'ValidatingWebhookConfiguration',
      )
      .get('gizmo-operator-crd-deletion-guard');
    assert.deepEqual(configuration.webhooks[0]?.clientConfig.service, {
      name: 'gizmo-operator-webhook',
      namespace: NAMESPACE,
      port: 443,
      path: '/validate-crd-deletion',
    });
    assert.equal(configuration.webhooks[0]?.failurePolicy, 'Fail');
    const role = await client
      .resource<KubeObject>('rbac.authorization.k8s.io/v1', 'Role')
      .get('gizmo-operator-namespace', {
        namespace: NAMESPACE,
      });
    assert.equal(role.metadata?.namespace, NAMESPACE);
  });

  it("makes the operator's manager serve the guard in the cluster, unless the Deployment says KANRI_CRD_DELETION_GUARD=false", async () => {
    const saved = { ns: process.env.POD_NAMESPACE, guard: process.env.KANRI_CRD_DELETION_GUARD };
    const restore = (name: string, value: string | undefined) => {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    };
    try {
      // Created, never started: what matters is whether the manager has a webhook runner.
      const options = { client, bindAddress: false, handleSignals: false } as const;
      process.env.POD_NAMESPACE = NAMESPACE;
      delete process.env.KANRI_CRD_DELETION_GUARD;
      const serving = await gizmoOperator.manager(options);
      assert.equal(serving.webhooks?.configurationName, 'gizmo-operator-crd-deletion-guard');
      process.env.KANRI_CRD_DELETION_GUARD = 'false';
      assert.equal((await gizmoOperator.manager(options)).webhooks, undefined);
      delete process.env.POD_NAMESPACE;
      delete process.env.KANRI_CRD_DELETION_GUARD;
      assert.equal((await gizmoOperator.manager(options)).webhooks, undefined, 'out of cluster it is opt-in');
    } finally {
      restore('POD_NAMESPACE', saved.ns);
      restore('KANRI_CRD_DELETION_GUARD', saved.guard);
    }
  });

  it('applies the plain manifests (operator.yaml) too, with their own restricted Namespace', async () => {
    const { all } = operatorManifests(gizmoOperator, { namespace: 'gizmo-plain' });
    // The chart's release already owns the cluster-scoped RBAC under another field manager.
    await apply(all as KubeObject[], { dryRun: false, force: true });
    const ns = await client.resource<KubeObject>('v1', 'Namespace').get('gizmo-plain');
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    const pod = await readyPod('gizmo-plain', 'app.kubernetes.io/name=gizmo-operator');
    assert.equal(pod.metadata?.namespace, 'gizmo-plain');
    // One configuration per cluster: the plain install took it over and points it at its own Service.
    const configuration = await client
      .resource<KubeObject & WebhookConfigurationShape>(
        'admissionregistration.k8s.io/v1',
        'ValidatingWebhookConfiguration',
      )
      .get('gizmo-operator-crd-deletion-guard');
    assert.equal(configuration.webhooks[0]?.clientConfig.service.namespace, 'gizmo-plain');
    await client.resource<KubeObject>('v1', 'Service').get('gizmo-operator-webhook', { namespace: 'gizmo-plain' });
  });
});
