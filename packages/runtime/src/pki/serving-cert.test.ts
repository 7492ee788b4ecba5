/** Certificates for peers that are TLS server and client at once (pgBackRest's TLS server), on the loopback. */
import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { connect, createServer } from 'node:tls';
import {
  certifyPublicKey,
  createCertificateAuthority,
  createServingCertificate,
  type ServingCertificate,
  servingCertificateProblem,
} from './serving-cert.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/**
 * Whether a server holding `server` accepts a client holding `client` in mutual TLS: undefined
 * when it does (the client authorized), else the server's error. TLS 1.3 checks the client's
 * certificate after the client considers itself connected, so only the server side tells.
 */
async function handshake(server: ServingCertificate, client: ServingCertificate): Promise<Error | undefined> {
  const listener = createServer({
    cert: server.certPem,
    key: server.keyPem,
    ca: server.caCertPem,
    requestCert: true,
    rejectUnauthorized: true,
  });
  const accepted = new Promise<Error | undefined>((resolve) => {
    listener.on('secureConnection', (socket) => {
      resolve(socket.authorized ? undefined : new Error(String(socket.authorizationError)));
      socket.end();
    });
    listener.on('tlsClientError', (error) => resolve(error));
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  const socket = connect({
    host: '127.0.0.1',
    port,
    cert: client.certPem,
    key: client.keyPem,
    ca: client.caCertPem,
    // pgBackRest verifies the server by the address it dialled; here the test only checks the client side.
    checkServerIdentity: () => undefined,
  });
  socket.on('error', () => {}); // the refused case ends in a reset the server's result already tells
  try {
    return await accepted;
  } finally {
    socket.destroy();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  }
}

describe('certificates for TLS peers (commonName, clientAuth, a kept CA)', () => {
  it('names the subject as asked and keeps the default (the first name) otherwise', async () => {
    const named = await createServingCertificate({ ipAddresses: ['10.1.2.3'], commonName: 'pgbackrest@hippo' });
    assert.equal(new X509Certificate(named.certPem).subject, 'CN=pgbackrest@hippo');
    const plain = await createServingCertificate({ dnsNames: ['guard.ops.svc'], ipAddresses: ['10.1.2.3'] });
    assert.equal(new X509Certificate(plain.certPem).subject, 'CN=guard.ops.svc');
  });

  it('adds clientAuth beside serverAuth only when asked', async () => {
    const peer = await createServingCertificate({ ipAddresses: ['10.1.2.3'], clientAuth: true });
    assert.deepEqual(new X509Certificate(peer.certPem).keyUsage?.sort(), [SERVER_AUTH, CLIENT_AUTH].sort());
    const server = await createServingCertificate({ ipAddresses: ['10.1.2.3'] });
    assert.deepEqual(new X509Certificate(server.certPem).keyUsage, [SERVER_AUTH]);
  });

  it('issues every peer from one kept CA, whose name is the caller’s', async () => {
    const ca = await createCertificateAuthority({ commonName: 'hippo-pgbackrest-ca' });
    const caCert = new X509Certificate(ca.caCertPem);
    assert.equal(caCert.subject, 'CN=hippo-pgbackrest-ca');
    assert.ok(caCert.ca);
    const a = await createServingCertificate({ ipAddresses: ['10.0.0.1'], clientAuth: true, ca });
    const b = await createServingCertificate({ ipAddresses: ['10.0.0.2'], clientAuth: true, ca });
    assert.equal(a.caCertPem, ca.caCertPem);
    assert.ok(new X509Certificate(a.certPem).checkIssued(caCert));
    assert.ok(new X509Certificate(b.certPem).checkIssued(caCert));
    assert.equal(servingCertificateProblem(a, { ipAddresses: ['10.0.0.1'] }), undefined);
    assert.match(servingCertificateProblem(a, { ipAddresses: ['10.0.0.2'] })?.reason ?? '', /lacks the IP/);
  });

  it('lets one certificate serve and authenticate a client in mutual TLS; without clientAuth the server refuses it', async () => {
    const ca = await createCertificateAuthority();
    const server = await createServingCertificate({ ipAddresses: ['127.0.0.1'], clientAuth: true, ca });
    const client = await createServingCertificate({ ipAddresses: ['127.0.0.2'], clientAuth: true, ca });
    assert.equal(await handshake(server, client), undefined);
    const serverOnly = await createServingCertificate({ ipAddresses: ['127.0.0.2'], ca });
    const refused = await handshake(server, serverOnly);
    assert.ok(refused instanceof Error, 'a certificate without clientAuth is refused as a client certificate');
  });

  it("certifies a public key whose private half the CA's holder never sees, and the pair passes mutual TLS", async () => {
    const ca = await createCertificateAuthority({ commonName: 'hippo-ca' });
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const certPem = await certifyPublicKey({
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      commonName: 'peer@hippo/hippo-1',
      clientAuth: true,
      ca,
    });
    const cert = new X509Certificate(certPem);
    assert.equal(cert.subject, 'CN=peer@hippo/hippo-1');
    assert.ok(
      cert.checkIssued(new X509Certificate(ca.caCertPem)) && cert.verify(new X509Certificate(ca.caCertPem).publicKey),
    );
    assert.ok(cert.checkPrivateKey(privateKey), 'the certificate is for the holder’s key');
    const holder = { ...ca, certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    const server = await createServingCertificate({ ipAddresses: ['127.0.0.1'], clientAuth: true, ca });
    assert.equal(await handshake(server, holder), undefined);
    assert.equal(await handshake(holder, server), undefined, 'it serves too');
  });
});
