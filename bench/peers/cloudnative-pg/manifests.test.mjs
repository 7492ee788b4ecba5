// CloudNativePG's manifest as installed here, and the Cluster every row creates.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { PEER_HA } from '../ha-timings.mjs';
import {
  BACKUP_PREFIX,
  backupManifest,
  clusterManifest,
  MANIFEST_FILE,
  MANIFEST_SHA256,
  OPERATOR_IMAGE,
  operatorManifest,
  POSTGRES_IMAGES,
  promotePatch,
  rfc3339Micro,
  S3_SECRET,
  toYamlStream,
} from './manifests.mjs';

const released = readFileSync(new URL(MANIFEST_FILE, import.meta.url), 'utf8');
const images = { operatorImage: OPERATOR_IMAGE, postgresImage: POSTGRES_IMAGES[0] };
const spec = { name: 'pg', namespace: 'bench', instances: 3, synchronous: false, storage: '1Gi' };
const nodes = { imageName: POSTGRES_IMAGES[0], instanceNodes: ['real-node-1', 'real-node-2', 'real-node-3'] };

describe('CloudNativePG manifest', () => {
  it('is the release pinned', () => {
    assert.equal(createHash('sha256').update(released).digest('hex'), MANIFEST_SHA256);
  });

  it('names the images built here, pulled only when absent, and changes nothing else', () => {
    const docs = operatorManifest(released, images);
    const before = operatorManifest(released, { operatorImage: 'x', postgresImage: 'y' });
    assert.equal(docs.length, before.length);
    const deployment = docs.find((d) => d.kind === 'Deployment');
    const [container] = deployment.spec.template.spec.containers;
    assert.equal(container.image, OPERATOR_IMAGE);
    assert.equal(container.imagePullPolicy, 'IfNotPresent');
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(env.OPERATOR_IMAGE_NAME, OPERATOR_IMAGE);
    assert.equal(env.POSTGRES_IMAGE_NAME, POSTGRES_IMAGES[0]);
    assert.deepEqual(env.OPERATOR_NAMESPACE, { fieldRef: { fieldPath: 'metadata.namespace' } });
    assert.equal(container.env.filter((e) => e.name === 'OPERATOR_IMAGE_NAME').length, 1);
    assert.deepEqual(container.args.slice(0, 2), ['controller', '--leader-elect']);
    const kinds = docs.map((d) => d.kind);
    assert.equal(kinds[0], 'Namespace', 'the namespace first, as released');
    assert.equal(kinds.filter((k) => k === 'CustomResourceDefinition').length, 11);
    const rest = docs.filter((d) => d.kind !== 'Deployment');
    const restBefore = before.filter((d) => d.kind !== 'Deployment');
    assert.deepEqual(rest, restBefore);
  });

  it('round-trips through YAML', async () => {
    const { parseAllDocuments } = await import('yaml');
    const docs = operatorManifest(released, images);
    const back = parseAllDocuments(toYamlStream(docs)).map((d) => d.toJS());
    assert.deepEqual(back, docs);
  });
});

describe('CloudNativePG Cluster', () => {
  it('asks for the instances, storage and image of the spec, kept off the gateway node', () => {
    const c = clusterManifest(spec, nodes);
    assert.equal(c.apiVersion, 'postgresql.cnpg.io/v1');
    assert.deepEqual(c.metadata, { name: 'pg', namespace: 'bench' });
    assert.equal(c.spec.instances, 3);
    assert.deepEqual(c.spec.storage, { size: '1Gi' });
    assert.equal(c.spec.imageName, POSTGRES_IMAGES[0]);
    assert.equal(c.spec.imagePullPolicy, 'IfNotPresent');
    assert.equal(c.spec.enableSuperuserAccess, true);
    assert.equal(c.spec.primaryUpdateMethod, 'switchover');
    assert.equal(c.spec.affinity.podAntiAffinityType, 'required');
    const [term] = c.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    assert.deepEqual(term.matchExpressions[0].values, nodes.instanceNodes);
    assert.equal(c.spec.postgresql, undefined, 'asynchronous: no synchronous section');
  });

  it("runs bench:peers' HA timings where CNPG has a setting", () => {
    const c = clusterManifest(spec, nodes);
    assert.equal(c.spec.failoverDelay, 0);
    assert.equal(c.spec.livenessProbeTimeout, PEER_HA.renewDeadlineSeconds, 'the renew deadline, as fencing');
    assert.equal(c.spec.probes.liveness.periodSeconds, PEER_HA.retryPeriodSeconds);
    assert.equal(c.spec.probes.readiness.periodSeconds, PEER_HA.retryPeriodSeconds);
    assert.equal(c.spec.stopDelay, 30, "the instance Pods' termination grace");
    assert.equal(c.spec.smartShutdownTimeout, 0, 'a fast shutdown at once, as Kanri stops postgres');
    assert.equal(c.spec.switchoverDelay, 30, 'fast, then immediate after 30 s');
  });

  it('has one synchronous standby of any replica when synchronous, commits waiting without one', () => {
    const c = clusterManifest({ ...spec, synchronous: true }, nodes);
    assert.deepEqual(c.spec.postgresql.synchronous, {
      method: 'any',
      number: 1,
      dataDurability: 'required',
      failoverQuorum: true,
    });
  });

  it("parses each operand tag as PostgreSQL 16.15, as CNPG's version.FromTag does", () => {
    for (const image of POSTGRES_IMAGES) assert.match(image.split(':').at(-1) ?? '', /^16\.15(-|$)/);
    assert.notEqual(POSTGRES_IMAGES[0], POSTGRES_IMAGES[1]);
  });
});

describe('switchover as `kubectl cnpg promote`', () => {
  const now = new Date('2026-12-06T23:00:01.234Z');
  const cluster = {
    metadata: { resourceVersion: '42' },
    status: {
      conditions: [
        { type: 'Ready', status: 'True', reason: 'ClusterIsReady', lastTransitionTime: '2026-12-06T22:00:00Z' },
        { type: 'ContinuousArchiving', status: 'True', lastTransitionTime: '2026-12-06T22:00:00Z' },
      ],
    },
  };

  it('sets the target primary, the phase and Ready False, under the resourceVersion read', () => {
    const patch = promotePatch(cluster, 'pg-2', now);
    assert.deepEqual(patch.metadata, { resourceVersion: '42' });
    assert.equal(patch.status.targetPrimary, 'pg-2');
    assert.equal(patch.status.targetPrimaryTimestamp, '2026-12-06T23:00:01.234000Z');
    assert.equal(patch.status.phase, 'Switchover in progress');
    const ready = patch.status.conditions.find((c) => c.type === 'Ready');
    assert.deepEqual(ready, {
      type: 'Ready',
      status: 'False',
      reason: 'ClusterIsNotReady',
      message: 'Cluster Is Not Ready',
      lastTransitionTime: '2026-12-06T23:00:01Z',
    });
    assert.ok(
      patch.status.conditions.some((c) => c.type === 'ContinuousArchiving'),
      'a merge patch replaces the list: the others stay',
    );
  });

  it('writes Go RFC3339Micro timestamps', () => {
    assert.equal(rfc3339Micro(new Date('2026-01-02T03:04:05.006Z')), '2026-01-02T03:04:05.006000Z');
  });
});

describe('CloudNativePG backups (row 6)', () => {
  const s3 = {
    endpoint: 'https://172.30.1.1:9000',
    host: '172.30.1.1',
    port: 9000,
    region: 'us-east-1',
    accessKeyId: 'AK',
    secretAccessKey: 'SK',
    caPem: 'pem',
    bucket: 'peers',
  };

  it('archives to the bucket under its own prefix, with the CA and an immediate checkpoint, keys only by reference', () => {
    const store = clusterManifest({ ...spec, backups: true }, { ...nodes, s3 }).spec.backup.barmanObjectStore;
    assert.equal(store.destinationPath, `s3://peers/${BACKUP_PREFIX.replace(/\/$/, '')}`);
    assert.equal(store.serverName, 'pg');
    assert.equal(store.endpointURL, s3.endpoint);
    assert.deepEqual(store.endpointCA, { name: S3_SECRET, key: 'ca.crt' });
    assert.equal(store.data.immediateCheckpoint, true);
    assert.doesNotMatch(JSON.stringify(store), /SK|AK/);
  });

  it('restores from the source server named, and archives nothing of its own', () => {
    const cluster = clusterManifest({ ...spec, instances: 1, restoreFrom: 'source' }, { ...nodes, s3 }).spec;
    assert.deepEqual(cluster.bootstrap, { recovery: { source: 'origin' } });
    assert.equal(cluster.externalClusters[0].name, 'origin');
    assert.equal(cluster.externalClusters[0].barmanObjectStore.serverName, 'source');
    assert.equal(cluster.backup, undefined);
  });

  it('refuses backups without an S3 server, naming the cluster', () => {
    assert.throws(() => clusterManifest({ ...spec, backups: true }, nodes), /bench\/pg: backups asked for/);
  });

  it('asks for a Backup through the barmanObjectStore', () => {
    assert.deepEqual(backupManifest('bench', 'pg', 'peers-1').spec, {
      cluster: { name: 'pg' },
      method: 'barmanObjectStore',
    });
  });
});
