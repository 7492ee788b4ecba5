/**
 * The read grants a clone holds on its source's repo host (contract/clone-gateway.ts): while the
 * clone restores, one per clone Pod that published its pgBackRest key, a certificate from the
 * source's CA for that key, short-lived and renewed while the restore lasts; none once the clone
 * has restored. The source decides them all (planSourceGrants): it writes them on its own repo
 * host, for the clones that name it, and drops those of clusters that are gone, no longer name it,
 * have restored, or whose certificate ended. Pure: the caller reads the Pods, certifies what this
 * names, and writes it.
 */
import { X509Certificate } from 'node:crypto';
import { CLONE_COMMON_NAME, type CloneGrant } from '../../contract/index.js';
import { certifiableKey } from './key-certificate-plan.js';

/** A grant's validity: a restore that lasts longer has it renewed, one that ends has it removed. */
export const CLONE_GRANT_HOURS = 1;
/** Renewed once less than this remains (a third). */
const RENEW_BEFORE_MS = (CLONE_GRANT_HOURS * 3_600_000) / 3;

/** A Pod of the clone, as this plan reads it. */
export interface ClonePod {
  readonly name: string;
  readonly deleting: boolean;
  /** The key its agent published (ANNOTATION_PGBACKREST_KEY). */
  readonly publicKeyPem?: string;
}

export interface CloneGrantInput {
  /** The clone PostgresCluster. */
  readonly clone: string;
  /** Whether it still restores (not initialised): it holds grants only then. */
  readonly restoring: boolean;
  readonly pods: readonly ClonePod[];
  /** The grants on the source's repo host, by clone Pod (every clone's). */
  readonly grants: ReadonlyMap<string, CloneGrant>;
  /** The source's pgBackRest CA certificate. */
  readonly caCertPem: string;
  readonly now?: Date;
}

export interface CloneGrantPlan {
  readonly issue: readonly { readonly pod: string; readonly publicKeyPem: string; readonly reason: string }[];
  /** This clone's grants to remove (its Pod is gone, or the clone restored). */
  readonly remove: readonly string[];
}

/** Why `grant` must be (re)issued for `publicKeyPem`, or undefined when it holds. */
function grantProblem(grant: CloneGrant | undefined, input: CloneGrantInput, publicKeyPem: string, now: Date) {
  if (!grant) return 'no grant yet';
  try {
    const cert = new X509Certificate(grant.certificate);
    if (!cert.verify(new X509Certificate(input.caCertPem).publicKey)) return "not issued by the source's current CA";
    if (cert.subject !== `CN=${CLONE_COMMON_NAME}`) return `its subject is ${cert.subject}`;
    const key = certifiableKey(publicKeyPem);
    if (typeof key === 'string' || !cert.publicKey.equals(key)) return 'the Pod has a new key';
    if (Date.parse(cert.validTo) - now.getTime() < RENEW_BEFORE_MS) return `it ends ${cert.validTo}`;
  } catch {
    return 'unreadable';
  }
  return undefined;
}

/**
 * @example
 * ```ts
 * planCloneGrants({ clone: 'copy', restoring: true, pods, grants: readCloneGrants(repoHost.metadata?.annotations), caCertPem });
 * // { issue: [{ pod: 'copy-i-0', publicKeyPem, reason: 'no grant yet' }], remove: [] }
 * ```
 */
export function planCloneGrants(input: CloneGrantInput): CloneGrantPlan {
  const now = input.now ?? new Date();
  const mine = [...input.grants].filter(([, grant]) => grant.cluster === input.clone).map(([pod]) => pod);
  if (!input.restoring) return { issue: [], remove: mine };
  const live = input.pods.filter(
    (p) => !p.deleting && p.publicKeyPem && typeof certifiableKey(p.publicKeyPem) !== 'string',
  );
  const issue = live.flatMap((pod) => {
    const grant = input.grants.get(pod.name);
    // A Pod of another clone of the same name is not this clone's to take over.
    if (grant && grant.cluster !== input.clone) return [];
    const reason = grantProblem(grant, input, pod.publicKeyPem ?? '', now);
    return reason ? [{ pod: pod.name, publicKeyPem: pod.publicKeyPem ?? '', reason }] : [];
  });
  const remove = mine.filter((pod) => !live.some((p) => p.name === pod));
  return { issue, remove };
}

/** A cluster that names the source in `spec.dataSource.postgresCluster`, as the source reads it. */
export interface CloneOfSource {
  readonly clone: string;
  /** It reads a volume repo of the source, is not being deleted, and none of its instances has restored. */
  readonly restoring: boolean;
  readonly pods: readonly ClonePod[];
}

/**
 * The source's plan for every grant on its repo host: what each clone that names it needs
 * ({@link planCloneGrants}), and the removal of any other grant that no longer holds
 * ({@link staleCloneGrants}: a cluster gone, no longer naming it, restored, or a grant ended and
 * not renewed here).
 *
 * @example
 * ```ts
 * planSourceGrants({ grants: readCloneGrants(repoHost.metadata?.annotations), clones, caCertPem });
 * // { issue: [{ pod: 'copy-i-0', publicKeyPem, reason: 'no grant yet' }], remove: ['gone-i-0'] }
 * ```
 */
export function planSourceGrants(input: {
  readonly grants: ReadonlyMap<string, CloneGrant>;
  readonly clones: readonly CloneOfSource[];
  readonly caCertPem: string;
  readonly now?: Date;
}): CloneGrantPlan {
  const now = input.now ?? new Date();
  const issue: CloneGrantPlan['issue'][number][] = [];
  const remove = new Set(
    staleCloneGrants(input.grants, new Map(input.clones.map((c) => [c.clone, { restoring: c.restoring }])), now),
  );
  for (const { clone, restoring, pods } of input.clones) {
    const plan = planCloneGrants({ clone, restoring, pods, grants: input.grants, caCertPem: input.caCertPem, now });
    issue.push(...plan.issue);
    for (const pod of plan.remove) remove.add(pod);
  }
  // An ended grant renewed in the same write is replaced, not removed.
  return { issue, remove: [...remove].filter((pod) => !issue.some((i) => i.pod === pod)) };
}

/**
 * The grants on a repo host that no longer hold, from the source's side: their clone is gone or
 * has restored, or their certificate ended.
 *
 * @example
 * ```ts
 * staleCloneGrants(grants, new Map([['copy', { restoring: false }]])); // ['copy-i-0']
 * ```
 */
export function staleCloneGrants(
  grants: ReadonlyMap<string, CloneGrant>,
  clusters: ReadonlyMap<string, { readonly restoring: boolean }>,
  now: Date = new Date(),
): string[] {
  return [...grants]
    .filter(([, grant]) => {
      if (!clusters.get(grant.cluster)?.restoring) return true;
      try {
        return Date.parse(new X509Certificate(grant.certificate).validTo) <= now.getTime();
      } catch {
        return true;
      }
    })
    .map(([pod]) => pod);
}
