/**
 * Issue 37, finding 10: no two clusters' generated names meet, for any kind. Every name is
 * `<cluster>-<suffix>`, so clusters `c` and `c-t` collide exactly when one pattern's suffix is
 * `t-` + another's. This test does not trust an argument about the suffixes: it builds names for
 * a cluster, takes every hyphen-prefix of each as another cluster's name and every hyphen-tail as
 * a user or set name (three rounds), drops what admission refuses (api/postgres-cluster.ts), and
 * checks that no name of a kind is made twice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RESERVED_CLUSTER_NAME_PATTERN } from '../api/postgres-cluster.js';
import { names } from './names.js';

type Param = 'user' | 'set' | 'ordinal' | 'repo';
/** How each name is made: its kind, and the parameters after the cluster's name. */
type Pattern =
  | { readonly kind: string; readonly params?: readonly Param[]; readonly ofPod?: true; readonly skip?: never }
  | { readonly skip: string };

/** Every entry of `names` must be here (a new one is a compile error until it says its kind). */
const PATTERNS = {
  primaryService: { kind: 'Service' },
  replicasService: { kind: 'Service' },
  podsService: { kind: 'Service' },
  superuserSecret: { kind: 'Secret' },
  replicationSecret: { kind: 'Secret' },
  userSecret: { kind: 'Secret', params: ['user'] },
  config: { kind: 'ConfigMap' },
  leaderLease: { kind: 'Lease' },
  instanceServiceAccount: { kind: 'ServiceAccount, Role, RoleBinding' },
  pdb: { kind: 'PodDisruptionBudget' },
  networkPolicy: { kind: 'NetworkPolicy' },
  cloneSourcePolicy: { kind: 'NetworkPolicy' },
  pod: { kind: 'Pod', params: ['set', 'ordinal'] },
  pvc: { kind: 'PersistentVolumeClaim', params: ['set', 'ordinal'], ofPod: true },
  repoHost: { kind: 'Pod' },
  // The same kinds as instanceServiceAccount: a repo host's account must meet no instance account.
  repoHostServiceAccount: { kind: 'ServiceAccount, Role, RoleBinding' },
  repoVolume: { kind: 'PersistentVolumeClaim', params: ['repo'] },
  pgbackrestTls: { kind: 'Secret' },
  pgbackrestCa: { kind: 'Secret' },
  pgbackrestSourceTls: { kind: 'Secret' },
  postgresTls: { kind: 'Secret' },
  postgresCa: { kind: 'Secret' },
  legacyPostgresCa: { skip: 'an old name, moved from on the first reconcile' },
  clientCa: { kind: 'ConfigMap' },
  slot: { skip: "a replication slot, inside one cluster's postgres" },
} as const satisfies Record<keyof typeof names, Pattern>;

/** What admission lets through, as api/postgres-cluster.ts has it. */
const ADMITTED = {
  cluster: (c: string) =>
    /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(c) && c.length <= 54 && !new RegExp(RESERVED_CLUSTER_NAME_PATTERN).test(c),
  user: (u: string) => /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(u) && !['postgres', 'streaming_replica'].includes(u),
  // A new set's name has no '-' (the rule with optionalOldSelf).
  set: (s: string) => /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/.test(s) && !s.includes('-'),
};

interface Made {
  readonly kind: string;
  readonly name: string;
  readonly by: string;
  readonly cluster: string;
}

function make(clusters: Iterable<string>, samples: Record<Param, Set<string>>): Made[] {
  const made: Made[] = [];
  const call = (fn: (...args: never[]) => string, args: unknown[]) => (fn as (...a: unknown[]) => string)(...args);
  for (const cluster of clusters) {
    for (const [key, pattern] of Object.entries(PATTERNS as Record<string, Pattern>)) {
      if ('skip' in pattern) continue;
      const fn = names[key as keyof typeof names] as (...args: never[]) => string;
      let assignments: string[][] = [[]];
      for (const param of pattern.params ?? [])
        assignments = assignments.flatMap((a) => [...samples[param]].map((v) => [...a, v]));
      for (const args of assignments) {
        const name = pattern.ofPod
          ? call(fn, [names.pod(cluster, args[0] ?? '', Number(args[1]))])
          : call(fn, [cluster, ...args.map((a, i) => (pattern.params?.[i] === 'ordinal' ? Number(a) : a))]);
        made.push({ kind: pattern.kind, name, by: `${key}(${[cluster, ...args].join(', ')})`, cluster });
      }
    }
  }
  return made;
}

/** Every (kind, name) made more than once, with what made it. */
function collisions(made: readonly Made[]): string[] {
  const byName = new Map<string, Made>();
  const found: string[] = [];
  for (const m of made) {
    const key = `${m.kind}/${m.name}`;
    const first = byName.get(key);
    if (!first) byName.set(key, m);
    else if (first.by !== m.by) found.push(`${m.kind} ${m.name}: ${first.by} and ${m.by}`);
  }
  return [...new Set(found)];
}

describe('generated names', () => {
  it('never meet across clusters or within one, for any kind, for every cluster, user and set name admission lets through', () => {
    const samples: Record<Param, Set<string>> = {
      user: new Set(['app', 'b', 'b-superuser']),
      set: new Set(['i', 'instance1', '0']),
      ordinal: new Set(['0', '1', '10']),
      repo: new Set(['repo1', 'repo2', 'repo3', 'repo4']),
    };
    const clusters = new Set(['a']);
    const refused = new Set<string>();
    // Names are built the same way for every cluster, so every collision has a twin between `a`
    // and a longer cluster: longer clusters come from a's names only; names and tails from all.
    for (let round = 0; round < 3; round++) {
      for (const { name, cluster } of make(clusters, samples)) {
        for (let i = cluster.length + 1; i < name.length; i++) {
          if (name[i] !== '-') continue;
          const other = name.slice(0, i);
          if (cluster === 'a') (ADMITTED.cluster(other) ? clusters : refused).add(other);
          const rest = name.slice(i + 1).split('-');
          for (let j = 0; j < rest.length; j++) {
            const tail = rest.slice(j).join('-');
            if (ADMITTED.user(tail)) samples.user.add(tail);
            if (ADMITTED.set(tail)) samples.set.add(tail);
          }
        }
      }
    }
    const made = make(clusters, samples);
    // The test explores what it should: the clusters of the examples are among those it
    // tried, and those admission refuses were found (and left out) too.
    assert.ok(clusters.has('a-pgbackrest'), 'cluster a-pgbackrest, whose CA once was a-pgbackrest-ca');
    assert.ok(refused.has('a-pguser-b'), 'cluster a-pguser-b, refused at admission');
    assert.ok(samples.user.has('b-superuser') && samples.set.has('instance1'));
    assert.ok(made.length > 1_000, `${made.length} names`);
    assert.deepEqual(collisions(made).slice(0, 10), []);
  });

  it('see the collisions the rules prevent (the check would catch one)', () => {
    const seen = collisions([
      ...make(['a'], {
        user: new Set(['b-superuser']),
        set: new Set(['b-c']),
        ordinal: new Set(['0']),
        repo: new Set(),
      }),
      ...make(['a-pguser-b', 'a-b'], {
        user: new Set(),
        set: new Set(['c']),
        ordinal: new Set(['0']),
        repo: new Set(),
      }),
    ]);
    assert.ok(
      seen.some((c) => c.startsWith('Secret a-pguser-b-superuser:')),
      seen.join('\n'),
    );
    assert.ok(
      seen.some((c) => c.startsWith('Pod a-b-c-0:')),
      seen.join('\n'),
    );
  });
});
