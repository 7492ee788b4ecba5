/**
 * A cluster's certificate authorities, each kept in a Secret owned by the cluster that only the
 * operator reads (`ca.crt`, `ca.key`): created once, replaced only when it can no longer issue.
 * The pgBackRest CA and the PostgreSQL CA are separate, so that neither side's certificates are
 * accepted by the other's servers.
 */
import { ignoreNotFound } from '@kanri/client';
import { type CertificateAuthority, createCertificateAuthority, type ReconcileContext } from '@kanri/runtime';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { PGBACKREST_CA_KEY } from '../../contract/index.js';
import { certificateAuthorityProblem, decodeSecretData } from '../backups/tls-plan.js';
import { clusterLabels } from '../builders/labels.js';

type Context = ReconcileContext<PostgresCluster>;

/** A Secret of the cluster's, labelled so the operator's filtered cache sees it. */
export function clusterSecret(cluster: PostgresCluster, name: string, data: Readonly<Record<string, string>>): Secret {
  const clusterName = cluster.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: cluster.metadata?.namespace, labels: clusterLabels(clusterName) },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

/** The Secret as the API server has it now: the cache may lag this controller's own last write. */
export async function liveSecret(ctx: Context, name: string, namespace: string | undefined) {
  return ignoreNotFound(ctx.client.resource<Secret>('v1', 'Secret').get(name, { namespace, signal: ctx.signal }));
}

export interface CaSecret {
  readonly secretName: string;
  readonly commonName: string;
  /** For the log and the replacement Event, e.g. "pgBackRest". */
  readonly purpose: string;
  /** The replacement Event's reason. */
  readonly replacedReason: string;
}

/**
 * The CA in `which.secretName`, creating it when there is none (or replacing one that can no
 * longer issue, with a Warning Event). Undefined when a CA created by an earlier write is not
 * readable yet: the next reconcile has it.
 *
 * @example
 * ```ts
 * const ca = await ensureCertificateAuthority(cluster, ctx, { secretName: 'hippo-ca', commonName: 'hippo-ca', purpose: 'PostgreSQL', replacedReason: 'PostgresCAReplaced' });
 * ```
 */
export async function ensureCertificateAuthority(
  cluster: PostgresCluster,
  ctx: Context,
  which: CaSecret,
): Promise<CertificateAuthority | undefined> {
  const namespace = cluster.metadata?.namespace;
  const usable = (data: Record<string, string>) =>
    certificateAuthorityProblem(data) === undefined
      ? { caCertPem: data[PGBACKREST_CA_KEY.cert] ?? '', caKeyPem: data[PGBACKREST_CA_KEY.key] ?? '' }
      : undefined;
  const cached = usable(decodeSecretData(ctx.get<Secret>('v1', 'Secret', which.secretName, namespace)?.data));
  if (cached) return cached;
  const live = await liveSecret(ctx, which.secretName, namespace);
  const liveData = decodeSecretData(live?.data);
  const current = usable(liveData);
  if (current) return current;
  const problem = certificateAuthorityProblem(liveData);
  ctx.log.info({ secret: which.secretName, reason: problem }, `creating the ${which.purpose} CA`);
  const ca = await createCertificateAuthority({ commonName: which.commonName });
  const desired = clusterSecret(cluster, which.secretName, {
    [PGBACKREST_CA_KEY.cert]: ca.caCertPem,
    [PGBACKREST_CA_KEY.key]: ca.caKeyPem,
  });
  if (live) {
    await ctx.apply(desired);
    await ctx.event('Warning', which.replacedReason, `replaced the ${which.purpose} CA: ${problem}`);
  } else if (!(await ctx.create(desired))) {
    return undefined; // created meanwhile by an earlier reconcile whose write the cache had not shown
  }
  return ca;
}
