/** The CRD deletion guard against a real API server, which calls the webhook on the loopback by URL. */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApiError, KubeClient, type KubeObject, NotFoundError } from '@kanri/client';
import { type ControlPlane, startControlPlane } from '@kanri/testenv';
import { pino } from 'pino';
import {
  type AdmissionServer,
  CRD_DELETION_GUARD_PATH,
  caSecretName,
  crdDeletionGuard,
  crdDeletionGuardWebhook,
  createServingCertificate,
  ensureServingCertificateSecret,
  Manager,
  serviceDnsNames,
  servingCertificateProblem,
  startAdmissionServer,
} from '../src/index.js';
import { waitFor } from './helpers.js';

const GROUP = 'guard.kanri.dev';
const quiet = pino({ level: 'silent' });

/** A minimal namespaced CRD; `kanri` adds the label every Kanri CRD carries. */
function gadgetCrd(kind: string, options: { kanri: boolean; annotations?: Record<string, string> }) {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${GROUP}`,
      ...(options.kanri ? { labels: { 'app.kubernetes.io/managed-by': 'kanri' } } : {}),
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

/** Creates the CRD, waits until it is served, and creates `instances` in `default`. */
async function installWithInstances(
  client: KubeClient,
  crd: ReturnType<typeof gadgetCrd>,
  instances: readonly string[],
): Promise<void> {
  await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(crd);
  const objects = client.resource<KubeObject>(`${GROUP}/v1`, crd.spec.names.kind);
  await waitFor(`${crd.metadata.name} to be served`, async () => {
    await objects.list({ namespace: 'default', limit: 1 });
    return true;
  });
  for (const name of instances) await objects.create({ metadata: { name, namespace: 'default' } });
}

/** The error a delete fails with, or undefined if it succeeded. */
async function deleteError(client: KubeClient, name: string, dryRun = false): Promise<ApiError | undefined> {
  try {
    await client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition').delete(name, { dryRun });
    return undefined;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

/** Waits until the API server calls the webhook: a dry-run delete (which runs admission, deleting nothing) is refused. */
async function waitForGuard(client: KubeClient, crdName: string): Promise<ApiError> {
  return waitFor(`the API server to call the guard for ${crdName}`, () => deleteError(client, crdName, true), 60_000);
}

async function exists(client: KubeClient, name: string): Promise<boolean> {
  try {
    await client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition').get(name);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

describe('the CRD deletion guard against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  const crds = () => client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
  const configurations = () =>
    client.resource<KubeObject & { webhooks?: { clientConfig: Record<string, unknown> }[] }>(
      'admissionregistration.k8s.io/v1',
      'ValidatingWebhookConfiguration',
    );

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  describe('served by startAdmissionServer, registered by URL', () => {
    let server: AdmissionServer;
    before(async () => {
      const cert = await createServingCertificate({ ipAddresses: ['127.0.0.1'] });
      server = await startAdmissionServer({
        bindAddress: '127.0.0.1:0',
        certificate: cert,
        handlers: { [CRD_DELETION_GUARD_PATH]: crdDeletionGuard(client) },
      });
      await client.apply(
        crdDeletionGuardWebhook({
          name: 'test-crd-deletion-guard',
          url: `https://127.0.0.1:${server.port}`,
          caBundle: cert.caCertPem,
        }),
        { fieldManager: 'test' },
      );
    });
    after(async () => {
      // With failurePolicy Fail, a configuration left pointing at a closed server would refuse every Kanri CRD deletion.
      await configurations().delete('test-crd-deletion-guard');
      await server?.close();
    });
    it('refuses to delete a Kanri CRD while an instance exists, saying which and how to proceed', async () => {
      const crd = gadgetCrd('Gadget', { kanri: true });
      await installWithInstances(client, crd, ['g1']);
      await waitForGuard(client, crd.metadata.name);

      const error = await deleteError(client, crd.metadata.name);
      assert.ok(error, 'the delete is refused');
      assert.equal(error.statusCode, 403);
      assert.match(error.message, /admission webhook "crd-deletion-guard\.kanri\.dev" denied the request/);
      assert.match(error.message, /customresourcedefinition "gadgets\.guard\.kanri\.dev" still has 1 custom resource/);
      assert.match(error.message, /\(e\.g\. default\/g1\)/);
      assert.match(error.message, /delete them first, or annotate the CRD with kanri\.dev\/allow-delete=true/);
      assert.ok(await exists(client, crd.metadata.name), 'the CRD is still there');
      const g1 = await client.resource<KubeObject>(`${GROUP}/v1`, 'Gadget').get('g1', { namespace: 'default' });
      assert.equal(g1.metadata?.name, 'g1', 'and so is its instance');

      // Once the instances are gone, the same delete goes through.
      await client.resource(`${GROUP}/v1`, 'Gadget').delete('g1', { namespace: 'default' });
      assert.equal(await deleteError(client, crd.metadata.name), undefined, 'the delete is allowed');
      await waitFor('the CRD to be gone', async () => !(await exists(client, crd.metadata.name)));
    });

    it('counts several instances across namespaces', async () => {
      const crd = gadgetCrd('Counter', { kanri: true });
      await installWithInstances(client, crd, ['c1', 'c2']);
      await client.resource('v1', 'Namespace').create({ metadata: { name: 'elsewhere' } });
      await client
        .resource<KubeObject>(`${GROUP}/v1`, 'Counter')
        .create({ metadata: { name: 'c3', namespace: 'elsewhere' } });
      const error = await waitForGuard(client, crd.metadata.name);
      assert.match(error.message, /still has 3 custom resources \(e\.g\. default\/c1\)/);
      assert.ok(await exists(client, crd.metadata.name));
    });

    it('allows the delete with kanri.dev/allow-delete=true while an instance exists', async () => {
      const crd = gadgetCrd('Sprocket', { kanri: true });
      await installWithInstances(client, crd, ['s1']);
      await waitForGuard(client, crd.metadata.name);
      await crds().patch(crd.metadata.name, { metadata: { annotations: { 'kanri.dev/allow-delete': 'true' } } });
      assert.equal(await deleteError(client, crd.metadata.name), undefined, 'the delete is allowed');
      await waitFor('the CRD and its instance to be gone', async () => !(await exists(client, crd.metadata.name)));
    });

    it('leaves CRDs without the Kanri label alone, even with instances (objectSelector)', async () => {
      const kanri = gadgetCrd('Probe', { kanri: true });
      await installWithInstances(client, kanri, ['p1']);
      // The guard is live (it refuses the labelled one), so an allowed delete below is the selector at work.
      await waitForGuard(client, kanri.metadata.name);
      const plain = gadgetCrd('Plain', { kanri: false });
      await installWithInstances(client, plain, ['x1']);
      assert.equal(await deleteError(client, plain.metadata.name), undefined);
      await waitFor('the unlabelled CRD to be gone', async () => !(await exists(client, plain.metadata.name)));
    });
  });

  describe('the certificate Secret', () => {
    it('renews an expiring serving certificate from the same CA, once, keeping the names it had', async () => {
      const secretName = 'renewal-webhook-cert';
      const base = { namespace: 'default', name: secretName, dnsNames: serviceDnsNames('old-svc', 'default') };
      const short = await ensureServingCertificateSecret(client, { ...base, validityDays: 10 });
      assert.ok(servingCertificateProblem(short), 'a 10-day certificate is due for renewal');
      const stored = () => client.resource('v1', 'Secret').get(secretName, { namespace: 'default' });
      const before = (await stored()).metadata?.resourceVersion;

      const renewed = await ensureServingCertificateSecret(client, { ...base, dnsNames: ['new-svc.default.svc'] });
      assert.equal(renewed.caCertPem, short.caCertPem, 'the CA (and so the caBundle) stays');
      assert.notEqual(renewed.certPem, short.certPem);
      assert.equal(
        servingCertificateProblem(renewed, { dnsNames: ['new-svc.default.svc', 'old-svc.default.svc'] }),
        undefined,
      );
      assert.notEqual((await stored()).metadata?.resourceVersion, before, 'written back');

      const again = await ensureServingCertificateSecret(client, base);
      assert.equal(again.certPem, renewed.certPem, 'a valid certificate is kept: no renewal back and forth');
    });
  });

  describe('the CA Secret', () => {
    const count = (bundle: string) => (bundle.match(/BEGIN CERTIFICATE/g) ?? []).length;
    const data = async (name: string) => {
      const secret = await client.resource('v1', 'Secret').get(name, { namespace: 'default' });
      return Object.fromEntries(
        Object.entries((secret as { data?: Record<string, string> }).data ?? {}).map(([k, v]) => [
          k,
          Buffer.from(v, 'base64').toString('utf8'),
        ]),
      );
    };

    it('keeps the CA key out of the serving Secret, and rotates the CA with an overlap in the caBundle', async () => {
      const name = 'rotation-webhook-cert';
      const base = { namespace: 'default', name, dnsNames: serviceDnsNames('rotation', 'default') };
      const day = 86_400_000;
      const first = await ensureServingCertificateSecret(client, { ...base, caValidityDays: 100 });
      assert.deepEqual(
        Object.keys(await data(name)).sort(),
        ['ca.crt', 'tls.crt', 'tls.key'],
        'no CA key beside the serving key',
      );
      assert.deepEqual(Object.keys(await data(caSecretName(name))).sort(), ['ca.crt', 'ca.key']);

      // 80 days on: the CA has 20 left. A new CA joins the bundle; the certificate served stays.
      const overlap = await ensureServingCertificateSecret(client, { ...base, now: new Date(Date.now() + 80 * day) });
      assert.equal(count(overlap.caCertPem), 2, 'the caBundle trusts the old CA and the new');
      assert.equal(overlap.certPem, first.certPem, 'the old CA’s certificate is served on');
      assert.equal((await data(name))['ca.crt'], overlap.caCertPem);
      assert.equal((await data(caSecretName(name)))['previous-ca.crt'], first.caCertPem.trimEnd().concat('\n'));

      // 90 days on: the certificate moves to the new CA, which every caBundle has trusted since.
      const moved = await ensureServingCertificateSecret(client, { ...base, now: new Date(Date.now() + 90 * day) });
      assert.notEqual(moved.certPem, first.certPem);
      const newCa = (await data(caSecretName(name)))['ca.crt'] ?? '';
      assert.ok(
        new X509Certificate(moved.certPem).verify(new X509Certificate(newCa).publicKey),
        'issued by the new CA',
      );
      assert.equal(count(moved.caCertPem), 2);

      // After the old CA's end, it leaves the bundle.
      const after = await ensureServingCertificateSecret(client, { ...base, now: new Date(Date.now() + 101 * day) });
      assert.equal(count(after.caCertPem), 1);
      assert.equal(after.certPem, moved.certPem);
      assert.equal((await data(caSecretName(name)))['previous-ca.crt'], undefined);
    });

    it('splits a serving Secret of the older layout (the CA key beside the serving key), keeping the CA', async () => {
      const name = 'legacy-webhook-cert';
      const dnsNames = serviceDnsNames('legacy', 'default');
      const old = await createServingCertificate({ dnsNames });
      await client.resource('v1', 'Secret').create({
        metadata: { name, namespace: 'default' },
        type: 'kubernetes.io/tls',
        stringData: { 'ca.crt': old.caCertPem, 'ca.key': old.caKeyPem, 'tls.crt': old.certPem, 'tls.key': old.keyPem },
      });
      const now = await ensureServingCertificateSecret(client, { namespace: 'default', name, dnsNames });
      assert.equal(now.certPem, old.certPem, 'nothing renewed');
      assert.equal(now.caCertPem.trimEnd(), old.caCertPem.trimEnd(), 'the same caBundle');
      assert.equal((await data(name))['ca.key'], undefined, 'the CA key left the serving Secret');
      assert.equal((await data(caSecretName(name)))['ca.key'], old.caKeyPem);
    });
  });

  describe('through the Manager', () => {
    it('patches the caBundle, guards, and closes the server on stop (after which deletion is refused: fail closed)', async () => {
      const manager = new Manager(client, {
        name: 'guard-op',
        bindAddress: false,
        handleSignals: false,
        logger: quiet,
        webhook: { bindAddress: '127.0.0.1:0' },
      });
      const running = manager.start();
      const webhooks = manager.webhooks;
      assert.ok(webhooks);
      await webhooks.configured;
      const port = webhooks.port;
      assert.ok(port);

      const configuration = await configurations().get('guard-op-crd-deletion-guard');
      const clientConfig = configuration.webhooks?.[0]?.clientConfig;
      assert.equal(clientConfig?.url, `https://127.0.0.1:${port}/validate-crd-deletion`);
      assert.equal(clientConfig?.caBundle, Buffer.from(webhooks.caCertPem ?? '').toString('base64'));

      const crd = gadgetCrd('Widget', { kanri: true });
      await installWithInstances(client, crd, ['w1']);
      const refused = await waitForGuard(client, crd.metadata.name);
      assert.match(
        refused.message,
        /customresourcedefinition "widgets\.guard\.kanri\.dev" still has 1 custom resource/,
      );
      assert.ok(await exists(client, crd.metadata.name));

      manager.stop();
      await running;
      await assert.rejects(
        new Promise((resolve, reject) => connect(port, '127.0.0.1').once('connect', resolve).once('error', reject)),
        /ECONNREFUSED/,
        'the webhook server is closed',
      );
      // The operator is down: failurePolicy Fail refuses the deletion rather than let it through unchecked.
      await client.resource(`${GROUP}/v1`, 'Widget').delete('w1', { namespace: 'default' });
      const down = await deleteError(client, crd.metadata.name);
      assert.ok(down, 'refused while the guard is down');
      assert.match(down.message, /failed calling webhook "crd-deletion-guard\.kanri\.dev"/);
      assert.ok(await exists(client, crd.metadata.name));
      await configurations().delete('guard-op-crd-deletion-guard');
    });

    it('two replicas share one CA through a Secret and set it on configuration the manifests installed', async () => {
      const service = { name: 'replica-op-webhook', namespace: 'default' };
      // As the operator's manifests install it: no caBundle, and guarding only this operator's CRD.
      const tracked = gadgetCrd('Tracked', { kanri: true });
      const untracked = gadgetCrd('Untracked', { kanri: true });
      await installWithInstances(client, tracked, []);
      await installWithInstances(client, untracked, ['u1']);
      const manifest = () =>
        crdDeletionGuardWebhook({ name: 'replica-op-crd-deletion-guard', service, crdNames: [tracked.metadata.name] });
      await client.apply(manifest(), { fieldManager: 'manifests' });
      const replicas = ['a', 'b'].map(
        () =>
          new Manager(client, {
            name: 'replica-op',
            bindAddress: false,
            handleSignals: false,
            logger: quiet,
            webhook: { bindAddress: '127.0.0.1:0', service },
          }),
      );
      const running = replicas.map((m) => m.start());
      try {
        await Promise.all(replicas.map((m) => m.webhooks?.configured));
        const [a, b] = replicas.map((m) => m.webhooks);
        assert.ok(a?.caCertPem && b?.caCertPem);
        assert.equal(a.caCertPem, b.caCertPem, 'both replicas serve certificates of one CA');

        const secret = await client.resource('v1', 'Secret').get('replica-op-webhook-cert', { namespace: 'default' });
        assert.equal(secret.type, 'kubernetes.io/tls');
        assert.equal(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString(), a.caCertPem);
        const served = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
        assert.ok(served.checkHost('replica-op-webhook.default.svc'), 'the certificate names the Service');

        const configuration = await configurations().get('replica-op-crd-deletion-guard');
        const clientConfig = configuration.webhooks?.[0]?.clientConfig;
        assert.equal(clientConfig?.caBundle, Buffer.from(a.caCertPem).toString('base64'));
        assert.deepEqual(clientConfig?.service, { ...service, port: 443, path: '/validate-crd-deletion' });
        assert.equal(configuration.webhooks?.[0] && 'url' in (clientConfig ?? {}), false);

        // Re-applying the manifests (which do not carry caBundle) leaves the operator's field alone.
        await client.apply(manifest(), { fieldManager: 'manifests' });
        const again = await configurations().get('replica-op-crd-deletion-guard');
        assert.equal(again.webhooks?.[0]?.clientConfig.caBundle, Buffer.from(a.caCertPem).toString('base64'));

        // This API server cannot reach a Service, so a call fails: the tracked CRD is refused (failurePolicy Fail),
        // which shows the configuration is live; a Kanri CRD outside crdNames is never sent (matchConditions).
        const unreachable = await waitForGuard(client, tracked.metadata.name);
        assert.match(unreachable.message, /failed calling webhook "crd-deletion-guard\.kanri\.dev"/);
        assert.equal(await deleteError(client, untracked.metadata.name, true), undefined);
      } finally {
        for (const m of replicas) m.stop();
        await Promise.all(running);
        await configurations().delete('replica-op-crd-deletion-guard');
      }
    });
  });
});
