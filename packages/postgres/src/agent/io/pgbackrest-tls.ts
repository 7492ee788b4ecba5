/**
 * This Pod's pgBackRest certificate, as the operator issued it into the cluster's TLS Secret once
 * the Pod had its IP (contract/repo-host.ts). Read through the API rather than mounted: the
 * certificate names the Pod IP, which exists only once the Pod runs, so no volume could hold it at
 * start. Written into the run volume, mode 0600, for pgBackRest to read.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound, type KubeClient } from '@kanri/client';
import type { Secret } from 'kubernetes-types/core/v1.js';
import { names, PGBACKREST_TLS_KEY, type PgBackRestTlsFiles } from '../../contract/index.js';
import { writeFileIfChanged } from './files.js';

export interface TlsIdentity {
  readonly namespace: string;
  readonly cluster: string;
  readonly podName: string;
  readonly podIP: string;
}

/** Whether `certPem` was issued for `ip` (pgBackRest checks the address it dialled against it). */
export function certificateNamesIp(certPem: string, ip: string): boolean {
  try {
    const names = new X509Certificate(certPem).subjectAltName ?? '';
    return names.split(', ').includes(`IP Address:${ip}`);
  } catch {
    return false;
  }
}

/**
 * Writes this Pod's certificate, key and CA under `dir` once the Secret holds a certificate for
 * its IP; resolves their paths, or undefined while the operator has not issued it yet.
 *
 * @example
 * ```ts
 * const tls = await fetchPgBackRestTls(client, config, join(config.runDir, 'pgbackrest-tls'));
 * if (tls) console.log(tls.cert);
 * ```
 */
export async function fetchPgBackRestTls(
  client: KubeClient,
  identity: TlsIdentity,
  dir: string,
  signal?: AbortSignal,
): Promise<PgBackRestTlsFiles | undefined> {
  const secret = await getSecret(client, names.pgbackrestTls(identity.cluster), identity.namespace, signal);
  if (!secret) return undefined;
  const cert = secret.data?.[PGBACKREST_TLS_KEY.cert(identity.podName)];
  if (!cert || !certificateNamesIp(Buffer.from(cert, 'base64').toString('utf8'), identity.podIP)) return undefined;
  return writeTls(
    secret,
    {
      ca: PGBACKREST_TLS_KEY.ca,
      cert: PGBACKREST_TLS_KEY.cert(identity.podName),
      key: PGBACKREST_TLS_KEY.key(identity.podName),
    },
    dir,
  );
}

/**
 * A clone's client certificate for its source's repo host (names.pgbackrestSourceTls), written
 * under `dir`; undefined while the operator has not issued it.
 */
export async function fetchSourceTls(
  client: KubeClient,
  identity: Pick<TlsIdentity, 'namespace' | 'cluster'>,
  dir: string,
  signal?: AbortSignal,
): Promise<PgBackRestTlsFiles | undefined> {
  const secret = await getSecret(client, names.pgbackrestSourceTls(identity.cluster), identity.namespace, signal);
  return secret && writeTls(secret, { ca: 'ca.crt', cert: 'tls.crt', key: 'tls.key' }, dir);
}

/** Writes the Secret's three keys under `dir` (mode 0600); undefined when one is missing. */
async function writeTls(
  secret: Secret,
  keys: { ca: string; cert: string; key: string },
  dir: string,
): Promise<PgBackRestTlsFiles | undefined> {
  const data = (key: string) => {
    const value = secret.data?.[key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  const ca = data(keys.ca);
  const cert = data(keys.cert);
  const key = data(keys.key);
  if (!ca || !cert || !key) return undefined;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
  await writeFileIfChanged(files.ca, ca, 0o600);
  await writeFileIfChanged(files.cert, cert, 0o600);
  await writeFileIfChanged(files.key, key, 0o600);
  return files;
}

async function getSecret(
  client: KubeClient,
  name: string,
  namespace: string,
  signal: AbortSignal | undefined,
): Promise<Secret | undefined> {
  try {
    return await client
      .resource<Secret & { metadata: { name: string } }>('v1', 'Secret')
      .get(name, { namespace, ...(signal ? { signal } : {}) });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
