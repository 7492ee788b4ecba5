/**
 * What the agent may serve with, decided without I/O: the cluster's configuration (the ConfigMap
 * names.config) and TLS material (the Secret names.postgresTls) when they are whole, else the last
 * of each this Pod had, and whether postgres may start at all. Fail closed: an object deleted,
 * emptied, half-edited or not yet seen never means "no pg_hba rules" or "no TLS".
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { CONFIG_KEY, POSTGRES_TLS_KEY, type PostgresTlsFiles } from '../../contract/index.js';

/** The operator's parameters and pg_hba.conf rules, both present. */
export interface OperatorConfig {
  readonly parameters: string;
  readonly hba: string;
}

/** Something usable, or why there is none (a sentence naming the object). */
export type Material<T> = { readonly value: T } | { readonly missing: string };

/** Where the material comes from, for the sentences: the object, and whether its informer has listed. */
export interface MaterialSource {
  /** e.g. `ConfigMap hippo-config`. */
  readonly what: string;
  /** False until the first list answered: "not there" then means "not known yet", never "deleted". */
  readonly known: boolean;
}

function absent(source: MaterialSource): string {
  return source.known
    ? `${source.what} does not exist`
    : `${source.what} is not known yet (the API server has not answered)`;
}

/**
 * The operator's configuration from its ConfigMap's data (`undefined`: no ConfigMap), or why it
 * cannot be used. The operator always writes both keys, so a lacking one is an edit or a
 * deletion, never "no rules".
 *
 * @example
 * ```ts
 * readOperatorConfig(undefined, { what: 'ConfigMap hippo-config', known: true });
 * // { missing: 'ConfigMap hippo-config does not exist' }
 * ```
 */
export function readOperatorConfig(
  data: Readonly<Record<string, string>> | undefined,
  source: MaterialSource,
): Material<OperatorConfig> {
  if (!data) return { missing: absent(source) };
  const parameters = data[CONFIG_KEY.parameters];
  const hba = data[CONFIG_KEY.hba];
  const lacking = [
    ...(parameters === undefined ? [CONFIG_KEY.parameters] : []),
    ...(hba === undefined ? [CONFIG_KEY.hba] : []),
  ];
  if (parameters === undefined || hba === undefined)
    return { missing: `${source.what} lacks ${lacking.join(' and ')}` };
  return { value: { parameters, hba } };
}

/** The PEM text of each of the cluster's TLS files. */
export type PostgresTlsPem = Readonly<Record<keyof PostgresTlsFiles, string>>;

const FIELDS = Object.keys(POSTGRES_TLS_KEY) as (keyof PostgresTlsFiles)[];

/** Each certificate and the key it must be for. */
const PAIRS: readonly [keyof PostgresTlsFiles, keyof PostgresTlsFiles][] = [
  ['serverCert', 'serverKey'],
  ['replicationCert', 'replicationKey'],
];

/**
 * The Secret's data (base64, as stored) as PEM text by field; fields it lacks are absent.
 *
 * @example
 * ```ts
 * decodeTlsSecret({ 'tls.crt': 'LS0t…' }).serverCert; // '-----BEGIN CERTIFICATE-----…'
 * ```
 */
export function decodeTlsSecret(
  data: Readonly<Record<string, string>> | undefined,
): Partial<Record<keyof PostgresTlsFiles, string>> {
  const pem: Partial<Record<keyof PostgresTlsFiles, string>> = {};
  for (const field of FIELDS) {
    const value = data?.[POSTGRES_TLS_KEY[field]];
    if (value) pem[field] = Buffer.from(value, 'base64').toString('utf8');
  }
  return pem;
}

/**
 * The TLS material when it is whole and each certificate is for the key beside it, or why not.
 * A Secret lacking a key (a certificate being replaced), or pairing a certificate with another
 * one's key, is not used: postgres keeps what it serves, and a reload never loads half a pair.
 * `pem` undefined: no Secret.
 *
 * @example
 * ```ts
 * readPostgresTls(decodeTlsSecret(secret.data), { what: 'Secret hippo-postgres-tls', known: true });
 * ```
 */
export function readPostgresTls(
  pem: Partial<Record<keyof PostgresTlsFiles, string>> | undefined,
  source: MaterialSource,
): Material<PostgresTlsPem> {
  if (!pem) return { missing: absent(source) };
  const lacking = FIELDS.filter((field) => !pem[field]).map((field) => POSTGRES_TLS_KEY[field]);
  if (lacking.length === FIELDS.length) return { missing: `${source.what} holds no TLS material` };
  if (lacking.length > 0) return { missing: `${source.what} lacks ${lacking.join(', ')}` };
  const whole = pem as PostgresTlsPem;
  for (const [cert, key] of PAIRS) {
    const problem = pairProblem(whole[cert], whole[key]);
    if (problem)
      return { missing: `${source.what}: ${POSTGRES_TLS_KEY[cert]} and ${POSTGRES_TLS_KEY[key]} ${problem}` };
  }
  return { value: whole };
}

function pairProblem(certPem: string, keyPem: string): string | undefined {
  try {
    return new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem))
      ? undefined
      : 'are not a pair (the certificate is for another key)';
  } catch (error) {
    return `do not parse (${(error as Error).message})`;
  }
}

export interface StartInput {
  /** Why the agent has no configuration of the cluster's (neither the ConfigMap nor a kept copy); undefined: it has one. */
  readonly config: string | undefined;
  /** Why the agent has no TLS material (neither the Secret nor files it kept); undefined: it has it. */
  readonly tls: string | undefined;
  /** ENV.tlsOptional: postgres may serve without TLS while the agent has none (the agent tests). */
  readonly tlsOptional: boolean;
}

/**
 * Why postgres must not start yet, or undefined when it may: never with pg_hba rules that are not
 * the cluster's, and never on the network without TLS. The agent waits (and reports this) until
 * the operator re-creates what is missing.
 *
 * @example
 * ```ts
 * startBlockedBy({ config: undefined, tls: 'Secret hippo-postgres-tls does not exist', tlsOptional: false });
 * // 'waiting for the operator: Secret hippo-postgres-tls does not exist: postgres does not start without TLS'
 * ```
 */
export function startBlockedBy(input: StartInput): string | undefined {
  const reasons = [
    ...(input.config ? [`${input.config}: postgres does not start without the cluster's pg_hba.conf`] : []),
    ...(input.tls && !input.tlsOptional ? [`${input.tls}: postgres does not start without TLS`] : []),
  ];
  return reasons.length > 0 ? `waiting for the operator: ${reasons.join('; ')}` : undefined;
}
