import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import { parse } from 'yaml';
import {
  crdDeletionGuardFromEnv,
  defineOperator,
  helmChart,
  managerOptionsFromEnv,
  manifestsToYaml,
  operatorDefinitionProblem,
  operatorDockerfile,
  operatorManifests,
  parseImage,
} from '../src/index.js';
import { block, inline, templateYaml, withValue } from '../src/packaging/template-yaml.js';
import { Gizmo, gizmoOperator, gizmos, ownedGizmoOperator } from './packaging-fixture.js';

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } };

const find = (objects: readonly Record<string, unknown>[], kind: string) =>
  objects.filter((o) => o.kind === kind) as Obj[];
const deploymentOf = (objects: readonly Record<string, unknown>[]) =>
  find(objects, 'Deployment')[0] as unknown as Deployment;

describe('operatorManifests', () => {
  const { all, crds, rbac, workload, webhook } = operatorManifests(gizmoOperator);
  const deployment = deploymentOf(all);
  const pod = deployment.spec?.template.spec;
  const container = pod?.containers[0];

  it('lists namespace, CRDs, RBAC, workload and the webhook in apply order, all in the operator namespace', () => {
    assert.deepEqual(
      all.map((o) => o.kind),
      [
        'Namespace',
        'CustomResourceDefinition',
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'Role',
        'RoleBinding',
        'Deployment',
        'Service',
        'Service',
        'ValidatingWebhookConfiguration',
      ],
    );
    assert.equal(crds.length, 1);
    assert.equal(rbac.length, 7);
    assert.equal(workload.length, 2);
    assert.equal(webhook.length, 2);
    for (const o of [...rbac, ...workload, ...webhook] as Obj[]) {
      if (o.kind.startsWith('Cluster') || o.kind === 'ValidatingWebhookConfiguration') continue;
      assert.equal(o.metadata.namespace, 'gizmo-operator-system', `${o.kind} namespace`);
    }
    const ns = find(all, 'Namespace')[0] as Obj & { metadata: { labels: Record<string, string> } };
    assert.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  });

  it('runs as non-root with a read-only root filesystem, no privilege escalation, no capabilities and RuntimeDefault seccomp', () => {
    assert.equal(pod?.securityContext?.runAsNonRoot, true);
    assert.ok((pod?.securityContext?.runAsUser ?? 0) > 0, 'a non-zero uid');
    assert.equal(pod?.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    const sc = container?.securityContext;
    assert.equal(sc?.runAsNonRoot, true);
    assert.equal(sc?.readOnlyRootFilesystem, true);
    assert.equal(sc?.allowPrivilegeEscalation, false);
    assert.deepEqual(sc?.capabilities?.drop, ['ALL']);
    assert.equal(sc?.privileged, undefined);
    assert.equal(pod?.serviceAccountName, 'gizmo-operator');
  });

  it('probes /healthz and /readyz on the metrics port, which the Service exposes', () => {
    assert.deepEqual(container?.ports?.[0], { name: 'metrics', containerPort: 8080, protocol: 'TCP' });
    assert.equal(container?.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(container?.livenessProbe?.httpGet?.port, 'metrics');
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(container?.readinessProbe?.httpGet?.port, 'metrics');
    const service = find(all, 'Service').find((o) => o.metadata.name === 'gizmo-operator-metrics') as Obj & {
      spec: { ports: unknown[]; selector: unknown };
    };
    assert.deepEqual(service.spec.ports, [{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }]);
    assert.deepEqual(service.spec.selector, deployment.spec?.selector.matchLabels);
    const moved = deploymentOf(operatorManifests(gizmoOperator, { metricsPort: 9090 }).all);
    const c = moved.spec?.template.spec?.containers[0];
    assert.equal(c?.ports?.[0]?.containerPort, 9090);
    assert.equal(c?.env?.find((e) => e.name === 'KANRI_BIND_ADDRESS')?.value, ':9090');
    assert.throws(
      () => operatorManifests(gizmoOperator, { metricsPort: 9443 }),
      /metricsPort 9443 is the admission webhook's port/,
    );
  });

  it('sets resource requests and limits', () => {
    assert.deepEqual(container?.resources, {
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { cpu: '500m', memory: '256Mi' },
    });
    const resources = { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '2Gi' } };
    assert.deepEqual(
      deploymentOf(operatorManifests(gizmoOperator, { resources }).all).spec?.template.spec?.containers[0]?.resources,
      resources,
    );
  });

  it('turns leader election on, with POD_NAMESPACE from the downward API and a Role for the Lease', () => {
    const env = container?.env ?? [];
    assert.deepEqual(env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom, {
      fieldRef: { fieldPath: 'metadata.namespace' },
    });
    assert.equal(env.find((e) => e.name === 'KANRI_LEADER_ELECTION')?.value, 'true');
    const role = find(rbac, 'Role').find((r) => r.metadata.name === 'gizmo-operator-leader-election') as Obj & {
      rules: { resources: string[]; verbs: string[] }[];
    };
    assert.deepEqual(role.rules[0]?.resources, ['leases']);
    const off = deploymentOf(operatorManifests(gizmoOperator, { leaderElection: false }).all);
    assert.equal(
      off.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'KANRI_LEADER_ELECTION')?.value,
      'false',
    );
    assert.throws(
      () => operatorManifests(gizmoOperator, { leaderElection: false, replicas: 2 }),
      /replicas 2 needs leaderElection: true/,
    );
  });

  it('reads that environment back into the manager options', () => {
    assert.deepEqual(managerOptionsFromEnv({ POD_NAMESPACE: 'ops' }, 'fallback'), {
      leaderElection: { namespace: 'ops' },
    });
    assert.deepEqual(managerOptionsFromEnv({}, 'fallback'), { leaderElection: { namespace: 'fallback' } });
    assert.deepEqual(managerOptionsFromEnv({ KANRI_LEADER_ELECTION: 'false', KANRI_BIND_ADDRESS: ':9443' }, 'x'), {
      bindAddress: ':9443',
    });
    assert.throws(() => managerOptionsFromEnv({ KANRI_LEADER_ELECTION: 'yes' }, 'x'), /KANRI_LEADER_ELECTION must be/);
    assert.equal(crdDeletionGuardFromEnv({}), true);
    assert.equal(crdDeletionGuardFromEnv({ KANRI_CRD_DELETION_GUARD: 'False' }), false);
    assert.throws(() => crdDeletionGuardFromEnv({ KANRI_CRD_DELETION_GUARD: '0' }), /KANRI_CRD_DELETION_GUARD must be/);
  });

  it('adds a ServiceMonitor only when enabled', () => {
    assert.equal(find(all, 'ServiceMonitor').length, 0);
    const on = operatorManifests(gizmoOperator, { serviceMonitor: { interval: '15s', labels: { release: 'prom' } } });
    const [monitor] = find(on.all, 'ServiceMonitor') as (Obj & {
      metadata: { labels: Record<string, string> };
      spec: { endpoints: { port: string; interval: string }[] };
    })[];
    assert.equal(monitor?.spec.endpoints[0]?.port, 'metrics');
    assert.equal(monitor?.spec.endpoints[0]?.interval, '15s');
    assert.equal(monitor?.metadata.labels.release, 'prom');
  });

  it('moves the RBAC and its ServiceAccount subjects into another namespace', () => {
    const moved = operatorManifests(gizmoOperator, { namespace: 'ops', createNamespace: false });
    assert.equal(moved.namespace.length, 0);
    const binding = find(moved.rbac, 'ClusterRoleBinding')[0] as Obj & { subjects: { namespace: string }[] };
    assert.equal(binding.subjects[0]?.namespace, 'ops');
    assert.equal(find(moved.rbac, 'ServiceAccount')[0]?.metadata.namespace, 'ops');
    for (const role of [...find(moved.rbac, 'Role'), ...find(moved.rbac, 'RoleBinding')]) {
      assert.equal(role.metadata.namespace, 'ops', `${role.kind} ${role.metadata.name}`);
    }
    const [service, configuration] = moved.webhook as Obj[];
    assert.equal(service?.metadata.namespace, 'ops');
    assert.equal(
      (configuration as unknown as Configuration).webhooks[0]?.clientConfig.service?.namespace,
      'ops',
      'the configuration calls the Service where it is',
    );
  });

  it('names the option at fault', () => {
    assert.throws(
      () => operatorManifests(gizmoOperator, { metricsPort: 70_000 }),
      /gizmo-operator: metricsPort must be a port/,
    );
    assert.throws(
      () => helmChart(gizmoOperator, { chartVersion: 'one' }),
      /chartVersion "one" must be a semantic version/,
    );
    assert.throws(
      () => operatorManifests(gizmoOperator, { namespace: 'Ops' }),
      /namespace "Ops" must be a DNS-1123 label/,
    );
  });

  it('writes a multi-document YAML stream that parses back to the same objects', () => {
    const text = manifestsToYaml(all, 'generated');
    assert.ok(text.startsWith('# generated\n---\n'));
    const docs = text
      .split(/^---$/m)
      .slice(1)
      .map((d) => parse(d));
    assert.deepEqual(docs, JSON.parse(JSON.stringify(all)));
  });
});

interface Configuration {
  metadata: { name: string; namespace?: string };
  webhooks: {
    clientConfig: { service?: { name: string; namespace: string; port: number }; caBundle?: string };
    failurePolicy: string;
    rules: { operations: string[]; resources: string[] }[];
  }[];
}
type Rules = { resources: string[]; verbs: string[]; resourceNames?: string[] }[];
const guardRule = (objects: readonly Record<string, unknown>[]) =>
  ((find(objects, 'ClusterRole')[0]?.rules ?? []) as Rules).find((r) =>
    r.resources.includes('validatingwebhookconfigurations'),
  );
const namespaceRole = (objects: readonly Record<string, unknown>[]) =>
  find(objects, 'Role').find((r) => r.metadata.name === 'gizmo-operator-namespace');

describe('operatorManifests with the CRD deletion guard', () => {
  const { all, rbac, webhook } = operatorManifests(gizmoOperator);
  const deployment = deploymentOf(all);
  const container = deployment.spec?.template.spec?.containers[0];
  const [service, configuration] = webhook as [
    Obj & { spec: { selector: Record<string, string>; ports: { port: number; targetPort: unknown }[] } },
    Obj & Configuration,
  ];

  it('serves the webhook on container port 9443, named, with the root filesystem still read-only', () => {
    assert.deepEqual(container?.ports?.[1], { name: 'webhook', containerPort: 9443, protocol: 'TCP' });
    assert.equal(container?.env?.find((e) => e.name === 'KANRI_CRD_DELETION_GUARD')?.value, 'true');
    assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
  });

  it('has a Service selecting the Pods by the labels their template carries, in front of that port', () => {
    assert.equal(service.kind, 'Service');
    assert.equal(service.metadata.name, 'gizmo-operator-webhook');
    const podLabels = deployment.spec?.template.metadata?.labels ?? {};
    assert.ok(Object.keys(service.spec.selector).length > 0);
    for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(podLabels[k], v, `Pod label ${k}`);
    assert.deepEqual(service.spec.selector, deployment.spec?.selector.matchLabels);
    assert.deepEqual(
      service.spec.ports.map((p) => [p.port, p.targetPort]),
      [[443, 'webhook']],
    );
  });

  it('has a cluster-scoped configuration calling that Service, failing closed, for CRD DELETE only, without a caBundle', () => {
    assert.equal(configuration.kind, 'ValidatingWebhookConfiguration');
    assert.equal(configuration.metadata.name, 'gizmo-operator-crd-deletion-guard');
    assert.equal(configuration.metadata.namespace, undefined);
    const [hook] = configuration.webhooks;
    assert.deepEqual(hook?.clientConfig.service && { ...hook.clientConfig.service, path: undefined }, {
      name: 'gizmo-operator-webhook',
      namespace: 'gizmo-operator-system',
      port: 443,
      path: undefined,
    });
    assert.equal(hook?.clientConfig.caBundle, undefined, 'the operator sets the caBundle when it starts');
    assert.equal(hook?.failurePolicy, 'Fail');
    assert.deepEqual(hook?.rules[0]?.operations, ['DELETE']);
    assert.deepEqual(hook?.rules[0]?.resources, ['customresourcedefinitions']);
  });

  it("grants the guard's RBAC: get/patch on its configuration, and the certificate Secret in the operator namespace", () => {
    assert.deepEqual(guardRule(rbac)?.resourceNames, ['gizmo-operator-crd-deletion-guard']);
    const role = namespaceRole(rbac) as Obj & { rules: Rules };
    assert.equal(role.metadata.namespace, 'gizmo-operator-system');
    assert.ok(role.rules.some((r) => r.resourceNames?.includes('gizmo-operator-webhook-cert')));
  });

  it('leaves the webhook objects and their RBAC out when the install turns the guard off, and tells the operator', () => {
    const off = operatorManifests(gizmoOperator, { crdDeletionGuard: false });
    assert.deepEqual(off.webhook, []);
    assert.equal(find(off.all, 'ValidatingWebhookConfiguration').length, 0);
    assert.deepEqual(
      find(off.all, 'Service').map((o) => o.metadata.name),
      ['gizmo-operator-metrics'],
    );
    assert.equal(guardRule(off.rbac), undefined);
    assert.equal(namespaceRole(off.rbac), undefined);
    const env = deploymentOf(off.all).spec?.template.spec?.containers[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'KANRI_CRD_DELETION_GUARD')?.value, 'false');
  });

  it('has no guard at all for a namespace-scoped operator, and will not add one', () => {
    const scoped = defineOperator({
      name: 'gizmo-operator',
      resources: [Gizmo],
      controllers: [gizmos],
      watchNamespace: 'team-a',
    });
    const m = operatorManifests(scoped);
    assert.deepEqual(m.webhook, []);
    assert.equal(find(m.all, 'ValidatingWebhookConfiguration').length, 0);
    assert.equal(namespaceRole(m.rbac), undefined);
    const c = deploymentOf(m.all).spec?.template.spec?.containers[0];
    assert.deepEqual(
      c?.ports?.map((p) => p.name),
      ['metrics'],
    );
    assert.equal(
      c?.env?.some((e) => e.name === 'KANRI_CRD_DELETION_GUARD'),
      false,
    );
    assert.throws(() => operatorManifests(scoped, { crdDeletionGuard: true }), /crdDeletionGuard cannot be turned on/);
    const chart = helmChart(scoped);
    assert.equal(
      chart.some((f) => f.path === 'templates/webhook.yaml'),
      false,
    );
    assert.equal(parse(chart.find((f) => f.path === 'values.yaml')?.content ?? '').crdDeletionGuard, undefined);
  });
});

describe('helmChart', () => {
  const files = helmChart(gizmoOperator);
  const file = (path: string) => files.find((f) => f.path === path)?.content ?? assert.fail(`no ${path}`);

  it('puts the CRDs in crds/ and in no template, so helm uninstall never deletes them', () => {
    const crdFiles = files.filter((f) => f.path.startsWith('crds/'));
    assert.deepEqual(
      crdFiles.map((f) => f.path),
      ['crds/gizmos.packaging-test.kanri.dev.yaml'],
    );
    assert.equal(parse(crdFiles[0]?.content ?? '').kind, 'CustomResourceDefinition');
    for (const f of files.filter((f) => f.path.startsWith('templates/'))) {
      assert.doesNotMatch(f.content, /CustomResourceDefinition/, f.path);
    }
  });

  it('has Chart.yaml, values with defaults and a schema, and templates that read them', () => {
    const chart = parse(file('Chart.yaml'));
    assert.equal(chart.apiVersion, 'v2');
    assert.equal(chart.name, 'gizmo-operator');
    assert.equal(chart.version, '0.1.0');
    assert.equal(chart.appVersion, '1.4.2');
    const values = parse(file('values.yaml'));
    assert.deepEqual(values.image, {
      repository: 'registry.example/gizmo-operator',
      tag: '',
      digest: '',
      pullPolicy: 'IfNotPresent',
    });
    assert.equal(values.replicas, 1);
    assert.equal(values.leaderElection, true);
    assert.equal(values.serviceMonitor.enabled, false);
    assert.deepEqual(values.crdDeletionGuard, { enabled: true });
    assert.deepEqual(values.resources.limits, { cpu: '500m', memory: '256Mi' });
    assert.deepEqual(
      Object.keys(JSON.parse(file('values.schema.json')).properties).sort(),
      [...Object.keys(values), 'global'].sort(),
    );
    const deployment = file('templates/deployment.yaml');
    for (const expected of [
      'replicas: {{ .Values.replicas }}',
      'namespace: {{ .Release.Namespace }}',
      '{{- toYaml .Values.resources | nindent 12 }}',
      'value: {{ .Values.leaderElection | quote }}',
      'containerPort: {{ .Values.metrics.port }}',
      '.Values.image.repository',
    ]) {
      assert.ok(deployment.includes(expected), `deployment.yaml has ${expected}`);
    }
    assert.match(file('templates/servicemonitor.yaml'), /^\{\{- if \.Values\.serviceMonitor\.enabled \}\}$/m);
    assert.doesNotMatch(file('templates/rbac.yaml'), /gizmo-operator-system/, 'no fixed namespace in templates');
    assert.match(file('templates/NOTES.txt'), /helm uninstall` leaves them/);
  });

  it('templates the webhook objects under crdDeletionGuard.enabled (and no watchNamespace), calling the Service in the release namespace', () => {
    const webhook = file('templates/webhook.yaml');
    assert.match(
      webhook,
      /^\{\{- if \(and \.Values\.crdDeletionGuard\.enabled \(not \.Values\.watchNamespace\)\) \}\}$/m,
    );
    assert.match(webhook, /^kind: ValidatingWebhookConfiguration$/m);
    assert.match(
      webhook,
      /clientConfig:\n {6}service:\n {8}name: gizmo-operator-webhook\n {8}namespace: \{\{ \.Release\.Namespace \}\}\n/,
    );
    assert.match(webhook, /selector:\n {4}\{\{- include "gizmo-operator\.selectorLabels" \. \| nindent 4 \}\}/);
    assert.doesNotMatch(webhook, /caBundle/);
    const deployment = file('templates/deployment.yaml');
    assert.ok(
      deployment.includes('value: {{ (and .Values.crdDeletionGuard.enabled (not .Values.watchNamespace)) | quote }}'),
    );
    assert.ok(deployment.includes('value: {{ .Values.watchNamespace | quote }}'));
    assert.ok(deployment.includes('metrics.port 9443 is the admission webhook'));
    // The guard's Role renders only with the guard, and in the release namespace.
    const rbacYaml = file('templates/rbac.yaml');
    const role = rbacYaml.indexOf('name: gizmo-operator-namespace');
    assert.ok(role > 0);
    assert.ok(
      rbacYaml.lastIndexOf('{{- if (and .Values.crdDeletionGuard.enabled (not .Values.watchNamespace)) }}', role) >
        rbacYaml.lastIndexOf('{{- end }}', role),
    );
    assert.match(rbacYaml.slice(role), /^ {2}namespace: \{\{ \.Release\.Namespace \}\}$/m);
    const off = helmChart(gizmoOperator, { crdDeletionGuard: false });
    assert.deepEqual(parse(off.find((f) => f.path === 'values.yaml')?.content ?? '').crdDeletionGuard, {
      enabled: false,
    });
  });
});

describe('the packaging of admission policies', () => {
  const files = helmChart(ownedGizmoOperator);
  const file = (path: string) => files.find((f) => f.path === path)?.content ?? assert.fail(`no ${path}`);
  const user = (namespace: string) => `system:serviceaccount:${namespace}:owned-gizmo-operator`;

  it('says the chart needs Kubernetes 1.30 (admissionregistration.k8s.io/v1 policies), 1.25 without policies', () => {
    assert.equal(parse(file('Chart.yaml')).kubeVersion, '>=1.30.0-0');
    assert.equal(
      parse(helmChart(gizmoOperator).find((f) => f.path === 'Chart.yaml')?.content ?? '').kubeVersion,
      '>=1.25.0-0',
    );
  });

  it("keys the chart's policies on the operator's ServiceAccount in the release namespace", () => {
    const policies = file('templates/admission-policies.yaml');
    assert.doesNotMatch(policies, /kanri-release-namespace"? *$/m);
    assert.ok(policies.includes('| replace "kanri-release-namespace" .Release.Namespace | quote }}'));
    assert.ok(policies.includes('name: owned-gizmo-operator-owned-writes.kanri.dev'));
    assert.ok(policies.includes('name: gizmo-configmaps.packaging-test.kanri.dev'));
    assert.doesNotMatch(policies, /owned-gizmo-operator-system/, 'no fixed namespace');
  });

  it("keys the plain manifests' policies on the namespace they install into", () => {
    const { policies, all } = operatorManifests(ownedGizmoOperator, { namespace: 'ops' });
    const text = JSON.stringify(policies);
    assert.ok(text.includes(user('ops')));
    assert.ok(!text.includes(user('owned-gizmo-operator-system')));
    assert.deepEqual(
      policies.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => (o.metadata as { name: string }).name),
      ownedGizmoOperator.policyNames(),
    );
    const env = deploymentOf(all).spec?.template.spec?.containers[0]?.env ?? [];
    assert.deepEqual(
      env.find((e) => e.name === 'KANRI_ADMISSION_POLICIES'),
      { name: 'KANRI_ADMISSION_POLICIES', value: 'check' },
    );
    assert.ok(
      file('templates/deployment.yaml').includes(
        'value: {{ if .Values.watchNamespace }}"installed"{{ else }}"check"{{ end }}',
      ),
      'a chart for one namespace vouches for the policies it applied',
    );
    const plain = deploymentOf(operatorManifests(gizmoOperator).all).spec?.template.spec?.containers[0]?.env ?? [];
    assert.ok(!plain.some((e) => e.name === 'KANRI_ADMISSION_POLICIES'), 'none without policies');
  });
});

describe('templateYaml', () => {
  it('writes inline, block and optional values as Go template text under the right indentation', () => {
    const text = templateYaml({
      spec: {
        replicas: inline('{{ .Values.replicas }}'),
        containers: [{ name: 'c', resources: block('toYaml .Values.resources') }],
        nodeSelector: withValue('.Values.nodeSelector'),
      },
    });
    assert.equal(
      text,
      [
        'spec:',
        '  replicas: {{ .Values.replicas }}',
        '  containers:',
        '    - name: c',
        '      resources:',
        '        {{- toYaml .Values.resources | nindent 8 }}',
        '  {{- with .Values.nodeSelector }}',
        '  nodeSelector:',
        '    {{- toYaml . | nindent 4 }}',
        '  {{- end }}',
        '',
      ].join('\n'),
    );
  });
});

describe('parseImage, operatorDockerfile, operatorDefinitionProblem', () => {
  it('splits image references as docker does', () => {
    assert.deepEqual(parseImage('ghcr.io/a/b:1.2'), { repository: 'ghcr.io/a/b', tag: '1.2', digest: '' });
    assert.deepEqual(parseImage('localhost:5000/b'), { repository: 'localhost:5000/b', tag: 'latest', digest: '' });
    assert.deepEqual(parseImage('b@sha256:ab'), { repository: 'b', tag: '', digest: 'sha256:ab' });
  });

  it('writes a multi-stage Dockerfile that installs production dependencies only and runs as a numeric non-root user', () => {
    const text = operatorDockerfile({ main: 'dist/src/main.js' });
    assert.equal(text.match(/^FROM node:20-/gm)?.length, 3);
    assert.match(text, /^RUN npm ci --omit=dev/m);
    assert.match(text, /^USER 1000:1000$/m);
    assert.match(text, /^ENTRYPOINT \["node", "--max-semi-space-size=4", "dist\/src\/main\.js"\]$/m);
    assert.ok(text.indexOf('USER') < text.indexOf('ENTRYPOINT'));
    assert.throws(() => operatorDockerfile({ main: '../main.js' }), /inside the project/);
  });

  it('says what an imported value lacks to be an OperatorDefinition', () => {
    assert.equal(operatorDefinitionProblem(gizmoOperator), undefined);
    assert.equal(operatorDefinitionProblem({ name: 'x', image: 'y', namespace: 'z' }), 'missing controllers');
    assert.equal(operatorDefinitionProblem(undefined), 'it is undefined');
    assert.match(operatorDefinitionProblem({ ...gizmoOperator, rbac: undefined }) ?? '', /missing rbac\(\)/);
  });
});
