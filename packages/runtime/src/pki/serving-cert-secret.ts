/**
 * One webhook certificate for every replica, kept in a Secret (as CloudNativePG keeps its own),
 * and the CA that issues it in another (`<name>-ca`), so the serving Secret holds no key that
 * can mint certificates.
 *
 * Every replica serves the webhook behind one Service, and the API server trusts one `caBundle`,
 * so all replicas must serve certificates from the same CA. The first replica to start creates the
 * Secrets; the others read them. Whoever finds something to renew (ca-rotation.ts: the CA with an
 * overlap, the serving certificate expiring or missing a name) writes with an update that carries
 * the resourceVersion it read, so two replicas renewing at once cannot overwrite each other: the
 * loser re-reads and takes the winner's. The renewed certificate keeps every name the old one had,
 * so replicas of two versions in a rolling update (wanting different names) do not renew back and
 * forth. A serving Secret of the older layout (the CA's key beside the serving key) is split.
 */

import { X509Certificate } from 'node:crypto';
import { AlreadyExistsError, ConflictError, type KubeClient, type KubeObject, NotFoundError } from '@kanri/client';
import type { Secret } from 'kubernetes-types/core/v1.js';
import { caBundle, caSecretName, planRotation, type StoredCa } from './ca-rotation.js';

export { caSecretName };

import {
  certificateNames,
  createCertificateAuthority,
  createServingCertificate,
  type ServingCertificate,
} from './serving-cert.js';

export interface CertificateSecretOptions {
  /** The operator's namespace. */
  readonly namespace: string;
  /** The serving Secret; the CA's is `<name>-ca` ({@link caSecretName}). */
  readonly name: string;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Renew (and start a CA's rotation) when fewer days than this remain. Default 30. */
  readonly renewBeforeDays?: number;
  /** Validity of a new serving certificate. Default 365 days. */
  readonly validityDays?: number;
  /** Validity of a new CA. Default 3650 days. */
  readonly caValidityDays?: number;
  readonly fieldManager?: string;
  readonly signal?: AbortSignal;
  /** The clock, for tests of a rotation. */
  readonly now?: Date;
}

const SERVING = { cert: 'tls.crt', key: 'tls.key', bundle: 'ca.crt' } as const;
const CA = { cert: 'ca.crt', key: 'ca.key', previous: 'previous-ca.crt' } as const;
/** The key the older layout kept beside the serving key. */
const LEGACY_CA_KEY = 'ca.key';

const read = (secret: Secret | undefined, key: string) => {
  const value = secret?.data?.[key];
  return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
};
const encode = (data: Record<string, string | undefined>) =>
  Object.fromEntries(
    Object.entries(data)
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  );

function storedCa(caSecret: Secret | undefined, serving: Secret | undefined): StoredCa | undefined {
  const certPem = read(caSecret, CA.cert);
  const keyPem = read(caSecret, CA.key);
  if (certPem && keyPem) {
    const previousCertPem = read(caSecret, CA.previous);
    return { certPem, keyPem, ...(previousCertPem ? { previousCertPem } : {}) };
  }
  // The older layout: the CA (certificate and key) in the serving Secret.
  const legacyKey = read(serving, LEGACY_CA_KEY);
  const legacyCert = read(serving, SERVING.bundle);
  return legacyKey && legacyCert ? { certPem: legacyCert, keyPem: legacyKey } : undefined;
}

/**
 * Returns the serving certificate stored in the Secret (its `caCertPem` is the `caBundle`: the CA
 * issuing now, then the one it replaced while that one is valid), creating the Secrets or renewing
 * first when needed. Needs `get` and `update` on both Secrets and `create` on Secrets in its
 * namespace (see `crdDeletionGuardRules`).
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
  const secrets = client.resource<Secret & KubeObject>('v1', 'Secret');
  const { namespace, name, signal } = options;
  const writeOptions = { signal, ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}) };
  const get = async (secretName: string) => {
    try {
      return await secrets.get(secretName, { namespace, signal });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  };
  /** Creates the Secret, or updates the one read (its resourceVersion guards against a concurrent writer). */
  const put = (
    secretName: string,
    existing: Secret | undefined,
    type: string,
    data: Record<string, string | undefined>,
  ) =>
    existing
      ? secrets.update({ ...existing, data: encode(data) } as Secret & KubeObject, writeOptions)
      : secrets.create(
          {
            apiVersion: 'v1',
            kind: 'Secret',
            type,
            metadata: { name: secretName, namespace, labels: { 'app.kubernetes.io/managed-by': 'kanri' } },
            data: encode(data),
          } as Secret & KubeObject,
          writeOptions,
        );
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    const now = options.now ?? new Date();
    try {
      const caSecret = await get(caSecretName(name));
      const serving = await get(name);
      let ca = storedCa(caSecret, serving);
      const servingCert = read(serving, SERVING.cert);
      const servingKey = read(serving, SERVING.key);
      const had = servingCert ? certificateNames(servingCert) : { dnsNames: [], ipAddresses: [] };
      const wanted = {
        dnsNames: [...new Set([...(options.dnsNames ?? []), ...had.dnsNames])],
        ipAddresses: [...new Set([...(options.ipAddresses ?? []), ...had.ipAddresses])],
      };
      const plan = planRotation({
        ca,
        serving: servingCert && servingKey ? { certPem: servingCert, keyPem: servingKey } : undefined,
        dnsNames: options.dnsNames ?? [],
        ipAddresses: options.ipAddresses ?? [],
        renewBeforeDays: options.renewBeforeDays ?? 30,
        now,
      });
      if (plan.newCa) {
        const fresh = await createCertificateAuthority(
          options.caValidityDays ? { validityDays: options.caValidityDays } : {},
        );
        const previous =
          ca && Date.parse(new X509Certificate(ca.certPem).validTo) > now.getTime() ? ca.certPem : undefined;
        ca = { certPem: fresh.caCertPem, keyPem: fresh.caKeyPem, ...(previous ? { previousCertPem: previous } : {}) };
      } else if (ca && plan.dropPrevious) {
        ca = { certPem: ca.certPem, keyPem: ca.keyPem };
      }
      if (!ca) throw new Error('unreachable: a plan without a CA makes one');
      if (plan.newCa || plan.dropPrevious || !caSecret) {
        await put(caSecretName(name), caSecret, 'Opaque', {
          [CA.cert]: ca.certPem,
          [CA.key]: ca.keyPem,
          [CA.previous]: ca.previousCertPem,
        });
      }
      const bundle = caBundle(ca, now);
      const leaf = plan.issue
        ? await createServingCertificate({
            ...wanted,
            ...(options.validityDays ? { validityDays: options.validityDays } : {}),
            ca: { caCertPem: ca.certPem, caKeyPem: ca.keyPem },
          })
        : { certPem: servingCert ?? '', keyPem: servingKey ?? '' };
      const current = serving?.data ?? {};
      if (plan.issue || read(serving, SERVING.bundle) !== bundle || current[LEGACY_CA_KEY] !== undefined) {
        await put(name, serving, 'kubernetes.io/tls', {
          [SERVING.cert]: leaf.certPem,
          [SERVING.key]: leaf.keyPem,
          [SERVING.bundle]: bundle,
        });
      }
      return { caCertPem: bundle, caKeyPem: ca.keyPem, certPem: leaf.certPem, keyPem: leaf.keyPem };
    } catch (error) {
      // Another replica created or renewed it first: take theirs.
      if ((error instanceof AlreadyExistsError || error instanceof ConflictError) && attempt < 5) continue;
      throw error;
    }
  }
}
