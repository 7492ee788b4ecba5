/**
 * This agent's identity on the peer API: an ECDSA P-256 key of this Pod's own. The agent reports
 * the public half (InstanceReport.peerKey); the operator certifies it as this instance on the
 * agent's Pod (ANNOTATION.peerCertificate), which the agent itself may not write.
 *
 * The key is kept in the Pod's run volume (mode 0600, gone with the Pod), beside the PostgreSQL
 * keys: an agent restarted in its Pod keeps its certified identity, so it can rank, vouch and be
 * asked at once, even while the operator or the API server is down (the failsafe mode needs every
 * member's answer then). Only this Pod can read it, so an instance still speaks only as itself.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, X509Certificate } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { peerCommonName, splitPeerCertificate } from '../../contract/index.js';
import type { PeerTls } from './peer-client.js';

const PEER_KEY_FILE = 'peer.key';

export class PeerIdentity {
  /** SPKI PEM, for the report. */
  readonly publicKeyPem: string;
  readonly #privateKey: KeyObject;
  readonly #privateKeyPem: string;

  /** A new key, or the one in `privateKeyPem`. */
  constructor(privateKeyPem?: string) {
    const privateKey = privateKeyPem
      ? createPrivateKey(privateKeyPem)
      : generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    this.publicKeyPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
    this.#privateKey = privateKey;
    this.#privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  /**
   * The identity kept in `dir` (the Pod's run volume), made and kept there if there is none yet
   * or it cannot be read.
   *
   * @example
   * ```ts
   * const identity = PeerIdentity.kept(config.runDir);
   * ```
   */
  static kept(dir: string): PeerIdentity {
    const path = join(dir, PEER_KEY_FILE);
    try {
      return new PeerIdentity(readFileSync(path, 'utf8'));
    } catch {
      const identity = new PeerIdentity();
      try {
        writeFileSync(path, identity.#privateKeyPem, { mode: 0o600 });
        chmodSync(path, 0o600); // the mode above applies only to a file it creates
      } catch {
        // Kept in memory only: a restart then needs the operator to certify its next key.
      }
      return identity;
    }
  }

  /**
   * The peer API's TLS from the Pod's certificate annotation, once it certifies this key as
   * `instance` of `cluster`; undefined before (or when it is for an older key).
   *
   * @example
   * ```ts
   * const tls = identity.tlsFrom(pod.metadata?.annotations?.[ANNOTATION.peerCertificate], 'hippo', 'hippo-i-0');
   * ```
   */
  tlsFrom(annotation: string | undefined, cluster: string, instance: string): PeerTls | undefined {
    const { cert, ca } = splitPeerCertificate(annotation);
    if (!cert || !ca) return undefined;
    try {
      const leaf = new X509Certificate(cert);
      if (leaf.subject !== `CN=${peerCommonName(cluster, instance)}`) return undefined;
      if (!leaf.checkPrivateKey(this.#privateKey)) return undefined;
    } catch {
      return undefined;
    }
    return { cert, key: this.#privateKeyPem, ca, cluster };
  }
}
