import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type CertificateAuthority, createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import {
  LEGACY_POSTGRES_TLS_KEY,
  memberServerName,
  POSTGRES_TLS_KEY,
  postgresServerDnsNames,
} from '../../contract/index.js';
import {
  nextPostgresTlsData,
  planPostgresTls,
  postgresTlsPlanIsEmpty,
  postgresTlsRenewalDueInMs,
} from './postgres-tls-plan.js';

const dnsNames = postgresServerDnsNames('hippo', 'db');
const base = { cluster: 'hippo', memberServerName: memberServerName('hippo', 'db') };
let ca: CertificateAuthority;
let userCa: CertificateAuthority;

const server = (options: { ca?: CertificateAuthority; names?: string[]; days?: number } = {}) =>
  createServingCertificate({
    dnsNames: options.names ?? dnsNames,
    ca: options.ca ?? ca,
    validityDays: options.days ?? 365,
  });
const replication = (cn = 'streaming_replica', clientAuth = true) =>
  createServingCertificate({ dnsNames: ['hippo-replication'], commonName: cn, clientAuth, ca, validityDays: 365 });

/** A complete Secret as the operator writes it. */
async function complete(): Promise<Record<string, string>> {
  const plan = planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: {}, dnsNames });
  return nextPostgresTlsData({}, plan, ca.caCertPem, { server: await server(), replication: await replication() });
}

describe('planPostgresTls', () => {
  before(async () => {
    ca = await createCertificateAuthority({ commonName: 'hippo-ca' });
    userCa = await createCertificateAuthority({ commonName: 'corp-ca' });
  });

  it('issues both certificates for a new cluster, and nothing once the Secret holds them', async () => {
    const plan = planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: {}, dnsNames });
    assert.equal(plan.issueServer, 'no certificate from the CA yet');
    assert.equal(plan.issueReplication, 'no certificate yet');
    assert.equal(plan.clientCaOutdated, true);
    const data = await complete();
    assert.equal(data[POSTGRES_TLS_KEY.serverCa], ca.caCertPem);
    assert.equal(data[POSTGRES_TLS_KEY.clientCa], ca.caCertPem);
    assert.ok(postgresTlsPlanIsEmpty(planPostgresTls({ ...base, caCertPem: ca.caCertPem, data, dnsNames })));
  });

  it('renews 30 days before expiry, and reissues a certificate that lacks a Service name or has the wrong subject', async () => {
    const data = await complete();
    const in340Days = new Date(Date.now() + 340 * 86_400_000);
    const late = planPostgresTls({ ...base, caCertPem: ca.caCertPem, data, dnsNames, now: in340Days });
    assert.match(late.issueServer ?? '', /expires/);
    assert.match(late.issueReplication ?? '', /expires/);

    const narrow = await server({ names: ['hippo-primary'] });
    const missingName = {
      ...data,
      [POSTGRES_TLS_KEY.serverCert]: narrow.certPem,
      [POSTGRES_TLS_KEY.serverKey]: narrow.keyPem,
    };
    assert.match(
      planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: missingName, dnsNames }).issueServer ?? '',
      /lacks the name/,
    );

    const wrong = await replication('postgres');
    const superuser = {
      ...data,
      [POSTGRES_TLS_KEY.replicationCert]: wrong.certPem,
      [POSTGRES_TLS_KEY.replicationKey]: wrong.keyPem,
    };
    assert.equal(
      planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: superuser, dnsNames }).issueReplication,
      'its subject is CN=postgres',
    );
    const swapped = { ...data, [POSTGRES_TLS_KEY.serverKey]: data[POSTGRES_TLS_KEY.replicationKey] ?? '' };
    assert.equal(
      planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: swapped, dnsNames }).issueServer,
      'the key does not match the certificate',
    );
  });

  it("copies the user's Secret in, and names the Secret and what is wrong with it", async () => {
    const data = await complete();
    const corp = await server({ ca: userCa });
    const userData = { 'ca.crt': userCa.caCertPem, 'tls.crt': corp.certPem, 'tls.key': corp.keyPem };
    const plan = planPostgresTls({
      ...base,
      caCertPem: ca.caCertPem,
      data,
      dnsNames,
      userSecret: { name: 'corp-tls', data: userData },
    });
    assert.equal(plan.issueServer, undefined, 'the cluster CA issues no server certificate');
    assert.deepEqual(plan.copyServer, { ca: userCa.caCertPem, cert: corp.certPem, key: corp.keyPem });
    const next = nextPostgresTlsData(data, plan, ca.caCertPem, {});
    assert.equal(next[POSTGRES_TLS_KEY.serverCa], userCa.caCertPem, 'clients verify with the user CA');
    assert.equal(
      next[POSTGRES_TLS_KEY.clientCa],
      ca.caCertPem,
      'replication certificates still come from the cluster CA',
    );
    assert.equal(next[POSTGRES_TLS_KEY.replicationCert], data[POSTGRES_TLS_KEY.replicationCert]);
    assert.ok(
      postgresTlsPlanIsEmpty(
        planPostgresTls({
          ...base,
          caCertPem: ca.caCertPem,
          data: next,
          dnsNames,
          userSecret: { name: 'corp-tls', data: userData },
        }),
      ),
    );

    const fresh = planPostgresTls({
      ...base,
      caCertPem: ca.caCertPem,
      data: {},
      dnsNames,
      userSecret: { name: 'corp-tls', data: undefined },
    });
    assert.equal(
      fresh.issueServer,
      'no certificate from the CA yet',
      "a new cluster serves the cluster CA's meanwhile",
    );
    const problem = (userSecretData: Record<string, string> | undefined) =>
      planPostgresTls({
        ...base,
        caCertPem: ca.caCertPem,
        data: next,
        dnsNames,
        userSecret: { name: 'corp-tls', data: userSecretData },
      });
    assert.equal(problem(undefined).userSecretProblem, 'Secret corp-tls (spec.tls.serverSecret) does not exist');
    assert.equal(
      problem({ 'tls.crt': corp.certPem }).userSecretProblem,
      'Secret corp-tls (spec.tls.serverSecret) lacks ca.crt, tls.key',
    );
    assert.match(
      problem({ ...userData, 'ca.crt': ca.caCertPem }).userSecretProblem ?? '',
      /^Secret corp-tls \(spec\.tls\.serverSecret\): the serving certificate was not issued by the CA/,
    );
    const bad = problem({ ...userData, 'tls.key': (await server({ ca: userCa })).keyPem });
    assert.equal(
      bad.userSecretProblem,
      'Secret corp-tls (spec.tls.serverSecret): the key does not match the certificate',
    );
    assert.equal(bad.copyServer, undefined, 'what the instances serve stays until the Secret is fixed');
  });

  it("replicates with the user's certificate, trusting its CA beside the cluster's; a broken one falls back to the cluster's", async () => {
    const data = await complete();
    const replicationCa = await createCertificateAuthority({ commonName: 'corp-replication-ca' });
    const mine = await createServingCertificate({
      dnsNames: ['replication'],
      commonName: 'streaming_replica',
      clientAuth: true,
      ca: replicationCa,
    });
    const userReplicationSecret = {
      name: 'corp-repl',
      data: { 'ca.crt': replicationCa.caCertPem, 'tls.crt': mine.certPem, 'tls.key': mine.keyPem },
    };
    const plan = planPostgresTls({ ...base, caCertPem: ca.caCertPem, data, dnsNames, userReplicationSecret });
    assert.equal(plan.issueReplication, undefined);
    assert.deepEqual(plan.copyReplication, { ca: replicationCa.caCertPem, cert: mine.certPem, key: mine.keyPem });
    assert.equal(plan.clientCaOutdated, true);
    const next = nextPostgresTlsData(data, plan, ca.caCertPem, {});
    assert.equal(next[POSTGRES_TLS_KEY.replicationCert], mine.certPem);
    const trusted = next[POSTGRES_TLS_KEY.clientCa] ?? '';
    assert.ok(trusted.includes(ca.caCertPem.trim()) && trusted.includes(replicationCa.caCertPem.trim()), 'both CAs');
    assert.ok(
      postgresTlsPlanIsEmpty(
        planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: next, dnsNames, userReplicationSecret }),
      ),
    );

    const other = await createServingCertificate({
      dnsNames: ['x'],
      commonName: 'app',
      clientAuth: true,
      ca: replicationCa,
    });
    const wrongName = planPostgresTls({
      ...base,
      caCertPem: ca.caCertPem,
      data: next,
      dnsNames,
      userReplicationSecret: {
        name: 'corp-repl',
        data: { ...userReplicationSecret.data, 'tls.crt': other.certPem, 'tls.key': other.keyPem },
      },
    });
    assert.equal(
      wrongName.userReplicationSecretProblem,
      'Secret corp-repl (spec.tls.replicationSecret): its subject is CN=app, not CN=streaming_replica',
    );
    assert.equal(
      wrongName.issueReplication,
      'the serving certificate was not issued by the CA',
      "the cluster's CA takes over",
    );
    assert.equal(wrongName.clientCa, ca.caCertPem);
  });

  it("requeues for the first certificate of the cluster's CA due for renewal, never a user's", async () => {
    const lifetime = { renewBeforeDays: 30 };
    const data = await complete();
    const due = (d: Record<string, string>) => postgresTlsRenewalDueInMs(d, ca.caCertPem, lifetime) ?? Number.NaN;
    const days = (ms: number) => Math.round(ms / 86_400_000);
    assert.equal(days(due(data)), 335, 'all issued for 365 days: due 30 days before the end');
    for (const [cert, key] of [[POSTGRES_TLS_KEY.replicationCert, POSTGRES_TLS_KEY.replicationKey]] as const) {
      const short = await createServingCertificate({
        dnsNames: ['x'],
        commonName: 'x',
        clientAuth: true,
        ca,
        validityDays: 40,
      });
      assert.equal(days(due({ ...data, [cert]: short.certPem, [key]: short.keyPem })), 10, cert);
    }
    const userCert = await createServingCertificate({
      dnsNames: ['x'],
      commonName: 'streaming_replica',
      clientAuth: true,
      ca: userCa,
      validityDays: 40,
    });
    assert.equal(
      days(due({ ...data, [POSTGRES_TLS_KEY.replicationCert]: userCert.certPem })),
      335,
      "the user's replication certificate is the user's to renew",
    );
  });

  it('issues no superuser certificate, and replaces the one an older operator issued with the replication pair', async () => {
    const data = await complete();
    const subjects = (d: Record<string, string>) =>
      Object.values(d)
        .filter((pem) => pem.includes('BEGIN CERTIFICATE'))
        .map((pem) => new X509Certificate(pem).subject);
    assert.ok(!subjects(data).includes('CN=postgres'), subjects(data).join(', '));
    // Agents before this version serve no TLS without these keys: they hold the replication pair.
    assert.equal(data[LEGACY_POSTGRES_TLS_KEY.superuserCert], data[POSTGRES_TLS_KEY.replicationCert]);
    assert.equal(data[LEGACY_POSTGRES_TLS_KEY.superuserKey], data[POSTGRES_TLS_KEY.replicationKey]);

    const old = await replication('postgres');
    const upgraded = {
      ...data,
      [LEGACY_POSTGRES_TLS_KEY.superuserCert]: old.certPem,
      [LEGACY_POSTGRES_TLS_KEY.superuserKey]: old.keyPem,
    };
    const plan = planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: upgraded, dnsNames });
    assert.equal(plan.legacyOutdated, true);
    assert.equal(plan.issueReplication, undefined, 'the replication certificate stays');
    const next = nextPostgresTlsData(upgraded, plan, ca.caCertPem, {});
    assert.ok(!subjects(next).includes('CN=postgres'), subjects(next).join(', '));
    assert.equal(next[LEGACY_POSTGRES_TLS_KEY.superuserCert], data[POSTGRES_TLS_KEY.replicationCert]);
    assert.ok(postgresTlsPlanIsEmpty(planPostgresTls({ ...base, caCertPem: ca.caCertPem, data: next, dnsNames })));
  });

  it("refuses a user's server certificate that lacks the name the instances verify each other by, and keeps serving", async () => {
    assert.ok(dnsNames.includes(base.memberServerName), 'every issued server certificate carries it');
    const data = await complete();
    const userSecret = async (names: string[]) => {
      const corp = await server({ ca: userCa, names });
      return {
        name: 'corp-tls',
        data: { 'ca.crt': userCa.caCertPem, 'tls.crt': corp.certPem, 'tls.key': corp.keyPem },
      };
    };
    const narrow = planPostgresTls({
      ...base,
      caCertPem: ca.caCertPem,
      data,
      dnsNames,
      userSecret: await userSecret(['hippo-primary', 'hippo-primary.db.svc.cluster.local']),
    });
    assert.equal(
      narrow.userSecretProblem,
      "Secret corp-tls (spec.tls.serverSecret): the certificate does not name hippo-primary.db.svc, which the instances verify each other's server by",
    );
    assert.equal(narrow.copyServer, undefined, 'what the instances serve stays until the Secret is fixed');
    assert.equal(narrow.issueServer, undefined);

    const wildcard = planPostgresTls({
      ...base,
      caCertPem: ca.caCertPem,
      data,
      dnsNames,
      userSecret: await userSecret(['*.db.svc']),
    });
    assert.equal(wildcard.userSecretProblem, undefined, 'a wildcard for the namespace names it');
    assert.ok(wildcard.copyServer);
  });
});
