/**
 * A clone's way into its source's volume repo: the source's repo host's read-only clone port
 * (contract/clone-gateway.ts). This Pod authenticates with the token its own pgBackRest key and the
 * repo host's certificate derive, and verifies the repo host with the source's CA that comes with
 * that certificate; it restores only once the port answers it, i.e. once the operator has granted
 * this Pod (a restore that started before would fail for good).
 */
import { X509Certificate } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import {
  type CloneGatewayAccess,
  cloneToken,
  PGBACKREST_CLONE_PORT,
  PGBACKREST_STANZA,
  splitPeerCertificate,
} from '../../contract/index.js';
import { writeFileIfChanged } from '../files.js';
import { podKey } from './tls-server.js';

/** What the operator resolved of the source's repo host (RestoreSource.gateway). */
export interface SourceGateway {
  readonly address: string;
  /** The repo host's pgBackRest certificate, then the source's CA, PEM. */
  readonly certificate: string;
}

/** The status the clone port answers a listing of the repo's backups with, or the error. */
function probe(access: CloneGatewayAccess, ca: string, repo: string, signal: AbortSignal): Promise<number | string> {
  const prefix = encodeURIComponent(`backup/${PGBACKREST_STANZA}/`);
  return new Promise((resolve) => {
    const req = request(
      {
        host: access.address,
        port: PGBACKREST_CLONE_PORT,
        path: `/storage/v1/b/${encodeURIComponent(repo)}/o?delimiter=%2F&prefix=${prefix}`,
        ca,
        headers: { authorization: `Bearer ${access.token}` },
        signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('error', (error) => resolve(error.message));
    req.end();
  });
}

/**
 * This Pod's access to `repo` through the clone port once it is granted; else why it waits.
 *
 * @example
 * ```ts
 * const { access, waiting } = await cloneAccess(config, source.gateway, source.repo.name, signal);
 * ```
 */
export async function cloneAccess(
  config: { readonly runDir: string; readonly podName: string },
  gateway: SourceGateway,
  repo: string,
  signal: AbortSignal,
): Promise<{ access?: CloneGatewayAccess; waiting?: string }> {
  const { cert, ca } = splitPeerCertificate(gateway.certificate);
  if (!cert || !ca) return { waiting: "the source's repo host has no certificate yet" };
  const caFile = join(config.runDir, 'pgbackrest-source', 'ca.crt');
  await mkdir(join(config.runDir, 'pgbackrest-source'), { recursive: true, mode: 0o700 });
  await writeFileIfChanged(caFile, ca, 0o600);
  const shared = podKey(config.runDir).agree(new X509Certificate(cert).publicKey);
  const access = { address: gateway.address, caFile, token: cloneToken(shared, config.podName) };
  const status = await probe(access, ca, repo, signal);
  if (status === 200) return { access };
  return {
    waiting:
      status === 403
        ? `the source's repo host (${gateway.address}) has not granted this Pod read access yet`
        : `the source's repo host clone port (${gateway.address}:${PGBACKREST_CLONE_PORT}) answers ${status}`,
  };
}
