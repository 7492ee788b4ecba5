import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { LABEL } from '../contract/index.js';
import { foreignOwner } from './ownership.js';

const cluster = { metadata: { name: 'db', namespace: 'default', uid: 'uid-db' } } as PostgresCluster;
const controlledBy = (name: string, uid: string, controller = true) => ({
  metadata: {
    ownerReferences: [{ apiVersion: 'postgres.kanri.dev/v1', kind: 'PostgresCluster', name, uid, controller }],
    labels: { [LABEL.cluster]: name },
  },
});

describe("whether an object is the cluster's own", () => {
  it('is, when the cluster controls it (as everything the operator created), with or without its label', () => {
    assert.equal(foreignOwner(controlledBy('db', 'uid-db'), cluster), undefined);
    assert.equal(
      foreignOwner({ metadata: { ownerReferences: controlledBy('db', 'uid-db').metadata.ownerReferences } }, cluster),
      undefined,
    );
  });

  it('is, when nothing controls it and it carries the cluster label (left behind by a deleted cluster of this name)', () => {
    assert.equal(foreignOwner({ metadata: { labels: { [LABEL.cluster]: 'db' } } }, cluster), undefined);
  });

  it("is not, when another cluster controls it: x's pgBackRest CA is not x-pgbackrest's PostgreSQL CA", () => {
    const xCa = controlledBy('x', 'uid-x');
    const xPgbackrest = { metadata: { name: 'x-pgbackrest', uid: 'uid-xp' } } as PostgresCluster;
    assert.equal(foreignOwner(xCa, xPgbackrest), 'PostgresCluster x (uid uid-x)');
  });

  it('is not, when an earlier cluster of the same name controls it (its uid differs), nor with our label but another controller', () => {
    assert.equal(foreignOwner(controlledBy('db', 'uid-old'), cluster), 'PostgresCluster db (uid uid-old)');
  });

  it('is not, when nothing controls it and it lacks the label: an application’s, or one planted before the cluster', () => {
    assert.match(
      foreignOwner({ metadata: {} }, cluster) ?? '',
      /no controller, and no label postgres\.kanri\.dev\/cluster=db/,
    );
    assert.match(foreignOwner({ metadata: { labels: { [LABEL.cluster]: 'other' } } }, cluster) ?? '', /no controller/);
    // An owner that is not the controller (a garbage-collection link) makes nothing the cluster's.
    assert.match(foreignOwner(controlledBy('other', 'uid-other', false), cluster) ?? '', /no controller/);
  });
});
