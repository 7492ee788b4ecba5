/**
 * Keeps a cluster's pgBackRest certificates (contract/repo-host.ts): the CA in Secret
 * names.pgbackrestCa (created once, read by the operator only) and one certificate per Pod in
 * Secret names.pgbackrestTls, issued once the Pod has an IP (tls-plan.ts decides which). Both
 * Secrets are owned by the cluster. Key material never reaches a log or an event.
 */
import { createServingCertificate, type ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names, PGBACKREST_CA_KEY, pgbackrestClientName, REPO_HOST_LABEL } from '../../contract/index.js';
import { ensureCertificateAuthority, liveSecret, clusterSecret as secret } from '../tls/certificate-authority.js';
import {
  certificateAuthorityProblem,
  decodeSecretData,
  nextTlsData,
  planTls,
  type TlsPlan,
  type TlsPod,
  tlsPlanIsEmpty,
} from './tls-plan.js';

/** Validity of a Pod's certificate; renewed 30 days before it ends (tls-plan.ts). */
const CERTIFICATE_DAYS = 365;

type Context = ReconcileContext<PostgresCluster>;

/** The Pods that take part in pgBackRest's TLS: the instances and the repo host. */
export function tlsPods(pods: readonly Pod[]): TlsPod[] {
  return pods
    .filter((p) => p.metadata?.labels?.[LABEL.instance] || p.metadata?.labels?.[REPO_HOST_LABEL] === 'true')
    .map((p) => ({
      name: p.metadata?.name ?? '',
      deleting: Boolean(p.metadata?.deletionTimestamp),
      ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
    }));
}

/** The cluster's pgBackRest CA (names.pgbackrestCa). */
function ensureCa(cluster: PostgresCluster, ctx: Context) {
  const clusterName = cluster.metadata?.name ?? '';
  return ensureCertificateAuthority(cluster, ctx, {
    secretName: names.pgbackrestCa(clusterName),
    commonName: `${clusterName}-pgbackrest-ca`,
    purpose: 'pgBackRest',
    replacedReason: 'PgBackRestCAReplaced',
  });
}

async function issueAll(cluster: PostgresCluster, plan: TlsPlan, ca: { caCertPem: string; caKeyPem: string }) {
  const commonName = pgbackrestClientName(cluster.metadata?.name ?? '');
  return Promise.all(
    plan.issue.map(async ({ pod, podIP }) => {
      const { certPem, keyPem } = await createServingCertificate({
        ipAddresses: [podIP],
        commonName,
        clientAuth: true,
        ca,
        validityDays: CERTIFICATE_DAYS,
      });
      return { pod, certPem, keyPem };
    }),
  );
}

/**
 * Brings the TLS Secret up to date with the Pods: a certificate for each Pod with an IP, none
 * for Pods that are gone.
 *
 * @example
 * ```ts
 * if (hasVolumeRepo(cluster.spec.backups?.pgbackrest)) await reconcilePgbackrestTls(cluster, ctx, pods);
 * ```
 */
export async function reconcilePgbackrestTls(cluster: PostgresCluster, ctx: Context, pods: readonly Pod[]) {
  const clusterName = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const ca = await ensureCa(cluster, ctx);
  if (!ca) return;
  const name = names.pgbackrestTls(clusterName);
  const participants = tlsPods(pods);
  const plan = (data: Record<string, string>) =>
    planTls({ cluster: clusterName, caCertPem: ca.caCertPem, data, pods: participants });
  if (tlsPlanIsEmpty(plan(decodeSecretData(ctx.get<Secret>('v1', 'Secret', name, namespace)?.data)))) return;
  // Change only what the API server holds: acting on a cache that lags this controller's last
  // write would reissue a certificate an agent may already have read.
  const data = decodeSecretData((await liveSecret(ctx, name, namespace))?.data);
  const todo = plan(data);
  if (tlsPlanIsEmpty(todo)) return;
  for (const { pod, podIP, reason } of todo.issue) {
    ctx.log.info({ pod, podIP, reason }, 'issuing a pgBackRest certificate');
  }
  if (todo.prune.length > 0) ctx.log.info({ keys: todo.prune }, 'dropping the pgBackRest certificates of Pods gone');
  const issued = await issueAll(cluster, todo, ca);
  await ctx.apply(secret(cluster, name, nextTlsData(data, todo, ca.caCertPem, issued)));
}

/**
 * A clone of another cluster's volume repo: a client certificate from the source cluster's CA,
 * with the source's common name (which its repo host admits), in names.pgbackrestSourceTls of the
 * clone. Issued once; resolves why it cannot be yet (the source has no CA), or undefined when it exists.
 */
export async function ensureSourceClientCertificate(
  cluster: PostgresCluster,
  ctx: Context,
  source: string,
): Promise<string | undefined> {
  const clusterName = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const name = names.pgbackrestSourceTls(clusterName);
  const complete = (data: Record<string, string>) => Boolean(data['ca.crt'] && data['tls.crt'] && data['tls.key']);
  if (complete(decodeSecretData(ctx.get<Secret>('v1', 'Secret', name, namespace)?.data))) return undefined;
  if (complete(decodeSecretData((await liveSecret(ctx, name, namespace))?.data))) return undefined;
  const caData = decodeSecretData((await liveSecret(ctx, names.pgbackrestCa(source), namespace))?.data);
  if (certificateAuthorityProblem(caData))
    return `PostgresCluster ${source} has no pgBackRest CA to issue the clone's certificate yet`;
  const ca = { caCertPem: caData[PGBACKREST_CA_KEY.cert] ?? '', caKeyPem: caData[PGBACKREST_CA_KEY.key] ?? '' };
  ctx.log.info({ secret: name, source }, "issuing the clone's client certificate from its source's pgBackRest CA");
  const { certPem, keyPem } = await createServingCertificate({
    dnsNames: [clusterName],
    commonName: pgbackrestClientName(source),
    clientAuth: true,
    ca,
    validityDays: CERTIFICATE_DAYS,
  });
  await ctx.create(secret(cluster, name, { 'ca.crt': ca.caCertPem, 'tls.crt': certPem, 'tls.key': keyPem }));
  return undefined;
}
