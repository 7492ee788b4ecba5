/**
 * The peer API's mutual TLS with one identity per instance, on the loopback: each agent's key is
 * its own (agent/peers/peer-identity.ts), certified by the cluster's CA as that instance; a caller learns
 * the instance it reached, and the server the instance that called.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CertificateAuthority, certifyPublicKey, createCertificateAuthority } from '@kanri/runtime';
import { PORT, peerCommonName } from '../../contract/index.js';
import { peerApiHandler } from './http-server.js';
import { PeerClient, type PeerTls } from './peer-client.js';
import { requestVouch } from './peer-failsafe.js';
import { PeerIdentity } from './peer-identity.js';
import { PeerServer } from './peer-server.js';
import { fetchPeerStatus } from './peer-status.js';

const CLUSTER = 'hippo';
/** A loopback address of its own: the peer API listens on PORT.peer. */
const ip = `127.${randomInt(100, 250)}.${randomInt(1, 250)}.${randomInt(1, 250)}`;

async function certified(ca: CertificateAuthority, cluster: string, instance: string): Promise<PeerTls> {
  const identity = new PeerIdentity();
  const cert = await certifyPublicKey({
    publicKeyPem: identity.publicKeyPem,
    commonName: peerCommonName(cluster, instance),
    clientAuth: true,
    ca,
  });
  const tls = identity.tlsFrom(`${cert}${ca.caCertPem}`, cluster, instance);
  assert.ok(tls, `${instance}'s certificate is for its key`);
  return tls;
}

describe('peer API: one identity per instance', () => {
  let ca: CertificateAuthority;
  let server: PeerServer;
  const vouched: string[] = [];

  before(async () => {
    ca = await createCertificateAuthority({ commonName: 'hippo-ca' });
    const source = {
      health: () => null,
      readiness: () => null,
      liveStatus: async () => ({ name: 'hippo-0' }),
      vouch: (request: { leader: string }) => {
        vouched.push(request.leader);
        return { name: 'hippo-0', accepted: true };
      },
    };
    server = await PeerServer.start(ip, PORT.peer, await certified(ca, CLUSTER, 'hippo-0'), peerApiHandler(source));
  });
  after(() => server?.close());

  it("believes a peer only when its certificate names the instance dialled, and keeps an agent's key to itself", async () => {
    const peers = new PeerClient();
    peers.setTls(await certified(ca, CLUSTER, 'hippo-1'));
    try {
      assert.deepEqual(await peers.call({ name: 'hippo-0', ip }, '/status', { signal: AbortSignal.timeout(5_000) }), {
        status: 200,
        json: { name: 'hippo-0' },
      });
      await assert.rejects(
        peers.call({ name: 'hippo-2', ip }, '/status', { signal: AbortSignal.timeout(5_000) }),
        /the peer at \S+ presented peer@hippo\/hippo-0, not peer@hippo\/hippo-2/,
      );
      assert.equal(await fetchPeerStatus(peers, { name: 'hippo-2', ip }), undefined);
    } finally {
      peers.close();
    }
    const identity = new PeerIdentity();
    const other = new PeerIdentity();
    const forOther = await certifyPublicKey({
      publicKeyPem: other.publicKeyPem,
      commonName: peerCommonName(CLUSTER, 'hippo-1'),
      clientAuth: true,
      ca,
    });
    assert.equal(
      identity.tlsFrom(`${forOther}${ca.caCertPem}`, CLUSTER, 'hippo-1'),
      undefined,
      "another key's certificate",
    );
    assert.equal(other.tlsFrom(`${forOther}${ca.caCertPem}`, CLUSTER, 'hippo-2'), undefined, "another instance's name");
  });

  it('keeps an identity in the run volume, readable by its owner only, so a restarted agent keeps its certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kanri-peer-'));
    try {
      const first = PeerIdentity.kept(dir);
      assert.equal((await stat(join(dir, 'peer.key'))).mode & 0o777, 0o600);
      assert.equal(PeerIdentity.kept(dir).publicKeyPem, first.publicKeyPem, 'the same key after a restart');
      await writeFile(join(dir, 'peer.key'), 'garbage', { mode: 0o644 });
      await chmod(join(dir, 'peer.key'), 0o644);
      assert.notEqual(PeerIdentity.kept(dir).publicKeyPem, first.publicKeyPem, 'an unreadable key is replaced');
      assert.equal((await stat(join(dir, 'peer.key'))).mode & 0o777, 0o600, 'and its file is the owner’s alone again');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('lets a member ask to be vouched for only as itself, and no other cluster in', async () => {
    const peers = new PeerClient();
    peers.setTls(await certified(ca, CLUSTER, 'hippo-1'));
    try {
      const signal = () => AbortSignal.timeout(5_000);
      const forged = await requestVouch(peers, { name: 'hippo-0', ip }, { leader: 'hippo-2' }, signal());
      assert.deepEqual(forged, { problem: 'HTTP 403 without an answer' });
      const own = await requestVouch(peers, { name: 'hippo-0', ip }, { leader: 'hippo-1' }, signal());
      assert.deepEqual(own, { answer: { name: 'hippo-0', accepted: true } });
      assert.deepEqual(vouched, ['hippo-1'], 'the refused request never reached the decision');
    } finally {
      peers.close();
    }
    const stranger = new PeerClient();
    stranger.setTls({ ...(await certified(ca, 'other', 'other-0')), cluster: CLUSTER });
    try {
      const answer = await stranger.call({ name: 'hippo-0', ip }, '/status', { signal: AbortSignal.timeout(5_000) });
      assert.equal(answer.status, 403, "another cluster's peer, even from the same CA");
    } finally {
      stranger.close();
    }
  });
});
