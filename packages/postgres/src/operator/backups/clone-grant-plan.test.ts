import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { CLONE_COMMON_NAME, type CloneGrant } from '../../contract/index.js';
import {
  CLONE_GRANT_HOURS,
  type ClonePod,
  planCloneGrants,
  planSourceGrants,
  staleCloneGrants,
} from './clone-grant-plan.js';

const newKey = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

describe('clone grants (issue 37, finding 4: read-only, short-lived, gone once restored)', () => {
  let ca: CertificateAuthority;
  const key0 = newKey();
  const key1 = newKey();
  const grant = async (publicKeyPem: string, pod: string, cluster = 'copy', hours = CLONE_GRANT_HOURS) => ({
    cluster,
    certificate: await certifyPublicKey({
      publicKeyPem,
      commonName: CLONE_COMMON_NAME,
      dnsNames: [pod],
      ca,
      validityDays: hours / 24,
    }),
  });
  const pods: ClonePod[] = [
    { name: 'copy-i-0', deleting: false, publicKeyPem: key0 },
    { name: 'copy-i-1', deleting: false },
  ];
  const plan = (grants: Map<string, CloneGrant>, restoring = true, clonePods = pods) =>
    planCloneGrants({ clone: 'copy', restoring, pods: clonePods, grants, caCertPem: ca.caCertPem });
  before(async () => {
    ca = await createCertificateAuthority();
  });

  it('grants each restoring clone Pod with a published key, and keeps a grant that holds', async () => {
    assert.deepEqual(plan(new Map()), {
      issue: [{ pod: 'copy-i-0', publicKeyPem: key0, reason: 'no grant yet' }],
      remove: [],
    });
    assert.deepEqual(plan(new Map([['copy-i-0', await grant(key0, 'copy-i-0')]])), { issue: [], remove: [] });
  });

  it('is short-lived: an hour, renewed while the restore lasts; a new key is granted again', async () => {
    const fresh = await grant(key0, 'copy-i-0');
    const cert = new X509Certificate(fresh.certificate);
    assert.ok(Date.parse(cert.validTo) - Date.now() <= CLONE_GRANT_HOURS * 3_600_000 + 1_000, cert.validTo);
    const [ending] = plan(new Map([['copy-i-0', await grant(key0, 'copy-i-0', 'copy', 0.25)]])).issue;
    assert.match(ending?.reason ?? '', /ends/);
    const [rekeyed] = plan(new Map([['copy-i-0', await grant(key1, 'copy-i-0')]])).issue;
    assert.match(rekeyed?.reason ?? '', /new key/);
  });

  it('removes every grant of the clone once it has restored, and those of its Pods gone', async () => {
    const grants = new Map([
      ['copy-i-0', await grant(key0, 'copy-i-0')],
      ['copy-i-9', await grant(key1, 'copy-i-9')],
      ['other-i-0', await grant(key1, 'other-i-0', 'other')],
    ]);
    assert.deepEqual(plan(grants).remove, ['copy-i-9']);
    assert.deepEqual(plan(grants, false), { issue: [], remove: ['copy-i-0', 'copy-i-9'] });
  });

  it('from the source’s side: drops the grants of clones gone, restored, or ended', async () => {
    const grants = new Map([
      ['a-i-0', await grant(key0, 'a-i-0', 'a')],
      ['b-i-0', await grant(key0, 'b-i-0', 'b')],
      ['c-i-0', await grant(key0, 'c-i-0', 'c')],
      ['d-i-0', await grant(key0, 'd-i-0', 'd', -0.5)],
    ]);
    const clusters = new Map([
      ['a', { restoring: true }],
      ['b', { restoring: false }],
      ['d', { restoring: true }],
    ]);
    assert.deepEqual(staleCloneGrants(grants, clusters), ['b-i-0', 'c-i-0', 'd-i-0']);
  });

  it('from the source’s side, in one plan: grants the clones that name it, renews what ends, removes every other grant', async () => {
    const grants = new Map([
      // copy restores: copy-i-0's grant ends soon and is renewed, copy-i-9 is gone.
      ['copy-i-0', await grant(key0, 'copy-i-0', 'copy', 0.25)],
      ['copy-i-9', await grant(key1, 'copy-i-9')],
      // done has restored; moved names another source now (it is not among the clones); gone is gone.
      ['done-i-0', await grant(key0, 'done-i-0', 'done')],
      ['moved-i-0', await grant(key0, 'moved-i-0', 'moved')],
      ['gone-i-0', await grant(key0, 'gone-i-0', 'gone')],
    ]);
    const { issue, remove } = planSourceGrants({
      grants,
      caCertPem: ca.caCertPem,
      clones: [
        { clone: 'copy', restoring: true, pods },
        { clone: 'done', restoring: false, pods: [{ name: 'done-i-0', deleting: false, publicKeyPem: key0 }] },
        { clone: 'fresh', restoring: true, pods: [{ name: 'fresh-i-0', deleting: false, publicKeyPem: key1 }] },
      ],
    });
    assert.deepEqual(
      issue.map(({ pod, reason }) => [pod, reason.replace(/ends .*/, 'ends')]),
      [
        ['copy-i-0', 'it ends'],
        ['fresh-i-0', 'no grant yet'],
      ],
    );
    assert.deepEqual([...remove].sort(), ['copy-i-9', 'done-i-0', 'gone-i-0', 'moved-i-0']);
    // No clone names it and no grant is left: nothing to do.
    assert.deepEqual(planSourceGrants({ grants: new Map(), clones: [], caCertPem: ca.caCertPem }), {
      issue: [],
      remove: [],
    });
  });
});
