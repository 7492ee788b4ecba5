/**
 * Keeps a cluster's pgBackRest certificates (contract/repo-host.ts): the CA in Secret
 * names.pgbackrestCa (created once, read by the operator only, owned by the cluster), and for each
 * Pod the certificate of the key its agent made and published, written on the Pod itself
 * (key-certificate-plan.ts decides which). No Secret holds a Pod's key. A cluster from before
 * per-Pod keys has every Pod's key in Secret names.pgbackrestTls: it is kept current for the Pods
 * whose agent publishes no key (tls-plan.ts) and deleted once none is left, so no Pod is ever
 * without a certificate the others trust (one CA, one name). Key material never reaches a log or
 * an event.
 */
import { ignoreNotFound, type KubeObject } from '@kanri/client';
import { certifyPublicKey, createServingCertificate, type ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  ANNOTATION_PGBACKREST_CERTIFICATE,
  ANNOTATION_PGBACKREST_KEY,
  LABEL,
  names,
  pgbackrestClientName,
  REPO_HOST_LABEL,
} from '../../contract/index.js';
import { ensureCertificateAuthority, liveSecret, clusterSecret as secret } from '../tls/certificate-authority.js';
import { decodeSecretData } from '../tls/certificate-checks.js';
import { type KeyPod, planKeyCertificates, podsOnSharedSecret } from './key-certificate-plan.js';
import { nextTlsData, planTls, type TlsPlan, tlsPlanIsEmpty } from './tls-plan.js';

/** Validity of a Pod's certificate; renewed 30 days before it ends (tls-plan.ts). */
const CERTIFICATE_DAYS = 365;

type Context = ReconcileContext<PostgresCluster>;

/** The Pods that take part in pgBackRest's TLS (the instances and the repo host), as the plans read them. */
export function tlsPods(pods: readonly Pod[]): KeyPod[] {
  return pods
    .filter((p) => p.metadata?.labels?.[LABEL.instance] || p.metadata?.labels?.[REPO_HOST_LABEL] === 'true')
    .map((p) => {
      const annotations = p.metadata?.annotations ?? {};
      const key = annotations[ANNOTATION_PGBACKREST_KEY];
      const certificate = annotations[ANNOTATION_PGBACKREST_CERTIFICATE];
      return {
        name: p.metadata?.name ?? '',
        deleting: Boolean(p.metadata?.deletionTimestamp),
        ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
        ...(key ? { publicKeyPem: key } : {}),
        ...(certificate ? { certificate } : {}),
      };
    });
}

/**
 * Whether the cluster still has the older scheme's Secret of every Pod's key (names.pgbackrestTls):
 * never created for a cluster of this scheme, and one the cluster does not own is not its own.
 *
 * @example
 * ```ts
 * instanceRbac(cluster, { sharedPgbackrestTls: hasSharedPgbackrestTls(cluster, ctx) });
 * ```
 */
export function hasSharedPgbackrestTls(cluster: PostgresCluster, ctx: Pick<Context, 'get'>): boolean {
  const shared = ctx.get<Secret>(
    'v1',
    'Secret',
    names.pgbackrestTls(cluster.metadata?.name ?? ''),
    cluster.metadata?.namespace,
  );
  return shared?.metadata?.ownerReferences?.some((r) => r.uid === cluster.metadata?.uid) ?? false;
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

/**
 * Certifies each Pod's published key for its IP, onto the Pod; keeps or retires the older scheme's
 * shared Secret.
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
  const participants = tlsPods(pods);
  await certifyKeys(cluster, ctx, ca, participants);
  const name = names.pgbackrestTls(clusterName);
  if (!hasSharedPgbackrestTls(cluster, ctx)) return;
  const legacy = podsOnSharedSecret(participants);
  if (legacy.length === 0) {
    ctx.log.info({ secret: name }, 'every Pod has its own pgBackRest key: deleting the shared certificate Secret');
    await ctx.delete({ apiVersion: 'v1', kind: 'Secret', name, namespace });
    return;
  }
  const plan = (data: Record<string, string>) =>
    planTls({ cluster: clusterName, caCertPem: ca.caCertPem, data, pods: legacy });
  if (tlsPlanIsEmpty(plan(decodeSecretData(ctx.get<Secret>('v1', 'Secret', name, namespace)?.data)))) return;
  // Change only what the API server holds: acting on a cache that lags this controller's last
  // write would reissue a certificate an agent may already have read.
  const live = await liveSecret(ctx, name, namespace);
  if (!live) return;
  const data = decodeSecretData(live.data);
  const todo = plan(data);
  if (tlsPlanIsEmpty(todo)) return;
  for (const { pod, podIP, reason } of todo.issue) {
    ctx.log.info({ pod, podIP, reason }, 'issuing a pgBackRest certificate into the shared Secret (an older agent)');
  }
  if (todo.prune.length > 0) ctx.log.info({ keys: todo.prune }, 'dropping shared pgBackRest certificates no Pod uses');
  const issued = await issueShared(cluster, todo, ca);
  await ctx.apply(secret(cluster, name, nextTlsData(data, todo, ca.caCertPem, issued)));
}

/** Issues what the plan names for the published keys and writes each on its Pod (never a Secret). */
async function certifyKeys(
  cluster: PostgresCluster,
  ctx: Context,
  ca: { caCertPem: string; caKeyPem: string },
  participants: readonly KeyPod[],
) {
  const clusterName = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const planFor = (pods: readonly KeyPod[]) =>
    planKeyCertificates({ cluster: clusterName, caCertPem: ca.caCertPem, pods });
  const plan = planFor(participants);
  for (const { pod, reason } of plan.refused) ctx.log.warn({ pod, reason }, 'cannot certify the pgBackRest key');
  const client = ctx.client.resource<Pod & KubeObject>('v1', 'Pod');
  for (const { pod } of plan.issue) {
    // The cache may lag this controller's own last write: ask the Pod as the API server has it now,
    // so a certificate just written is not issued again (and the server not restarted for nothing).
    const live = await ignoreNotFound(client.get(pod, { namespace, signal: ctx.signal }));
    const still = live && planFor(tlsPods([live])).issue[0];
    if (!still) continue;
    ctx.log.info({ pod, podIP: still.podIP, reason: still.reason }, 'issuing a pgBackRest certificate');
    const certPem = await certifyPublicKey({
      publicKeyPem: still.publicKeyPem,
      ipAddresses: [still.podIP],
      commonName: pgbackrestClientName(clusterName),
      clientAuth: true,
      ca,
      validityDays: CERTIFICATE_DAYS,
    });
    const annotations = { [ANNOTATION_PGBACKREST_CERTIFICATE]: `${certPem.trimEnd()}\n${ca.caCertPem.trimEnd()}\n` };
    await ignoreNotFound(
      client.patch(pod, { metadata: { annotations } }, { namespace, type: 'merge', signal: ctx.signal }),
    );
  }
}

/** Certificates with their keys for the shared Secret, for Pods whose agent reads only that. */
async function issueShared(cluster: PostgresCluster, plan: TlsPlan, ca: { caCertPem: string; caKeyPem: string }) {
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
