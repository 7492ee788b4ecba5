/**
 * This Pod's pgBackRest identity: an ECDSA P-256 key made here and kept in the Pod's run volume
 * (mode 0600, gone with the Pod), whose public half the agent publishes on its Pod
 * (ANNOTATION_PGBACKREST_KEY), and the certificate the operator issues for it onto the Pod
 * (ANNOTATION_PGBACKREST_CERTIFICATE) once the Pod has its IP. The key never leaves the Pod: no
 * Secret holds it, so a compromised Pod can present only its own certificate. The certificate and
 * its CA are written beside the key for pgBackRest to read.
 */
import {
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type KeyObject,
  X509Certificate,
} from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type PgBackRestTlsFiles, pgbackrestClientName, splitPeerCertificate } from '../../contract/index.js';
import { writeFileIfChanged } from '../files.js';

const KEY_FILE = 'tls.key';

/** Whether `certPem` was issued for `ip` (pgBackRest checks the address it dialled against it). */
export function certificateNamesIp(certPem: string, ip: string): boolean {
  try {
    const names = new X509Certificate(certPem).subjectAltName ?? '';
    return names.split(', ').includes(`IP Address:${ip}`);
  } catch {
    return false;
  }
}

export class PgBackRestKey {
  /** SPKI PEM: what the Pod publishes. */
  readonly publicKeyPem: string;
  /** The private key's file, for pgBackRest (`tls-server-key-file`, `repoN-host-key-file`). */
  readonly keyFile: string;
  readonly #dir: string;
  readonly #privateKey: KeyObject;

  private constructor(dir: string, privateKey: KeyObject) {
    this.#dir = dir;
    this.#privateKey = privateKey;
    this.keyFile = join(dir, KEY_FILE);
    this.publicKeyPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  }

  /**
   * The key kept in `dir` (made there, mode 0600, when there is none or it cannot be read): an
   * agent restarted in its Pod keeps its certified identity.
   *
   * @example
   * ```ts
   * const key = PgBackRestKey.kept(join(config.runDir, 'pgbackrest-tls'));
   * ```
   */
  static kept(dir: string): PgBackRestKey {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, KEY_FILE);
    try {
      return new PgBackRestKey(dir, createPrivateKey(readFileSync(file, 'utf8')));
    } catch {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
      chmodSync(file, 0o600); // the mode above applies only to a file it creates
      return new PgBackRestKey(dir, privateKey);
    }
  }

  /** The shared secret of this key and another P-256 public key (ECDH), for the clone port's token. */
  agree(publicKey: KeyObject): Buffer {
    return diffieHellman({ privateKey: this.#privateKey, publicKey });
  }

  /**
   * Why the operator's certificate annotation cannot serve this Pod yet (absent, for another key,
   * IP or name, expired), or undefined when it can.
   */
  problem(annotation: string | undefined, cluster: string, podIP: string, now = new Date()): string | undefined {
    const { cert, ca } = splitPeerCertificate(annotation);
    if (!cert || !ca) return 'no certificate on the Pod yet';
    try {
      const leaf = new X509Certificate(cert);
      if (leaf.subject !== `CN=${pgbackrestClientName(cluster)}`) return `its subject is ${leaf.subject}`;
      if (!leaf.checkPrivateKey(this.#privateKey)) return 'it is for another key (an earlier agent’s)';
      if (!certificateNamesIp(cert, podIP)) return `it is not for this Pod's IP ${podIP}`;
      if (Date.parse(leaf.validTo) <= now.getTime()) return `it expired ${leaf.validTo}`;
      if (!leaf.verify(new X509Certificate(ca).publicKey)) return 'it was not issued by the CA beside it';
    } catch {
      return 'it is unreadable';
    }
    return undefined;
  }

  /**
   * Writes the Pod's certificate and its CA beside the key once the annotation certifies this key
   * for `podIP`; resolves the three files, or undefined before.
   *
   * @example
   * ```ts
   * const tls = await key.files(pod?.metadata?.annotations?.[ANNOTATION_PGBACKREST_CERTIFICATE], 'hippo', config.podIP);
   * ```
   */
  async files(annotation: string | undefined, cluster: string, podIP: string): Promise<PgBackRestTlsFiles | undefined> {
    if (this.problem(annotation, cluster, podIP)) return undefined;
    const { cert, ca } = splitPeerCertificate(annotation);
    const files = { ca: join(this.#dir, 'ca.crt'), cert: join(this.#dir, 'tls.crt'), key: this.keyFile };
    await writeFileIfChanged(files.ca, ca ?? '', 0o600);
    await writeFileIfChanged(files.cert, cert ?? '', 0o600);
    return files;
  }
}
