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
import { clusterLabels } from '../builders/labels.js';
import { foreignOwner } from '../ownership.js';
import { certificateAuthorityProblem, decodeSecretData } from './certificate-checks.js';

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
  /**
   * Where earlier versions kept this CA: its CA is moved to `secretName` (kept, never replaced:
   * every certificate the cluster serves and trusts comes from it), and the old Secret removed.
   */
  readonly legacySecretName?: string;
  readonly commonName: string;
  /** For the log and the replacement Event, e.g. "pgBackRest". */
  readonly purpose: string;
  /** The replacement Event's reason. */
  readonly replacedReason: string;
}

/**
 * The CA in `which.secretName`, creating it when there is none (or replacing one that can no
 * longer issue, with a Warning Event). Undefined when a CA created by an earlier write is not
 * readable yet (the next reconcile has it), or when the Secret of that name is not the cluster's
 * (ownership.ts): another cluster's CA is never used, nor replaced (the guarded context refuses the
 * write and the cluster says so).
 *
 * @example
 * ```ts
 * const ca = await ensureCertificateAuthority(cluster, ctx, { secretName: 'hippo-postgres-ca', commonName: 'hippo-ca', purpose: 'PostgreSQL', replacedReason: 'PostgresCAReplaced' });
 * ```
 */
export async function ensureCertificateAuthority(
  cluster: PostgresCluster,
  ctx: Context,
  which: CaSecret,
): Promise<CertificateAuthority | undefined> {
  const ca = await currentOrNewCa(cluster, ctx, which);
  if (ca && which.legacySecretName) await removeLegacyCopy(cluster, ctx, which, ca);
  return ca;
}

async function currentOrNewCa(
  cluster: PostgresCluster,
  ctx: Context,
  which: CaSecret,
): Promise<CertificateAuthority | undefined> {
  const namespace = cluster.metadata?.namespace;
  const usable = (data: Record<string, string>) =>
    certificateAuthorityProblem(data) === undefined
      ? { caCertPem: data[PGBACKREST_CA_KEY.cert] ?? '', caKeyPem: data[PGBACKREST_CA_KEY.key] ?? '' }
      : undefined;
  const foreign = (secret: Secret | undefined) => secret !== undefined && foreignOwner(secret, cluster) !== undefined;
  // Never read nor replaced; the create is refused by the guarded context, which records whose it is.
  const refuse = async () => void (await ctx.create(clusterSecret(cluster, which.secretName, {})));
  const cachedSecret = ctx.get<Secret>('v1', 'Secret', which.secretName, namespace);
  if (foreign(cachedSecret)) return refuse();
  const cached = usable(decodeSecretData(cachedSecret?.data));
  if (cached) return cached;
  const live = await liveSecret(ctx, which.secretName, namespace);
  if (foreign(live)) return refuse();
  const liveData = decodeSecretData(live?.data);
  const current = usable(liveData);
  if (current) return current;
  if (!live && which.legacySecretName) {
    const moved = await moveLegacyCa(cluster, ctx, which, usable);
    if (moved) return moved;
  }
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

/**
 * The cluster's own CA from `which.legacySecretName`, copied to `which.secretName` and then
 * removed from the old name (which another cluster's names may need); undefined when there is
 * none to move.
 */
async function moveLegacyCa(
  cluster: PostgresCluster,
  ctx: Context,
  which: CaSecret,
  usable: (data: Record<string, string>) => CertificateAuthority | undefined,
): Promise<CertificateAuthority | undefined> {
  const name = which.legacySecretName ?? '';
  const namespace = cluster.metadata?.namespace;
  const legacy = ctx.get<Secret>('v1', 'Secret', name, namespace) ?? (await liveSecret(ctx, name, namespace));
  if (!legacy || foreignOwner(legacy, cluster) !== undefined) return undefined;
  const ca = usable(decodeSecretData(legacy.data));
  if (!ca) return undefined;
  ctx.log.info({ from: name, to: which.secretName }, `moving the ${which.purpose} CA to its new Secret`);
  const moved = clusterSecret(cluster, which.secretName, {
    [PGBACKREST_CA_KEY.cert]: ca.caCertPem,
    [PGBACKREST_CA_KEY.key]: ca.caKeyPem,
  });
  // Taken meanwhile (an earlier move the cache had not shown yet): the next reconcile reads it.
  if (!(await ctx.create(moved))) return undefined;
  await ctx.event(
    'Normal',
    'CASecretMoved',
    `moved the ${which.purpose} CA from Secret ${name} to ${which.secretName}`,
  );
  return ca;
}

/** Removes the old Secret once the new one holds the same CA; one that holds another is left alone. */
async function removeLegacyCopy(cluster: PostgresCluster, ctx: Context, which: CaSecret, ca: CertificateAuthority) {
  const name = which.legacySecretName ?? '';
  const legacy = ctx.get<Secret>('v1', 'Secret', name, cluster.metadata?.namespace);
  if (!legacy || foreignOwner(legacy, cluster) !== undefined) return;
  if (decodeSecretData(legacy.data)[PGBACKREST_CA_KEY.cert] !== ca.caCertPem) return;
  ctx.log.info({ secret: name }, `removing the old Secret of the ${which.purpose} CA`);
  await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name, namespace: cluster.metadata?.namespace });
}
