/**
 * Renewal of the webhook's serving certificate in a running manager: with a validity and a
 * renew-before window shortened to seconds, the server starts serving a new certificate from the
 * same CA without a restart, and the real API server keeps calling it under the unchanged caBundle.
 */
import assert from 'node:assert/strict';
import type { X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { ApiError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane } from '@kanri/testenv';
import { pino } from 'pino';
import { Manager } from '../src/index.js';
import { waitFor } from './helpers.js';

const GROUP = 'renewal.kanri.dev';
const CRD_NAME = `lamps.${GROUP}`;

/** The certificate a fresh TLS handshake gets, verified against `ca` and the name 127.0.0.1. */
function servedCertificate(port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      const certificate = socket.getPeerX509Certificate();
      socket.end();
      if (certificate) resolve(certificate);
      else reject(new Error('no peer certificate'));
    });
    socket.once('error', reject);
  });
}

/** What the API server answers to a dry-run delete of the guarded CRD (admission runs, nothing is deleted). */
async function dryRunDelete(client: KubeClient): Promise<string> {
  try {
    await client.resource('apiextensions.k8s.io/v1', 'CustomResourceDefinition').delete(CRD_NAME, { dryRun: true });
    return 'allowed';
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
}

describe('webhook serving certificate renewal', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: CRD_NAME, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
      spec: {
        group: GROUP,
        scope: 'Namespaced',
        names: { plural: 'lamps', singular: 'lamp', kind: 'Lamp' },
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
    // A variable, not a literal: the CRD type has no field for the x-kubernetes- extensions.
    await client.resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition').create(crd);
    const lamps = client.resource<KubeObject>(`${GROUP}/v1`, 'Lamp');
    await waitFor('the CRD to be served', () => lamps.list({ namespace: 'default', limit: 1 }));
    await lamps.create({ metadata: { name: 'l1', namespace: 'default' } });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('serves renewed certificates from the same CA without a restart, and the API server keeps calling it', async (t) => {
    const manager = new Manager(client, {
      name: 'renewal-op',
      bindAddress: false,
      handleSignals: false,
      logger: pino({ level: 'silent' }),
      // Each certificate lives a day and is due 3 s after it was issued; the check runs 5 times a second.
      webhook: {
        bindAddress: '127.0.0.1:0',
        renewCheckIntervalMs: 200,
        certificateValidityDays: 1,
        renewBeforeDays: 1 - 3 / 86_400,
      },
    });
    const running = manager.start();
    const guarded = /customresourcedefinition "lamps\.renewal\.kanri\.dev" still has 1 custom resource/;
    try {
      const webhooks = manager.webhooks;
      assert.ok(webhooks);
      await webhooks.configured;
      const { port, caCertPem: ca } = webhooks;
      assert.ok(port && ca);
      await waitFor('the API server to call the guard', async () => guarded.test(await dryRunDelete(client)), 60_000);

      const seen = [(await servedCertificate(port, ca)).fingerprint256];
      const startedAt = performance.now();
      while (seen.length < 3) {
        const renewed = await waitFor(
          `renewal ${seen.length}`,
          async () => {
            const served = await servedCertificate(port, ca);
            return seen.includes(served.fingerprint256) ? undefined : served;
          },
          30_000,
        );
        seen.push(renewed.fingerprint256);
        assert.ok(renewed.checkIP('127.0.0.1'), 'the renewed certificate keeps the name');
        // The configuration still trusts the one CA, and the API server's calls still get the guard's answer.
        assert.match(await dryRunDelete(client), guarded);
      }
      t.diagnostic(`two renewals in ${(performance.now() - startedAt).toFixed(0)} ms`);
      assert.equal(webhooks.caCertPem, ca, 'the CA stays');
      const configuration = await client
        .resource<KubeObject & { webhooks?: { clientConfig: { caBundle?: string } }[] }>(
          'admissionregistration.k8s.io/v1',
          'ValidatingWebhookConfiguration',
        )
        .get('renewal-op-crd-deletion-guard');
      assert.equal(configuration.webhooks?.[0]?.clientConfig.caBundle, Buffer.from(ca).toString('base64'));
    } finally {
      manager.stop();
      await running;
      // With failurePolicy Fail, a configuration left pointing at a closed server would refuse the CRD's deletion.
      await client
        .resource('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration')
        .delete('renewal-op-crd-deletion-guard');
    }
  });

  it('refuses a renew-before window that is not shorter than the validity', () => {
    assert.throws(
      () =>
        new Manager(client, {
          bindAddress: false,
          handleSignals: false,
          webhook: { certificateValidityDays: 10, renewBeforeDays: 30 },
        }),
      /renewBeforeDays \(30\) must be at least 0 and less than certificateValidityDays \(10\)/,
    );
  });
});
