/** For the agent's unit tests: a names.postgresTls Secret's data as the operator issues it, from a CA of its own. */
import { createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import { POSTGRES_TLS_KEY, REPLICATION_USER } from '../contract/index.js';

/**
 * The Secret's data, base64 as stored, with every key of {@link POSTGRES_TLS_KEY}; and one more
 * key from the same CA that belongs to none of its certificates.
 *
 * @example
 * ```ts
 * const { data } = await tlsSecretFixture('hippo');
 * readPostgresTls(decodeTlsSecret(data), { what: 'Secret hippo-postgres-tls', known: true }); // { value: … }
 * ```
 */
export async function tlsSecretFixture(cluster: string): Promise<{ data: Record<string, string>; strayKey: string }> {
  const ca = await createCertificateAuthority({ commonName: `${cluster}-ca` });
  const issue = (commonName?: string) =>
    createServingCertificate({ dnsNames: [cluster], ca, ...(commonName ? { commonName, clientAuth: true } : {}) });
  const [server, replication, stray] = await Promise.all([issue(), issue(REPLICATION_USER), issue()]);
  const K = POSTGRES_TLS_KEY;
  const pem = {
    [K.serverCa]: ca.caCertPem,
    [K.serverCert]: server.certPem,
    [K.serverKey]: server.keyPem,
    [K.clientCa]: ca.caCertPem,
    [K.replicationCert]: replication.certPem,
    [K.replicationKey]: replication.keyPem,
  };
  const data = Object.fromEntries(
    Object.entries(pem).map(([key, text]) => [key, Buffer.from(text).toString('base64')]),
  );
  return { data, strayKey: stray.keyPem };
}
