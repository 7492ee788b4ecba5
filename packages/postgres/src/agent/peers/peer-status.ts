/** Asks a peer agent for its live status (see contract/peer-status.ts); an agent that does not answer in time is not a candidate. */
import { type LiveStatus, liveStatusWire, PEER_STATUS_PATH } from '../../contract/index.js';
import type { PeerAddress, PeerClient } from './peer-client.js';

/**
 * Fetches a peer's live status; undefined when it does not answer in time, is not a peer (mutual
 * TLS), or does not answer with a live status.
 *
 * @example
 * ```ts
 * const status = await fetchPeerStatus(ctx.peers, { name: 'hippo-i-1', ip: '10.0.0.7' }); // undefined: not a candidate
 * ```
 */
export async function fetchPeerStatus(
  peers: PeerClient,
  peer: PeerAddress,
  timeoutMs = 1_000,
): Promise<LiveStatus | undefined> {
  try {
    const response = await peers.call(peer, PEER_STATUS_PATH, { signal: AbortSignal.timeout(timeoutMs) });
    if (response.status !== 200) return undefined;
    const parsed = liveStatusWire.safeParse(response.json);
    return parsed.success ? (parsed.data as unknown as LiveStatus) : undefined;
  } catch {
    return undefined;
  }
}
