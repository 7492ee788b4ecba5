/**
 * What the cluster's PostgreSQL TLS Secret (contract/postgres-tls.ts) needs: a server certificate
 * to issue (or the user's to copy in), a replication client certificate to issue, or nothing.
 * Pure: the caller reads the Secrets, issues what this names, and writes the result.
 */
import { X509Certificate } from 'node:crypto';
import { servingCertificateProblem } from '@kanri/runtime';
import { LEGACY_POSTGRES_TLS_KEY, POSTGRES_TLS_KEY, REPLICATION_CERT_COMMON_NAME } from '../../contract/index.js';
import { keyProblem, RENEW_BEFORE_DAYS } from './certificate-checks.js';
import { renewalDueInMs } from './certificate-lifetime.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** A Secret the spec names (serverSecret, replicationSecret): its data decoded, or undefined when it does not exist. */
export interface UserServerSecret {
  readonly name: string;
  readonly data: Readonly<Record<string, string>> | undefined;
}

export interface PostgresTlsInput {
  readonly cluster: string;
  /** The cluster's CA certificate (names.postgresCa). */
  readonly caCertPem: string;
  /** The names.postgresTls Secret's data, decoded; empty when it does not exist yet. */
  readonly data: Readonly<Record<string, string>>;
  /** The names the server certificate must carry (postgresServerDnsNames). */
  readonly dnsNames: readonly string[];
  /** The name members verify each other's server certificate by (memberServerName): a user's must carry it too. */
  readonly memberServerName: string;
  /** Set when the spec names the server's Secret. */
  readonly userSecret?: UserServerSecret;
  /** Set when the spec names the replication user's Secret (PGO's customReplicationTLSSecret). */
  readonly userReplicationSecret?: UserServerSecret;
  /** Renew an issued certificate once less than this remains; default RENEW_BEFORE_DAYS. */
  readonly renewBeforeDays?: number;
  readonly now?: Date;
}

export interface PostgresTlsPlan {
  /** Why a server certificate must be issued from the cluster's CA; undefined: keep (or copy) it. */
  readonly issueServer?: string;
  /** The user's certificate, CA and key, to copy in when they differ from the Secret's. */
  readonly copyServer?: { readonly ca: string; readonly cert: string; readonly key: string };
  /** Why the replication user's certificate must be issued; undefined: keep it. */
  readonly issueReplication?: string;
  /** The user's replication certificate, key and CA, to copy in when they differ from the Secret's. */
  readonly copyReplication?: { readonly ca: string; readonly cert: string; readonly key: string };
  /** What `client-ca.crt` must be: the cluster's CA, and the user's replication CA when one is used. */
  readonly clientCa: string;
  /** `client-ca.crt` is not {@link clientCa}. */
  readonly clientCaOutdated: boolean;
  /**
   * The legacy keys (LEGACY_POSTGRES_TLS_KEY) do not hold the replication pair: missing (agents
   * before this version would serve no TLS), or an old superuser certificate, which must go.
   */
  readonly legacyOutdated: boolean;
  /** What is wrong with the user's server Secret (the Secret keeps what it served until it is fixed). */
  readonly userSecretProblem?: string;
  /** What is wrong with the user's replication Secret (replicas use the cluster's certificate meanwhile). */
  readonly userReplicationSecretProblem?: string;
}

const renewBefore = (input: PostgresTlsInput) => input.renewBeforeDays ?? RENEW_BEFORE_DAYS;

/** Why the server certificate in `data` must be reissued from the CA, or undefined. */
function issuedServerProblem(input: PostgresTlsInput): string | undefined {
  const cert = input.data[POSTGRES_TLS_KEY.serverCert];
  const key = input.data[POSTGRES_TLS_KEY.serverKey];
  if (!cert || !key || input.data[POSTGRES_TLS_KEY.serverCa] !== input.caCertPem)
    return 'no certificate from the CA yet';
  const problem = servingCertificateProblem(
    { caCertPem: input.caCertPem, certPem: cert },
    { dnsNames: [...input.dnsNames], renewBeforeDays: renewBefore(input), ...(input.now ? { now: input.now } : {}) },
  );
  return problem?.reason ?? keyProblem(new X509Certificate(cert), key);
}

/**
 * Why the user's Secret cannot serve, naming it, its spec field and the key at fault; undefined
 * when it can. A client certificate must also carry `name.commonName`, a server certificate
 * `name.dnsName`.
 */
function userSecretProblem(
  secret: UserServerSecret,
  field: string,
  now: Date | undefined,
  name: { readonly commonName?: string; readonly dnsName?: string },
): string | undefined {
  const where = `Secret ${secret.name} (${field})`;
  if (!secret.data) return `${where} does not exist`;
  const missing = ['ca.crt', 'tls.crt', 'tls.key'].filter((key) => !secret.data?.[key]);
  if (missing.length > 0) return `${where} lacks ${missing.join(', ')}`;
  const { 'ca.crt': ca = '', 'tls.crt': cert = '', 'tls.key': key = '' } = secret.data;
  // Expired or not issued by its ca.crt: peers would refuse it. Renewal is the user's (renewBeforeDays 0).
  const problem = servingCertificateProblem(
    { caCertPem: ca, certPem: cert },
    { renewBeforeDays: 0, ...(now ? { now } : {}) },
  );
  if (problem) return `${where}: ${problem.reason}`;
  const leaf = new X509Certificate(cert);
  if (name.commonName && leaf.subject !== `CN=${name.commonName}`)
    return `${where}: its subject is ${leaf.subject}, not CN=${name.commonName}`;
  // Members dial each other's Pod IP and check the certificate against this name (verify-full).
  if (name.dnsName && leaf.checkHost(name.dnsName) === undefined)
    return `${where}: the certificate does not name ${name.dnsName}, which the instances verify each other's server by`;
  const mismatch = keyProblem(leaf, key);
  return mismatch ? `${where}: ${mismatch}` : undefined;
}

/** The user's certificate, key and CA, as the plan copies them. */
const userCopy = (secret: UserServerSecret) => ({
  ca: secret.data?.['ca.crt'] ?? '',
  cert: secret.data?.['tls.crt'] ?? '',
  key: secret.data?.['tls.key'] ?? '',
});

/** Why the client certificate under `keys` (common name `commonName`) must be reissued, or undefined. */
function clientCertificateProblem(
  input: PostgresTlsInput,
  keys: { readonly cert: string; readonly key: string },
  commonName: string,
): string | undefined {
  const cert = input.data[keys.cert];
  const key = input.data[keys.key];
  if (!cert || !key) return 'no certificate yet';
  const problem = servingCertificateProblem(
    { caCertPem: input.caCertPem, certPem: cert },
    { renewBeforeDays: renewBefore(input), ...(input.now ? { now: input.now } : {}) },
  );
  if (problem) return problem.reason;
  const leaf = new X509Certificate(cert);
  if (leaf.subject !== `CN=${commonName}`) return `its subject is ${leaf.subject}`;
  if (!(leaf.keyUsage ?? []).includes(CLIENT_AUTH)) return 'it does not allow client authentication';
  return keyProblem(leaf, key);
}

/**
 * What to change in the PostgreSQL TLS Secret.
 *
 * @example
 * ```ts
 * planPostgresTls({
 *   cluster: 'hippo',
 *   caCertPem,
 *   data: {},
 *   dnsNames: postgresServerDnsNames('hippo', 'db'),
 *   memberServerName: memberServerName('hippo', 'db'),
 * });
 * // { issueServer: 'no certificate from the CA yet', issueReplication: 'no certificate yet', clientCaOutdated: true, legacyOutdated: true, … }
 * ```
 */
export function planPostgresTls(input: PostgresTlsInput): PostgresTlsPlan {
  const replicationSecret = input.userReplicationSecret;
  const userReplicationSecretProblem =
    replicationSecret &&
    userSecretProblem(replicationSecret, 'spec.tls.replicationSecret', input.now, {
      commonName: REPLICATION_CERT_COMMON_NAME,
    });
  // A usable user's replication certificate is copied in; otherwise (none, or a broken one) the
  // cluster's CA issues it, and postgres trusts the cluster's CA either way (a replica presents
  // the certificate it had until it reconnects). The user's CA may be a shared issuer's, which can
  // name any role: pg_hba accepts a certificate for the replication user alone.
  const userReplication = replicationSecret && !userReplicationSecretProblem ? userCopy(replicationSecret) : undefined;
  const clientCa = userReplication
    ? `${input.caCertPem.trimEnd()}\n${userReplication.ca.trimEnd()}\n`
    : input.caCertPem;
  const clientCaOutdated = input.data[POSTGRES_TLS_KEY.clientCa] !== clientCa;
  const issueReplication = userReplication
    ? undefined
    : clientCertificateProblem(
        input,
        { cert: POSTGRES_TLS_KEY.replicationCert, key: POSTGRES_TLS_KEY.replicationKey },
        REPLICATION_CERT_COMMON_NAME,
      );
  const copyReplication =
    userReplication &&
    (input.data[POSTGRES_TLS_KEY.replicationCert] !== userReplication.cert ||
      input.data[POSTGRES_TLS_KEY.replicationKey] !== userReplication.key)
      ? userReplication
      : undefined;
  // What the replication keys hold once this plan is carried out, unless it issues a new pair.
  const replication = copyReplication ?? {
    cert: input.data[POSTGRES_TLS_KEY.replicationCert],
    key: input.data[POSTGRES_TLS_KEY.replicationKey],
  };
  const legacyOutdated =
    Boolean(issueReplication) ||
    input.data[LEGACY_POSTGRES_TLS_KEY.superuserCert] !== replication.cert ||
    input.data[LEGACY_POSTGRES_TLS_KEY.superuserKey] !== replication.key;
  const common = {
    clientCa,
    clientCaOutdated,
    legacyOutdated,
    ...(issueReplication ? { issueReplication } : {}),
    ...(copyReplication ? { copyReplication } : {}),
    ...(userReplicationSecretProblem ? { userReplicationSecretProblem } : {}),
  };
  if (!input.userSecret) {
    const issueServer = issuedServerProblem(input);
    return { ...common, ...(issueServer ? { issueServer } : {}) };
  }
  const problem = userSecretProblem(input.userSecret, 'spec.tls.serverSecret', input.now, {
    dnsName: input.memberServerName,
  });
  if (problem) {
    // Keep serving what is served; a cluster that serves nothing yet gets the cluster CA's
    // certificate meanwhile (with tls.required, no client could connect otherwise).
    const serving = Boolean(input.data[POSTGRES_TLS_KEY.serverCert] && input.data[POSTGRES_TLS_KEY.serverKey]);
    const issueServer = serving ? undefined : issuedServerProblem(input);
    return { ...common, userSecretProblem: problem, ...(issueServer ? { issueServer } : {}) };
  }
  const copy = userCopy(input.userSecret);
  const same =
    input.data[POSTGRES_TLS_KEY.serverCa] === copy.ca &&
    input.data[POSTGRES_TLS_KEY.serverCert] === copy.cert &&
    input.data[POSTGRES_TLS_KEY.serverKey] === copy.key;
  return { ...common, ...(same ? {} : { copyServer: copy }) };
}

/** Whether the plan changes nothing. */
export function postgresTlsPlanIsEmpty(plan: PostgresTlsPlan): boolean {
  return (
    !plan.issueServer &&
    !plan.copyServer &&
    !plan.issueReplication &&
    !plan.copyReplication &&
    !plan.clientCaOutdated &&
    !plan.legacyOutdated
  );
}

/** A certificate and its key. */
export interface IssuedPair {
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * The Secret's next data: the CA, the certificates issued or copied, the legacy keys equal to the
 * replication pair, the rest kept.
 *
 * @example
 * ```ts
 * nextPostgresTlsData(data, plan, caCertPem, { server, replication });
 * ```
 */
export function nextPostgresTlsData(
  data: Readonly<Record<string, string>>,
  plan: PostgresTlsPlan,
  caCertPem: string,
  issued: {
    readonly server?: IssuedPair;
    readonly replication?: IssuedPair;
  },
): Record<string, string> {
  const next: Record<string, string> = { ...data, [POSTGRES_TLS_KEY.clientCa]: plan.clientCa };
  const put = (certKey: string, keyKey: string, pair: IssuedPair | undefined) => {
    if (!pair) return;
    next[certKey] = pair.certPem;
    next[keyKey] = pair.keyPem;
  };
  const copied = (user: { readonly cert: string; readonly key: string } | undefined) =>
    user && { certPem: user.cert, keyPem: user.key };
  const K = POSTGRES_TLS_KEY;
  const serverCa = plan.copyServer?.ca ?? (issued.server ? caCertPem : undefined);
  if (serverCa !== undefined) next[K.serverCa] = serverCa;
  put(K.serverCert, K.serverKey, copied(plan.copyServer) ?? issued.server);
  put(K.replicationCert, K.replicationKey, copied(plan.copyReplication) ?? issued.replication);
  const L = LEGACY_POSTGRES_TLS_KEY;
  const legacy = { [L.superuserCert]: next[K.replicationCert], [L.superuserKey]: next[K.replicationKey] };
  for (const [key, value] of Object.entries(legacy)) {
    if (value === undefined) delete next[key];
    else next[key] = value;
  }
  return next;
}

/**
 * Milliseconds until a certificate this cluster's CA issued into `data` is due for renewal (the
 * user's own certificate is the user's to renew), or undefined when there is none.
 *
 * @example
 * ```ts
 * postgresTlsRenewalDueInMs(next, caCertPem, lifetime); // the controller requeues no later than this
 * ```
 */
export function postgresTlsRenewalDueInMs(
  data: Readonly<Record<string, string>>,
  caCertPem: string,
  lifetime: { readonly renewBeforeDays: number },
  now: Date = new Date(),
): number | undefined {
  const notAfter = (pem: string | undefined) => {
    try {
      return pem ? new X509Certificate(pem).validTo : undefined;
    } catch {
      return undefined;
    }
  };
  const issuedServer = data[POSTGRES_TLS_KEY.serverCa] === caCertPem ? data[POSTGRES_TLS_KEY.serverCert] : undefined;
  const ours = (pem: string | undefined) => (pem && issuedBy(caCertPem, pem) ? pem : undefined);
  return renewalDueInMs([issuedServer, ours(data[POSTGRES_TLS_KEY.replicationCert])].map(notAfter), lifetime, now);
}

/** Whether `certPem` was issued by the CA `caPem` (a user's certificate is the user's to renew). */
function issuedBy(caPem: string, certPem: string): boolean {
  try {
    return new X509Certificate(certPem).verify(new X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}
