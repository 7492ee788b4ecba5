/** Unit tests of the CRD deletion guard's pure parts and of the admission server on the loopback (no control plane). */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '@kanri/client';
import {
  type AdmissionRequest,
  type AdmissionReview,
  type AdmissionServer,
  buildAdmissionResponse,
  CRD_DELETION_GUARD_WEBHOOK,
  crdDeletionGuard,
  crdDeletionGuardRules,
  crdDeletionGuardWebhook,
  createServingCertificate,
  decideCrdDeletion,
  parseAdmissionReview,
  type ServingCertificate,
  serviceDnsNames,
  servingCertificateProblem,
  startAdmissionServer,
} from '../src/index.js';
import { sampleInstances, versionsToList } from '../src/webhook/crd-deletion-guard.js';

const crd = (annotations: Record<string, string> = {}) => ({
  metadata: { name: 'widgets.example.com', annotations },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', kind: 'Widget' },
    versions: [
      { name: 'v1beta1', served: true, storage: false },
      { name: 'v1', served: true, storage: true },
      { name: 'v1alpha1', served: false, storage: false },
    ],
  },
});

const deleteRequest = (oldObject: unknown, uid = 'uid-1'): AdmissionRequest =>
  ({
    uid,
    kind: { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition' },
    resource: { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' },
    name: 'widgets.example.com',
    operation: 'DELETE',
    userInfo: { username: 'alice' },
    object: null,
    oldObject,
  }) as AdmissionRequest;

describe('the guard decision', () => {
  it('refuses while instances exist, naming the CRD, a count, an example and the way out', () => {
    const decision = decideCrdDeletion(crd(), { count: 3, more: false, example: 'default/w1' });
    assert.equal(decision.allowed, false);
    assert.equal(decision.code, 403);
    assert.match(
      decision.message ?? '',
      /customresourcedefinition "widgets\.example\.com" still has 3 custom resources/,
    );
    assert.match(decision.message ?? '', /\(e\.g\. default\/w1\)/);
    assert.match(decision.message ?? '', /delete them first/);
    assert.match(decision.message ?? '', /kubectl annotate crd widgets\.example\.com kanri\.dev\/allow-delete=true/);
  });

  it('says "1 custom resource" and "N+" when the server did not count', () => {
    assert.match(decideCrdDeletion(crd(), { count: 1, more: false }).message ?? '', /still has 1 custom resource,/);
    assert.match(decideCrdDeletion(crd(), { count: 1, more: true }).message ?? '', /still has 1\+ custom resources/);
  });

  it('allows when there are none, and with the annotation (with a warning)', () => {
    assert.deepEqual(decideCrdDeletion(crd(), { count: 0, more: false }), { allowed: true });
    const annotated = decideCrdDeletion(crd({ 'kanri.dev/allow-delete': 'true' }), { count: 5, more: false });
    assert.equal(annotated.allowed, true);
    assert.match(annotated.warnings?.[0] ?? '', /every custom resource of widgets\.example\.com is deleted with it/);
    assert.equal(decideCrdDeletion(crd({ 'kanri.dev/allow-delete': 'yes' }), { count: 1, more: false }).allowed, false);
  });

  it('fails closed when the instances could not be listed', () => {
    const decision = decideCrdDeletion(crd(), { error: 'list widgets.example.com: forbidden' });
    assert.equal(decision.allowed, false);
    assert.equal(decision.code, 500);
    assert.match(decision.message ?? '', /cannot tell whether .* \(list widgets\.example\.com: forbidden\)/);
  });

  it('lists through the storage version first, then the other served ones', () => {
    assert.deepEqual(versionsToList(crd() as never), ['v1', 'v1beta1']);
  });

  it('reads a count from remainingItemCount, and "more" from a continue token without it', () => {
    const item = { metadata: { name: 'w1', namespace: 'ns' } };
    assert.deepEqual(sampleInstances({ items: [item], metadata: { remainingItemCount: 2, continue: 'x' } }), {
      count: 3,
      more: false,
      example: 'ns/w1',
    });
    assert.deepEqual(sampleInstances({ items: [item], metadata: { continue: 'x' } }), {
      count: 1,
      more: true,
      example: 'ns/w1',
    });
    assert.deepEqual(sampleInstances({ items: [], metadata: {} }), { count: 0, more: false });
    // What the API server sends for an empty metadata-only list.
    assert.deepEqual(sampleInstances({ items: null as never, metadata: {} }), { count: 0, more: false });
  });

  it('the handler lists, with limit=1 and all namespaces, through the storage version', async () => {
    const calls: { path: string; query: unknown }[] = [];
    const client = {
      request: async (req: { path: string; query: unknown }) => {
        calls.push(req);
        return { items: [{ metadata: { name: 'w1', namespace: 'default' } }], metadata: { remainingItemCount: 1 } };
      },
    } as unknown as KubeClient;
    const decision = await crdDeletionGuard(client)(deleteRequest(crd()), new AbortController().signal);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]?.path, '/apis/example.com/v1/widgets');
    assert.deepEqual(calls[0]?.query, { limit: 1 });
    assert.equal(decision.allowed, false);
    assert.match(decision.message ?? '', /still has 2 custom resources \(e\.g\. default\/w1\)/);
  });

  it('the handler falls back to another served version, and fails closed when every list fails', async () => {
    let attempts = 0;
    const flaky = {
      request: async (req: { path: string }) => {
        attempts++;
        if (req.path.includes('/v1/')) throw new Error('conversion failed');
        return { items: [], metadata: {} };
      },
    } as unknown as KubeClient;
    assert.equal((await crdDeletionGuard(flaky)(deleteRequest(crd()), new AbortController().signal)).allowed, true);
    assert.equal(attempts, 2);
    const broken = {
      request: async () => {
        throw new Error('forbidden');
      },
    } as unknown as KubeClient;
    const refused = await crdDeletionGuard(broken)(deleteRequest(crd()), new AbortController().signal);
    assert.equal(refused.allowed, false);
    assert.match(refused.message ?? '', /forbidden; forbidden/);
  });

  it('the handler skips CRDs outside crdNames and requests that are not CRD deletions, and never lists with the annotation', async () => {
    const client = {
      request: async () => assert.fail('must not list'),
    } as unknown as KubeClient;
    const signal = new AbortController().signal;
    const guard = crdDeletionGuard(client, { crdNames: ['other.example.com'] });
    assert.equal((await guard(deleteRequest(crd()), signal)).allowed, true);
    const all = crdDeletionGuard(client);
    assert.equal((await all({ ...deleteRequest(crd()), operation: 'UPDATE' }, signal)).allowed, true);
    assert.equal((await all(deleteRequest(crd({ 'kanri.dev/allow-delete': 'true' })), signal)).allowed, true);
    const missing = await all(deleteRequest(null), signal);
    assert.equal(missing.allowed, false, 'a DELETE without oldObject cannot be checked, so it is refused');
  });
});

describe('the review wire format', () => {
  it('echoes apiVersion and uid, and gives a refusal a code, reason and message', () => {
    const review = parseAdmissionReview(
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: deleteRequest({}, 'u-42'),
      }),
    );
    assert.deepEqual(buildAdmissionResponse(review, { allowed: false, message: 'no' }), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-42', allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no' } },
    });
    assert.deepEqual(buildAdmissionResponse(review, { allowed: true, warnings: ['careful'] }).response, {
      uid: 'u-42',
      allowed: true,
      warnings: ['careful'],
    });
  });

  it('rejects bodies that are not reviews with a uid', () => {
    assert.throws(() => parseAdmissionReview('{'), /not JSON/);
    assert.throws(() => parseAdmissionReview('{"kind":"Pod","apiVersion":"v1"}'), /not an AdmissionReview/);
    assert.throws(
      () => parseAdmissionReview('{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{}}'),
      /no request\.uid/,
    );
  });
});

describe('the manifests', () => {
  it('scopes the webhook to DELETE of Kanri-labelled CRDs, fails closed, has no side effects and a short timeout', () => {
    const vwc = crdDeletionGuardWebhook({
      name: 'op-crd-deletion-guard',
      service: { name: 'op-webhook', namespace: 'ops' },
      crdNames: ['widgets.example.com'],
    });
    const hook = vwc.webhooks[0];
    assert.equal(hook?.name, CRD_DELETION_GUARD_WEBHOOK);
    assert.deepEqual(hook?.rules, [
      {
        apiGroups: ['apiextensions.k8s.io'],
        apiVersions: ['v1'],
        operations: ['DELETE'],
        resources: ['customresourcedefinitions'],
        scope: 'Cluster',
      },
    ]);
    assert.deepEqual(hook?.objectSelector, { matchLabels: { 'app.kubernetes.io/managed-by': 'kanri' } });
    assert.equal(hook?.failurePolicy, 'Fail');
    assert.equal(hook?.sideEffects, 'None');
    assert.equal(hook?.timeoutSeconds, 5);
    assert.deepEqual(hook?.clientConfig, {
      service: { name: 'op-webhook', namespace: 'ops', port: 443, path: '/validate-crd-deletion' },
    });
    assert.equal(hook?.matchConditions?.[0]?.expression, 'oldObject.metadata.name in ["widgets.example.com"]');
    const local = crdDeletionGuardWebhook({ name: 'x', url: 'https://127.0.0.1:9443/', caBundle: '-----BEGIN X' });
    assert.equal(local.webhooks[0]?.clientConfig.url, 'https://127.0.0.1:9443/validate-crd-deletion');
    assert.equal(local.webhooks[0]?.clientConfig.caBundle, Buffer.from('-----BEGIN X').toString('base64'));
    assert.equal(local.webhooks[0]?.matchConditions, undefined);
    assert.throws(() => crdDeletionGuardWebhook({ name: 'x' }), /either service or url/);
  });

  it('derives RBAC: list on each guarded resource, get/patch on the configuration by name, the Secrets by name', () => {
    const { clusterRules, namespaceRules } = crdDeletionGuardRules({
      crds: [crd(), { spec: { group: 'example.com', names: { plural: 'gadgets' } } }],
      configurationName: 'op-crd-deletion-guard',
      certificateSecret: 'op-webhook-cert',
    });
    assert.deepEqual(clusterRules, [
      { apiGroups: ['example.com'], resources: ['gadgets', 'widgets'], verbs: ['list'] },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        verbs: ['get', 'patch'],
        resourceNames: ['op-crd-deletion-guard'],
      },
    ]);
    assert.deepEqual(namespaceRules, [
      {
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['get', 'update'],
        resourceNames: ['op-webhook-cert', 'op-webhook-cert-ca'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    ]);
  });
});

describe('serving certificates', () => {
  it('issues for the service names and IPs from a CA, and renewal from the same CA keeps the caBundle', async () => {
    const names = { dnsNames: serviceDnsNames('op-webhook', 'ops'), ipAddresses: ['127.0.0.1'] };
    const first = await createServingCertificate(names);
    const leaf = new X509Certificate(first.certPem);
    assert.ok(leaf.checkHost('op-webhook.ops.svc'));
    assert.ok(leaf.checkIP('127.0.0.1'));
    assert.ok(leaf.verify(new X509Certificate(first.caCertPem).publicKey));
    const days = (Date.parse(leaf.validTo) - Date.now()) / 86_400_000;
    assert.ok(days > 360 && days <= 365, `valid for about a year (${days.toFixed(1)} days)`);
    assert.equal(servingCertificateProblem(first, names), undefined);

    const renewed = await createServingCertificate({ ...names, ca: first });
    assert.equal(renewed.caCertPem, first.caCertPem);
    assert.notEqual(renewed.certPem, first.certPem);
    assert.equal(servingCertificateProblem(renewed, names), undefined);
  });

  it('names what needs renewal: expiry within 30 days, a missing name, a foreign CA', async () => {
    const short = await createServingCertificate({ dnsNames: ['a.ops.svc'], validityDays: 10 });
    assert.deepEqual(servingCertificateProblem(short, { dnsNames: ['a.ops.svc'] })?.keepCa, true);
    assert.match(servingCertificateProblem(short)?.reason ?? '', /expires/);
    assert.match(
      servingCertificateProblem(short, { renewBeforeDays: 5, dnsNames: ['b.ops.svc'] })?.reason ?? '',
      /lacks/,
    );
    const other = await createServingCertificate({ dnsNames: ['a.ops.svc'] });
    assert.match(
      servingCertificateProblem({ caCertPem: other.caCertPem, certPem: short.certPem })?.reason ?? '',
      /not issued by the CA/,
    );
  });
});

describe('the admission server', () => {
  let cert: ServingCertificate;
  let server: AdmissionServer;
  const seen: AdmissionRequest[] = [];
  before(async () => {
    cert = await createServingCertificate({ ipAddresses: ['127.0.0.1'] });
    server = await startAdmissionServer({
      bindAddress: '127.0.0.1:0',
      certificate: cert,
      maxBodyBytes: 64 * 1024,
      handlers: {
        '/ok': async (req) => {
          seen.push(req);
          return { allowed: req.name !== 'refuse-me', message: 'refused on purpose', code: 409 };
        },
        '/broken': async () => {
          throw new Error('the handler broke');
        },
      },
    });
  });
  after(async () => {
    await server?.close();
  });

  const post = (path: string, body: string, headers: Record<string, string> = {}, method = 'POST') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path,
          method,
          agent: false, // a fresh TLS handshake each time, so a swapped certificate is seen
          ca: cert.caCertPem,
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const review = (name: string, uid: string) =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { ...deleteRequest({}, uid), name },
    });

  it('answers over TLS with the same uid and the handler verdict', async () => {
    const allowed = await post('/ok', review('fine', 'uid-a'));
    assert.equal(allowed.status, 200);
    assert.deepEqual(JSON.parse(allowed.body).response, {
      uid: 'uid-a',
      allowed: true,
      status: { code: 409, message: 'refused on purpose' },
    });
    const refused = JSON.parse((await post('/ok', review('refuse-me', 'uid-b'))).body) as AdmissionReview;
    assert.deepEqual(refused.response, {
      uid: 'uid-b',
      allowed: false,
      status: { code: 409, reason: 'Conflict', message: 'refused on purpose' },
    });
    assert.equal(seen.at(-1)?.oldObject !== undefined, true, 'the handler gets the request with oldObject');
  });

  it('refuses (never crashes) when a handler throws', async () => {
    const answer = await post('/broken', review('x', 'uid-c'));
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.body).response, {
      uid: 'uid-c',
      allowed: false,
      status: { code: 500, reason: 'InternalError', message: '/broken failed: the handler broke' },
    });
    assert.equal((await post('/ok', review('fine', 'uid-d'))).status, 200, 'still serving');
  });

  it('answers 400, 404, 405, 413 and 415 to what is not a review it serves', async () => {
    assert.equal((await post('/ok', '{"kind":"AdmissionReview"}')).status, 400);
    assert.equal((await post('/nowhere', review('x', 'u'))).status, 404);
    assert.equal((await post('/ok', '', {}, 'GET')).status, 405);
    assert.equal((await post('/ok', review('x', 'u'), { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await post('/ok', 'x'.repeat(65 * 1024))).status, 413);
    assert.equal((await post('/ok', review('fine', 'uid-e'))).status, 200, 'still serving');
  });

  it('serves a new certificate after setCertificate, without a restart', async () => {
    const next = await createServingCertificate({ ipAddresses: ['127.0.0.1'] });
    server.setCertificate(next);
    await assert.rejects(post('/ok', review('fine', 'uid-f')), /self[- ]signed|unable to verify|certificate/i);
    cert = next;
    assert.equal((await post('/ok', review('fine', 'uid-g'))).status, 200);
  });
});
