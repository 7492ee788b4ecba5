/**
 * A peer identity for a test to call agents with, as the operator would certify an instance's key:
 * a certificate from the cluster's CA (read from names.postgresCa as the admin) naming `instance`.
 */
import type { KubeClient, KubeObject } from '@kanri/client';
import { createServingCertificate } from '@kanri/runtime';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PeerTls } from '../../src/agent/peers/peer-client.js';
import { names, PGBACKREST_CA_KEY, peerCommonName } from '../../src/contract/index.js';

/** `instance`'s peer certificate and key from `cluster`'s CA. */
export async function peerIdentityOf(
  client: KubeClient,
  cluster: string,
  instance: string,
  namespace = 'default',
): Promise<PeerTls> {
  const secret = await client
    .resource<Secret & KubeObject>('v1', 'Secret')
    .get(names.postgresCa(cluster), { namespace });
  const decoded = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
  const ca = { caCertPem: decoded(PGBACKREST_CA_KEY.cert), caKeyPem: decoded(PGBACKREST_CA_KEY.key) };
  const cert = await createServingCertificate({
    ca,
    commonName: peerCommonName(cluster, instance),
    dnsNames: ['test-peer'],
    clientAuth: true,
  });
  return { cert: cert.certPem, key: cert.keyPem, ca: ca.caCertPem, cluster };
}
