/**
 * Issue 37, finding 10: the names that would make two clusters' generated names meet are refused at
 * admission, against a real API server: a cluster named `<x>-pguser[-…]` (its Secrets would be
 * cluster x's users'), and a new instance set whose name holds '-' (its Pods would be another
 * cluster's). A cluster admitted before these rules keeps working: its name and its sets stay.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InvalidError, type KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import { type PostgresCluster, PostgresClusterResource } from '../src/index.js';
import { type AdmissionEnv, startAdmissionEnv } from './support/admission-env.js';

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const manifest = (name: string, sets: string[]) =>
  ({
    apiVersion: PostgresClusterResource.apiVersion,
    kind: 'PostgresCluster',
    metadata: { name, namespace: 'default' },
    spec: { postgresVersion: 15, instances: sets.map((set) => ({ name: set, dataVolumeClaimSpec: volume })) },
  }) as PostgresCluster;

/** The CRD as it was before these rules (41a51bf): neither is in it. */
function crdWithoutNameRules(): KubeObject {
  const crd = structuredClone(PostgresClusterResource.crd) as unknown as {
    spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] };
  };
  const strip = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    const rules = record['x-kubernetes-validations'];
    if (Array.isArray(rules))
      record['x-kubernetes-validations'] = rules.filter(
        (r: { rule: string }) => !r.rule.includes('pguser') && !r.rule.includes("contains('-')"),
      );
    for (const value of Object.values(record)) strip(value);
  };
  for (const version of crd.spec.versions) strip(version.schema.openAPIV3Schema);
  return crd as unknown as KubeObject;
}

describe('names that would meet another cluster’s, at admission', () => {
  let env: AdmissionEnv;
  const clusters = () => env.client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
  const refusal = (write: () => Promise<unknown>) =>
    write().then(
      () => 'admitted',
      (e: unknown) => (e instanceof InvalidError ? e.message : `not refused as invalid: ${e}`),
    );

  before(async () => {
    // Clusters made under the old rules first, then the CRD of this version over them.
    env = await startAdmissionEnv([{ ...PostgresClusterResource, crd: crdWithoutNameRules() }]);
    await clusters().create(manifest('old-pguser-b', ['i']));
    await clusters().create(manifest('old', ['b-c']));
    await env.client
      .resourceFor(PostgresClusterResource.crd as unknown as KubeObject)
      .apply(PostgresClusterResource.crd as unknown as KubeObject, { fieldManager: 'test', force: true });
    await waitFor(
      'the CRD with the name rules to be in force',
      async () =>
        (await refusal(() => clusters().create(manifest('x-pguser-y', ['i']), { dryRun: true }))) === 'admitted'
          ? undefined
          : true,
      30_000,
      250,
    );
  });
  after(async () => {
    await env?.stop();
  });

  it('refuses a cluster named <x>-pguser or <x>-pguser-…, saying whose Secrets it would share; admits look-alikes', async () => {
    for (const name of ['a-pguser-b', 'a-pguser', 'a-pguser-b-c'])
      assert.match(
        await refusal(() => clusters().create(manifest(name, ['i']), { dryRun: true })),
        /metadata\.name must not contain '-pguser-' nor end in '-pguser': user u of cluster x has the Secret x-pguser-u/,
        name,
      );
    for (const name of ['a-pgusers', 'pguser-a', 'a-xpguser-b'])
      assert.equal(await refusal(() => clusters().create(manifest(name, ['i']), { dryRun: true })), 'admitted', name);
  });

  it("refuses a new instance set whose name holds '-', naming the field and why", async () => {
    assert.match(
      await refusal(() => clusters().create(manifest('a', ['b-c']), { dryRun: true })),
      /spec\.instances: .*the name of a new instance set must not contain '-': Pods are <cluster>-<set>-<n>/,
    );
    assert.equal(
      await refusal(() => clusters().create(manifest('a', ['bc', 'instance2']), { dryRun: true })),
      'admitted',
    );
  });

  it('lets a cluster admitted before keep its name and its sets, and refuses it a new set with a hyphen', async () => {
    const scale = (name: string, sets: { name: string; replicas: number }[]) =>
      refusal(() =>
        clusters().patch(
          name,
          { spec: { instances: sets.map((s) => ({ ...s, dataVolumeClaimSpec: volume })) } },
          { namespace: 'default', type: 'merge' },
        ),
      );
    assert.equal(await scale('old-pguser-b', [{ name: 'i', replicas: 2 }]), 'admitted');
    assert.equal(await scale('old', [{ name: 'b-c', replicas: 2 }]), 'admitted');
    assert.equal(
      await scale('old', [
        { name: 'b-c', replicas: 2 },
        { name: 'd', replicas: 1 },
      ]),
      'admitted',
    );
    assert.match(
      await scale('old', [
        { name: 'b-c', replicas: 2 },
        { name: 'e-f', replicas: 1 },
      ]),
      /the name of a new instance set must not contain '-'/,
    );
  });
});
