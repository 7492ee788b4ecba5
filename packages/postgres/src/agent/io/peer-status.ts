/** Asks a peer agent for its live status (see contract/peer-status.ts); an agent that does not answer in time is not a candidate. */
import { type LiveStatus, liveStatusWire, PEER_STATUS_PATH, PORT } from '../../contract/index.js';

/** Fetches a peer's live status; undefined when it does not answer in time, or not with a live status. */
export async function fetchPeerStatus(ip: string, timeoutMs = 1_000): Promise<LiveStatus | undefined> {
  try {
    const response = await fetch(`http://${ip}:${PORT.agent}${PEER_STATUS_PATH}`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) return undefined;
    const parsed = liveStatusWire.safeParse(await response.json());
    return parsed.success ? (parsed.data as unknown as LiveStatus) : undefined;
  } catch {
    return undefined;
  }
}
