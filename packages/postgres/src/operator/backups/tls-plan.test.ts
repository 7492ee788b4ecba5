import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import { nextTlsData, planTls, type TlsPod, tlsPlanIsEmpty } from './tls-plan.js';

const cluster = 'hippo';
const CN = 'pgbackrest@hippo';
const pod = (name: string, podIP?: string, deleting = false): TlsPod => ({
  name,
  deleting,
  ...(podIP ? { podIP } : {}),
});

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;

async function issue(
  podIP: string,
  options: { ca?: CertificateAuthority; cn?: string; clientAuth?: boolean; days?: number } = {},
) {
  return createServingCertificate({
    ipAddresses: [podIP],
    commonName: options.cn ?? CN,
    clientAuth: options.clientAuth ?? true,
    ca: options.ca ?? ca,
    validityDays: options.days ?? 365,
  });
}

/** TLS Secret data holding a certificate per [pod, ip]. */
async function secretData(entries: [string, string][]): Promise<Record<string, string>> {
  const data: Record<string, string> = { 'ca.crt': ca.caCertPem };
  for (const [name, ip] of entries) {
    const cert = await issue(ip);
    data[`${name}.crt`] = cert.certPem;
    data[`${name}.key`] = cert.keyPem;
  }
  return data;
}

describe('planTls', () => {
  before(async () => {
    ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
    otherCa = await createCertificateAuthority();
  });

  it('issues for every Pod with an address, none for one without or being deleted, and writes the CA', () => {
    const plan = planTls({
      cluster,
      caCertPem: ca.caCertPem,
      data: {},
      pods: [
        pod('hippo-i-0', '10.0.0.1'),
        pod('hippo-repo-host', '10.0.0.9'),
        pod('hippo-i-1'),
        pod('hippo-i-2', '10.0.0.3', true),
      ],
    });
    assert.deepEqual(
      plan.issue.map((i) => [i.pod, i.podIP, i.reason]),
      [
        ['hippo-i-0', '10.0.0.1', 'no certificate yet'],
        ['hippo-repo-host', '10.0.0.9', 'no certificate yet'],
      ],
    );
    assert.deepEqual(plan.prune, []);
    assert.equal(plan.caOutdated, true);
  });

  it('keeps valid certificates: nothing to do', async () => {
    const data = await secretData([
      ['hippo-i-0', '10.0.0.1'],
      ['hippo-repo-host', '10.0.0.9'],
    ]);
    const plan = planTls({
      cluster,
      caCertPem: ca.caCertPem,
      data,
      pods: [pod('hippo-i-0', '10.0.0.1'), pod('hippo-repo-host', '10.0.0.9')],
    });
    assert.ok(tlsPlanIsEmpty(plan), JSON.stringify(plan));
  });

  it('reissues for a new IP, a wrong common name, no clientAuth, another CA, near expiry, a foreign or unreadable key', async () => {
    const data = await secretData([['a', '10.0.0.1']]);
    const cases: [string, Record<string, string>, RegExp][] = [
      ['new IP', { 'b.crt': data['a.crt'] ?? '', 'b.key': data['a.key'] ?? '' }, /lacks the IP 10\.0\.0\.2/],
    ];
    const wrongCn = await issue('10.0.0.2', { cn: 'someone' });
    cases.push(['common name', { 'b.crt': wrongCn.certPem, 'b.key': wrongCn.keyPem }, /subject is CN=someone/]);
    const serverOnly = await issue('10.0.0.2', { clientAuth: false });
    cases.push(['clientAuth', { 'b.crt': serverOnly.certPem, 'b.key': serverOnly.keyPem }, /client authentication/]);
    const foreign = await issue('10.0.0.2', { ca: otherCa });
    cases.push(['CA', { 'b.crt': foreign.certPem, 'b.key': foreign.keyPem }, /not issued by the CA/]);
    const expiring = await issue('10.0.0.2', { days: 20 });
    cases.push(['expiry', { 'b.crt': expiring.certPem, 'b.key': expiring.keyPem }, /expires/]);
    const good = await issue('10.0.0.2');
    cases.push(['key', { 'b.crt': good.certPem, 'b.key': data['a.key'] ?? '' }, /key does not match/]);
    cases.push(['garbage key', { 'b.crt': good.certPem, 'b.key': 'not a key' }, /key is unreadable/]);
    cases.push(['garbage cert', { 'b.crt': 'not a cert', 'b.key': good.keyPem }, /unreadable/]);
    cases.push(['no key', { 'b.crt': good.certPem }, /no certificate yet/]);
    for (const [label, entries, reason] of cases) {
      const plan = planTls({
        cluster,
        caCertPem: ca.caCertPem,
        data: { 'ca.crt': ca.caCertPem, ...entries },
        pods: [pod('b', '10.0.0.2')],
      });
      assert.equal(plan.issue.length, 1, label);
      assert.match(plan.issue[0]?.reason ?? '', reason, label);
    }
    // The control: the same certificate with its own key stays.
    const plan = planTls({
      cluster,
      caCertPem: ca.caCertPem,
      data: { 'ca.crt': ca.caCertPem, 'b.crt': good.certPem, 'b.key': good.keyPem },
      pods: [pod('b', '10.0.0.2')],
    });
    assert.ok(tlsPlanIsEmpty(plan));
  });

  it('prunes the entries of Pods that are gone, keeps those of a Pod being deleted or without an address yet', async () => {
    const data = await secretData([
      ['gone', '10.0.0.5'],
      ['leaving', '10.0.0.6'],
      ['rescheduling', '10.0.0.7'],
    ]);
    data.stray = 'x';
    const plan = planTls({
      cluster,
      caCertPem: ca.caCertPem,
      data,
      pods: [pod('leaving', '10.0.0.6', true), pod('rescheduling')],
    });
    assert.deepEqual(plan.issue, []);
    assert.deepEqual([...plan.prune].sort(), ['gone.crt', 'gone.key', 'stray']);
    assert.equal(plan.caOutdated, false);
    const next = nextTlsData(data, plan, ca.caCertPem, []);
    assert.deepEqual(Object.keys(next).sort(), [
      'ca.crt',
      'leaving.crt',
      'leaving.key',
      'rescheduling.crt',
      'rescheduling.key',
    ]);
  });

  it('after a CA change, reissues every certificate and replaces ca.crt', async () => {
    const data = await secretData([['a', '10.0.0.1']]);
    const plan = planTls({ cluster, caCertPem: otherCa.caCertPem, data, pods: [pod('a', '10.0.0.1')] });
    assert.equal(plan.caOutdated, true);
    assert.match(plan.issue[0]?.reason ?? '', /not issued by the CA/);
    const reissued = await issue('10.0.0.1', { ca: otherCa });
    const next = nextTlsData(data, plan, otherCa.caCertPem, [{ pod: 'a', ...reissued }]);
    assert.equal(next['ca.crt'], otherCa.caCertPem);
    assert.equal(next['a.crt'], reissued.certPem);
    assert.ok(
      tlsPlanIsEmpty(planTls({ cluster, caCertPem: otherCa.caCertPem, data: next, pods: [pod('a', '10.0.0.1')] })),
    );
  });
});
