/**
 * Keeps a cluster's PostgreSQL TLS Secret (contract/postgres-tls.ts) complete and current: the CA
 * in names.postgresCa (created once, read by the operator only), the server certificate (issued
 * for the Service names, or copied from spec.tls.serverSecret), and the replication user's client
 * certificate (or copied from spec.tls.replicationSecret); and, from the same CA, each agent's
 * own peer certificate, on its Pod (peer-certificates.ts); and the ConfigMap names.clientCa that
 * hands clients the server's CA alone. Renewed 30 days before expiry; the agents reload postgres
 * when the Secret changes.
 * Key material never reaches a log or an event.
 */
import { type CertificateAuthority, createServingCertificate, type ReconcileContext } from '@kanri/runtime';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  memberServerName,
  names,
  POSTGRES_TLS_KEY,
  postgresServerDnsNames,
  REPLICATION_CERT_COMMON_NAME,
} from '../../contract/index.js';
import { clientCaConfigMap } from '../builders/client-ca.js';
import { isMissing } from '../create-if-missing.js';
import { readConsentedSecret } from '../secret-consent-actions.js';
import type { StepOutcome } from '../step-outcome.js';
import { clusterSecret, ensureCertificateAuthority, liveSecret } from './certificate-authority.js';
import { decodeSecretData } from './certificate-checks.js';
import { certificateLifetime } from './certificate-lifetime.js';
import { certifyPeers } from './peer-certificates.js';
import {
  type IssuedPair,
  nextPostgresTlsData,
  planPostgresTls,
  postgresTlsPlanIsEmpty,
  postgresTlsRenewalDueInMs,
} from './postgres-tls-plan.js';

/** Read once: a bad value stops the operator at its start, naming the variable. */
const lifetime = certificateLifetime(process.env);

type Context = ReconcileContext<PostgresCluster>;

/** What reconciling the TLS material found; reconcilePostgresTls turns it into the step's outcome. */
interface PostgresTlsOutcome {
  /** What is wrong with the user's server Secret, if anything. */
  readonly problem?: string;
  /** When an issued certificate is due for renewal: reconcile again no later than this. */
  readonly renewInMs?: number;
  /** The CA's and TLS Secrets that did not exist when this pass began (deleted): it created them anew. */
  readonly missing?: readonly string[];
}

/**
 * Brings names.postgresTls and the instances' peer certificates up to date; warns (log and
 * Event) of what is wrong with the user's Secrets, asks to look again just after the next renewal
 * is due, and says which of the CA's and TLS Secrets it had to create anew (`missing`).
 *
 * @example
 * ```ts
 * const tls = await reconcilePostgresTls(cluster, ctx, instancePods);
 * if (tls.missing) ctx.log.warn({ objects: tls.missing }, 'created anew');
 * ```
 */
export async function reconcilePostgresTls(
  cluster: PostgresCluster,
  ctx: Context,
  instancePods: readonly Pod[],
): Promise<StepOutcome & { readonly missing?: readonly string[] }> {
  const { problem, renewInMs, missing } = await reconcileTlsMaterial(cluster, ctx, instancePods);
  if (problem) {
    ctx.log.warn({ problem }, 'cannot use a TLS Secret of the spec; keeping what is served');
    await ctx.event('Warning', 'TLSSecretInvalid', problem);
  }
  return {
    // A moment after the renewal is due, so the certificate is inside its window by then.
    ...(renewInMs !== undefined ? { requeueAfterMs: renewInMs + 1_000 } : {}),
    ...(missing ? { missing } : {}),
  };
}

async function reconcileTlsMaterial(
  cluster: PostgresCluster,
  ctx: Context,
  instancePods: readonly Pod[],
): Promise<PostgresTlsOutcome> {
  const secretOutcome = await reconcileTlsSecret(cluster, ctx);
  const ca = secretOutcome.ca;
  if (!ca) return secretOutcome;
  const serverCa = secretOutcome.data?.[POSTGRES_TLS_KEY.serverCa];
  if (serverCa) await ctx.apply(clientCaConfigMap(cluster, serverCa));
  const peers = await certifyPeers({
    client: ctx.client,
    namespace: cluster.metadata?.namespace ?? '',
    cluster: cluster.metadata?.name ?? '',
    ca,
    pods: instancePods,
    lifetime,
    signal: ctx.signal,
    onIssued: (pod, reason) => ctx.log.info({ pod, reason }, "issuing the instance's peer certificate"),
  });
  for (const { pod, reason } of peers.refused)
    ctx.log.warn({ pod, reason }, 'not certifying the peer key this instance reports');
  const renewals = [secretOutcome.renewInMs, peers.renewInMs].filter((ms) => ms !== undefined);
  return {
    ...(secretOutcome.problem ? { problem: secretOutcome.problem } : {}),
    ...(renewals.length > 0 ? { renewInMs: Math.min(...renewals) } : {}),
    ...(secretOutcome.missing ? { missing: secretOutcome.missing } : {}),
  };
}

async function reconcileTlsSecret(
  cluster: PostgresCluster,
  ctx: Context,
): Promise<PostgresTlsOutcome & { ca?: CertificateAuthority; data?: Record<string, string> }> {
  const clusterName = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace ?? '';
  const caName = names.postgresCa(clusterName);
  // A CA still under its old name (names.legacyPostgresCa) is moved, not re-created.
  const caMissing =
    (await isMissing(ctx, 'Secret', caName, namespace)) &&
    (await isMissing(ctx, 'Secret', names.legacyPostgresCa(clusterName), namespace));
  const ca = await ensureCertificateAuthority(cluster, ctx, {
    secretName: caName,
    legacySecretName: names.legacyPostgresCa(clusterName),
    commonName: `${clusterName}-ca`,
    purpose: 'PostgreSQL',
    replacedReason: 'PostgresCAReplaced',
  });
  if (!ca) return {};
  const secretName = names.postgresTls(clusterName);
  const done = (o: PostgresTlsOutcome, data: Record<string, string>, secretMissing = false) => {
    const missing = [...(caMissing ? [caName] : []), ...(secretMissing ? [secretName] : [])];
    return { ...o, ca, data, ...(missing.length > 0 ? { missing } : {}) };
  };
  const userSecretName = cluster.spec.tls?.serverSecret;
  const userReplicationName = cluster.spec.tls?.replicationSecret;
  // The user's Secrets carry no cluster label, so the filtered cache never holds them: read them live.
  const userSecret = userSecretName
    ? { name: userSecretName, data: await readUserSecret(ctx, cluster, userSecretName) }
    : undefined;
  const userReplicationSecret = userReplicationName
    ? { name: userReplicationName, data: await readUserSecret(ctx, cluster, userReplicationName) }
    : undefined;
  const plan = (data: Record<string, string>) =>
    planPostgresTls({
      cluster: clusterName,
      caCertPem: ca.caCertPem,
      data,
      dnsNames: postgresServerDnsNames(clusterName, namespace),
      memberServerName: memberServerName(clusterName, namespace),
      renewBeforeDays: lifetime.renewBeforeDays,
      ...(userSecret ? { userSecret } : {}),
      ...(userReplicationSecret ? { userReplicationSecret } : {}),
    });
  const outcome = (
    plan: { userSecretProblem?: string; userReplicationSecretProblem?: string },
    data: Record<string, string>,
  ): PostgresTlsOutcome => {
    const renewInMs = postgresTlsRenewalDueInMs(data, ca.caCertPem, lifetime);
    const problems = [plan.userSecretProblem, plan.userReplicationSecretProblem].filter(Boolean);
    return {
      ...(problems.length > 0 ? { problem: problems.join('; ') } : {}),
      ...(renewInMs !== undefined ? { renewInMs } : {}),
    };
  };
  const cachedData = decodeSecretData(ctx.get<Secret>('v1', 'Secret', secretName, namespace)?.data);
  const cached = plan(cachedData);
  if (postgresTlsPlanIsEmpty(cached)) return done(outcome(cached, cachedData), cachedData);
  // Change only what the API server holds: a cache that lags this controller's last write would
  // reissue a certificate the agents may already serve.
  const live = await liveSecret(ctx, secretName, namespace);
  const data = decodeSecretData(live?.data);
  const todo = plan(data);
  if (postgresTlsPlanIsEmpty(todo)) return done(outcome(todo, data), data);
  const issue = (request: { dnsNames: string[]; commonName: string; clientAuth?: boolean }): Promise<IssuedPair> =>
    createServingCertificate({ ...request, ca, validityDays: lifetime.validityDays });
  if (todo.issueServer) ctx.log.info({ reason: todo.issueServer }, 'issuing the PostgreSQL server certificate');
  if (todo.copyServer) ctx.log.info({ secret: userSecretName }, "serving the certificate of the spec's TLS Secret");
  if (todo.copyReplication)
    ctx.log.info({ secret: userReplicationName }, "replicating with the certificate of the spec's replication Secret");
  if (todo.issueReplication)
    ctx.log.info({ reason: todo.issueReplication }, "issuing the replication user's client certificate");
  const dnsNames = postgresServerDnsNames(clusterName, namespace);
  const [server, replication] = await Promise.all([
    todo.issueServer ? issue({ dnsNames, commonName: names.primaryService(clusterName) }) : undefined,
    todo.issueReplication
      ? issue({ dnsNames: [`${clusterName}-replication`], commonName: REPLICATION_CERT_COMMON_NAME, clientAuth: true })
      : undefined,
  ]);
  const next = nextPostgresTlsData(data, todo, ca.caCertPem, {
    ...(server ? { server } : {}),
    ...(replication ? { replication } : {}),
  });
  await ctx.apply(clusterSecret(cluster, secretName, next));
  return done(outcome(todo, next), next, live === undefined);
}

/** A Secret that does not let the cluster use it counts as absent (issue 37, finding 11). */
async function readUserSecret(ctx: Context, cluster: PostgresCluster, name: string) {
  const secret = await readConsentedSecret(ctx, cluster, name);
  return secret ? decodeSecretData(secret.data) : undefined;
}
