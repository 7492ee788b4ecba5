/**
 * Reads the Secrets a cluster's spec names and decides which it may use (secret-consent.ts); says
 * which it may not in the `SecretsRefused` condition and a Warning Event. The operator's cache
 * holds only Kanri's labelled Secrets, so the others are read from the API server, at each
 * reconcile (their annotations are not watched).
 */
import { ignoreNotFound } from '@kanri/client';
import type { ReconcileContext } from '@kanri/runtime';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { reportProblem } from './problem-condition.js';
import {
  planSecretConsent,
  type RefusedSecret,
  SECRETS_REFUSED_CONDITION,
  secretConsentProblem,
  secretReferences,
  withConsentedSecrets,
} from './secret-consent.js';
import type { StepOutcome } from './step-outcome.js';

type Context = ReconcileContext<PostgresCluster>;

export interface SecretConsent {
  /** The cluster as its Pods are built from it (withConsentedSecrets). */
  readonly cluster: PostgresCluster;
  readonly allowed: ReadonlySet<string>;
  readonly refused: readonly RefusedSecret[];
}

/** `name` in the cluster's namespace: the cache, else the API server. */
async function readSecret(ctx: Context, cluster: PostgresCluster, name: string): Promise<Secret | undefined> {
  const namespace = cluster.metadata?.namespace;
  return (
    ctx.get<Secret>('v1', 'Secret', name, namespace) ??
    ignoreNotFound(ctx.client.resource<Secret>('v1', 'Secret').get(name, { namespace, signal: ctx.signal }))
  );
}

/**
 * @example
 * ```ts
 * const consent = await reconcileSecretConsent(declared, ctx);
 * const cluster = consent.cluster; // what Pods are built from
 * ```
 */
export async function reconcileSecretConsent(cluster: PostgresCluster, ctx: Context): Promise<SecretConsent> {
  // A clone's first Pod mounts its source's configuration: only until the clone is initialised.
  const sourceName = cluster.status?.systemIdentifier
    ? undefined
    : cluster.spec.dataSource?.postgresCluster?.clusterName;
  const source = sourceName
    ? await ignoreNotFound(ctx.resource.get(sourceName, { namespace: cluster.metadata?.namespace, signal: ctx.signal }))
    : undefined;
  const references = secretReferences(cluster, source);
  const found = new Map<string, Secret | undefined>();
  for (const { secret } of references)
    if (!found.has(secret)) found.set(secret, await readSecret(ctx, cluster, secret));
  const { allowed, refused } = planSecretConsent(cluster, references, found);
  return { cluster: withConsentedSecrets(cluster, allowed), allowed, refused };
}

/**
 * The Secret `name` (one `spec.tls` names) when it lets the cluster use it; undefined otherwise,
 * as if it did not exist, so the cluster keeps what it serves.
 *
 * @example
 * ```ts
 * const secret = await readConsentedSecret(ctx, cluster, cluster.spec.tls.serverSecret);
 * ```
 */
export async function readConsentedSecret(
  ctx: Context,
  cluster: PostgresCluster,
  name: string,
): Promise<Secret | undefined> {
  const secret = await readSecret(ctx, cluster, name);
  return secretConsentProblem(name, secret, cluster) === undefined ? secret : undefined;
}

/** The `SecretsRefused` condition (or its removal), with a Warning Event when what it says changes. */
export async function reportSecretConsent(
  cluster: PostgresCluster,
  ctx: Context,
  refused: readonly RefusedSecret[],
): Promise<StepOutcome> {
  const message = `${refused.map((r) => `${r.field}: ${r.why}`).join('; ')}. It is not used, nor mounted into any Pod, and rolling updates wait until it is allowed or the field changes`;
  const change = await reportProblem(
    cluster,
    ctx,
    SECRETS_REFUSED_CONDITION,
    refused.length > 0 ? { reason: 'SecretNotAllowed', message, eventReason: 'SecretRefused' } : undefined,
  );
  return { conditions: [change] };
}
