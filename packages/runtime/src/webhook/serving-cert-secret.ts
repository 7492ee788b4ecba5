/**
 * One webhook certificate for every replica, kept in a Secret (as CloudNativePG keeps its own).
 *
 * Every replica serves the webhook behind one Service, and the API server trusts one `caBundle`,
 * so all replicas must serve certificates from the same CA. The first replica to start creates the
 * Secret; the others read it. Whoever finds the serving certificate expiring (or missing a name)
 * renews it from the same CA with an update that carries the resourceVersion it read, so two
 * replicas renewing at once cannot overwrite each other: the loser re-reads and takes the winner's.
 * The renewed certificate keeps every name the old one had, so replicas of two versions in a
 * rolling update (wanting different names) do not renew back and forth.
 */
import { AlreadyExistsError, ConflictError, type KubeClient, NotFoundError } from '@kanri/client';
import type { Secret } from 'kubernetes-types/core/v1.js';
import {
  certificateNames,
  createServingCertificate,
  type ServingCertificate,
  servingCertificateProblem,
} from './serving-cert.js';

export interface CertificateSecretOptions {
  /** The operator's namespace. */
  readonly namespace: string;
  readonly name: string;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Renew when fewer days than this remain. Default 30. */
  readonly renewBeforeDays?: number;
  /** Validity of a new serving certificate. Default 365 days. */
  readonly validityDays?: number;
  readonly fieldManager?: string;
  readonly signal?: AbortSignal;
}

const KEYS = { caCertPem: 'ca.crt', caKeyPem: 'ca.key', certPem: 'tls.crt', keyPem: 'tls.key' } as const;

function decode(secret: Secret): ServingCertificate | undefined {
  const data = secret.data ?? {};
  const read = (key: string) => (data[key] ? Buffer.from(data[key], 'base64').toString('utf8') : undefined);
  const cert = {
    caCertPem: read(KEYS.caCertPem),
    caKeyPem: read(KEYS.caKeyPem),
    certPem: read(KEYS.certPem),
    keyPem: read(KEYS.keyPem),
  };
  return cert.caCertPem && cert.caKeyPem && cert.certPem && cert.keyPem ? (cert as ServingCertificate) : undefined;
}

function encode(cert: ServingCertificate): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [field, key] of Object.entries(KEYS)) {
    data[key] = Buffer.from(cert[field as keyof typeof KEYS]).toString('base64');
  }
  return data;
}

/**
 * Returns the serving certificate stored in the Secret, creating the Secret or renewing the
 * certificate first when needed. Needs `get` and `update` on that Secret and `create` on Secrets
 * in its namespace (see `crdDeletionGuardRules`).
 *
 * @example
 * ```ts
 * const cert = await ensureServingCertificateSecret(client, {
 *   namespace: 'ops', name: 'website-operator-webhook-cert', dnsNames: serviceDnsNames('website-operator-webhook', 'ops'),
 * });
 * ```
 */
export async function ensureServingCertificateSecret(
  client: KubeClient,
  options: CertificateSecretOptions,
): Promise<ServingCertificate> {
  const secrets = client.resource('v1', 'Secret');
  const { namespace, name, signal } = options;
  const wanted = { dnsNames: options.dnsNames ?? [], ipAddresses: options.ipAddresses ?? [] };
  const issue = async (previous: ServingCertificate | undefined, keepCa: boolean): Promise<ServingCertificate> => {
    const had = previous ? certificateNames(previous.certPem) : { dnsNames: [], ipAddresses: [] };
    return createServingCertificate({
      dnsNames: [...new Set([...wanted.dnsNames, ...had.dnsNames])],
      ipAddresses: [...new Set([...wanted.ipAddresses, ...had.ipAddresses])],
      ...(options.validityDays ? { validityDays: options.validityDays } : {}),
      ...(previous && keepCa ? { ca: previous } : {}),
    });
  };
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    let secret: Secret | undefined;
    try {
      secret = await secrets.get(name, { namespace, signal });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    try {
      if (!secret) {
        const cert = await issue(undefined, false);
        await secrets.create(
          {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'kubernetes.io/tls',
            metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
            data: encode(cert),
          },
          { signal, ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}) },
        );
        return cert;
      }
      const stored = decode(secret);
      const problem = stored
        ? servingCertificateProblem(stored, { ...wanted, renewBeforeDays: options.renewBeforeDays ?? 30 })
        : { reason: 'incomplete', keepCa: false };
      if (stored && !problem) return stored;
      let cert = await issue(stored, problem?.keepCa ?? false);
      // A CA key that does not match its certificate issues certificates that do not verify: start over.
      if (servingCertificateProblem(cert, { renewBeforeDays: 0 })) cert = await issue(undefined, false);
      await secrets.update(
        { ...secret, data: { ...secret.data, ...encode(cert) } },
        { signal, ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}) },
      );
      return cert;
    } catch (error) {
      // Another replica created or renewed it first: take theirs.
      if ((error instanceof AlreadyExistsError || error instanceof ConflictError) && attempt < 5) continue;
      throw error;
    }
  }
}
