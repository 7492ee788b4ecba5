import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { instancePod } from './builders/instance-pod.js';
import { repoHostPod } from './builders/repo-host.js';
import {
  ALLOWED_CLUSTERS_ANNOTATION,
  consentedProjections,
  dataSourceRefusal,
  planSecretConsent,
  secretConsentProblem,
  secretReferences,
  withConsentedSecrets,
} from './secret-consent.js';

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const cluster = {
  apiVersion: 'postgres.kanri.dev/v1',
  kind: 'PostgresCluster',
  metadata: { name: 'hippo', namespace: 'db', uid: 'uid-hippo' },
  spec: {
    postgresVersion: 15,
    instances: [{ name: 'i', replicas: 1, dataVolumeClaimSpec: volume }],
    tls: { serverSecret: 'corp-tls', replicationSecret: 'corp-repl' },
    backups: {
      pgbackrest: {
        configuration: [
          { secret: { name: 's3-creds' } },
          { configMap: { name: 'tuning' } },
          { secret: { name: 'stolen' } },
        ],
        repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }],
      },
    },
  },
} as unknown as PostgresCluster;
const annotated = (value: string) => ({ metadata: { annotations: { [ALLOWED_CLUSTERS_ANNOTATION]: value } } });

describe('which Secrets a cluster may use', () => {
  it('finds every field that names a Secret, its clone source’s configuration included', () => {
    const source = {
      metadata: { name: 'old' },
      spec: { backups: { pgbackrest: { configuration: [{ secret: { name: 'old-s3' } }] } } },
    } as unknown as PostgresCluster;
    const clone = {
      ...cluster,
      spec: {
        ...cluster.spec,
        dataSource: { pgbackrest: { configuration: [{ secret: { name: 'src-s3' } }] }, postgresCluster: {} },
      },
    } as unknown as PostgresCluster;
    assert.deepEqual(
      secretReferences(clone, source).map((r) => `${r.field} → ${r.secret}`),
      [
        'spec.tls.serverSecret → corp-tls',
        'spec.tls.replicationSecret → corp-repl',
        'spec.backups.pgbackrest.configuration[0].secret → s3-creds',
        'spec.backups.pgbackrest.configuration[2].secret → stolen',
        'spec.dataSource.pgbackrest.configuration[0].secret → src-s3',
        "spec.dataSource.postgresCluster (PostgresCluster old's spec.backups.pgbackrest.configuration)[0].secret → old-s3",
      ],
    );
  });

  it('allows a Secret whose annotation names the cluster (or *), or that the cluster controls', () => {
    assert.equal(secretConsentProblem('s', annotated('other, hippo'), cluster), undefined);
    assert.equal(secretConsentProblem('s', annotated('*'), cluster), undefined);
    const own = {
      metadata: {
        ownerReferences: [
          { apiVersion: 'v1', kind: 'PostgresCluster', name: 'hippo', uid: 'uid-hippo', controller: true },
        ],
      },
    };
    assert.equal(secretConsentProblem('s', own, cluster), undefined);
  });

  it('refuses any other, saying how to opt in: none, another list, a look-alike name, a label alone, one missing', () => {
    const how = /annotate it postgres\.kanri\.dev\/allowed-clusters=hippo \(a comma-separated list/;
    for (const secret of [
      { metadata: {} },
      annotated('other'),
      annotated('hippo2,hippo-x'),
      { metadata: { labels: { 'postgres.kanri.dev/cluster': 'hippo' } } },
    ]) {
      const why = secretConsentProblem('s3-creds', secret, cluster) ?? '';
      assert.match(why, /^Secret s3-creds does not allow PostgresCluster hippo to use it: /);
      assert.match(why, how);
    }
    assert.match(
      secretConsentProblem('gone', undefined, cluster) ?? '',
      /^Secret gone does not exist: create it, and annotate it/,
    );
  });

  it('builds the Pods with allowed Secrets only, and the instance and repo host Pods mount no other', () => {
    const found = new Map<string, { metadata: object }>([
      ['corp-tls', annotated('hippo')],
      ['corp-repl', { metadata: {} }],
      ['s3-creds', annotated('hippo')],
      ['stolen', { metadata: {} }],
    ]);
    const { allowed, refused } = planSecretConsent(cluster, secretReferences(cluster), found);
    assert.deepEqual([...allowed].sort(), ['corp-tls', 's3-creds']);
    assert.deepEqual(
      refused.map((r) => `${r.field} ${r.secret}`),
      ['spec.tls.replicationSecret corp-repl', 'spec.backups.pgbackrest.configuration[2].secret stolen'],
    );
    const built = withConsentedSecrets(cluster, allowed);
    const mounted = (pod: { spec?: { volumes?: unknown[] } }) => JSON.stringify(pod.spec?.volumes);
    const pod = (c: PostgresCluster) =>
      instancePod({ cluster: c, name: 'hippo-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
    const instance = mounted(pod(built));
    assert.ok(instance.includes('s3-creds') && instance.includes('tuning'), instance);
    assert.ok(!instance.includes('stolen'), instance);
    assert.ok(!mounted(repoHostPod(built)).includes('stolen'));
    // Unfiltered, the builder would mount it: the filter is what keeps it out.
    assert.ok(mounted(pod(cluster)).includes('stolen'));
    assert.equal(
      built.spec.tls?.serverSecret,
      'corp-tls',
      'spec.tls stays: the TLS code reads only consenting Secrets',
    );
    assert.deepEqual(consentedProjections([{ secret: { name: 'stolen' } }, { configMap: { name: 'c' } }], allowed), [
      { configMap: { name: 'c' } },
    ]);
  });

  it("holds a clone's restore for a refused Secret of its data source, not for one of its own backups", () => {
    const refused = (field: string) => ({ field, secret: 's3', why: 'Secret s3 does not allow PostgresCluster hippo' });
    assert.equal(
      dataSourceRefusal([
        refused('spec.backups.pgbackrest.configuration'),
        refused('spec.dataSource.pgbackrest.configuration'),
      ]),
      'spec.dataSource.pgbackrest.configuration: Secret s3 does not allow PostgresCluster hippo',
    );
    assert.match(dataSourceRefusal([refused('spec.dataSource.postgresCluster (…)')]) ?? '', /^spec\.dataSource/);
    assert.equal(dataSourceRefusal([refused('spec.backups.pgbackrest.configuration')]), undefined);
    assert.equal(dataSourceRefusal([]), undefined);
  });
});
