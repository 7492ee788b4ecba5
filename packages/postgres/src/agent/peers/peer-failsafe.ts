/** Asks a peer agent to vouch for this primary (`POST /failsafe`, see contract/peer-status.ts). */
import { type FailsafeAnswer, type FailsafeRequest, failsafeAnswer, PEER_FAILSAFE_PATH } from '../../contract/index.js';
import type { PeerAddress, PeerClient } from './peer-client.js';

/**
 * The peer's answer, or why none came (a refused connection, `signal` aborting, a reply that is
 * not an answer). Never throws: a member that cannot be asked has not vouched.
 *
 * @example
 * ```ts
 * await requestVouch(ctx.peers, { name: 'hippo-instance1-1', ip: '10.0.0.7' }, { leader: 'hippo-instance1-0' }, AbortSignal.timeout(1_000));
 * // { answer: { name: 'hippo-instance1-1', accepted: true } }, or { problem: 'no answer in time' }
 * ```
 */
export async function requestVouch(
  peers: PeerClient,
  peer: PeerAddress,
  request: FailsafeRequest,
  signal: AbortSignal,
): Promise<{ answer: FailsafeAnswer } | { problem: string }> {
  try {
    const response = await peers.call(peer, PEER_FAILSAFE_PATH, { method: 'POST', body: request, signal });
    const parsed = failsafeAnswer.safeParse(response.json);
    if (!parsed.success) return { problem: `HTTP ${response.status} without an answer` };
    // A 200 alone is not a vouch: only an answer that says so.
    return { answer: { ...parsed.data, accepted: response.status === 200 && parsed.data.accepted } };
  } catch (error) {
    return { problem: signal.aborted ? 'no answer in time' : describe(error) };
  }
}

/** fetch hides the cause (ECONNREFUSED, …) behind "fetch failed"; a TLS refusal says why itself. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause ? `${error.message}: ${cause}` : error.message;
}
