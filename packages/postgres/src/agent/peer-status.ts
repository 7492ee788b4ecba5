/**
 * The live status an agent serves on `GET /status` (POD_IP:8000): its report as of now, plus
 * whether it could be promoted and the highest primary LSN it has seen. Candidates rank each other
 * from this (fresh to the millisecond) rather than from the Pod annotations (written every few
 * seconds); an agent that does not answer within a second is not a candidate.
 */
import { type InstanceReport, PORT } from '../contract.js';

export interface LiveStatus extends InstanceReport {
  readonly name: string;
  /** Could be promoted now: a replica in recovery, not rejoining, cloning or stopping. */
  readonly candidate: boolean;
  readonly candidateWhy?: string;
  /** The highest LSN of the primary this agent knows of (its reports, the WAL receiver). */
  readonly primaryLsnSeen?: string;
  /** The WAL receiver's state, null when none runs. */
  readonly receiverStatus: string | null;
}

/** Fetches a peer's live status; undefined when it does not answer in time. */
export async function fetchPeerStatus(ip: string, timeoutMs = 1_000): Promise<LiveStatus | undefined> {
  try {
    const response = await fetch(`http://${ip}:${PORT.agent}/status`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return undefined;
    return (await response.json()) as LiveStatus;
  } catch {
    return undefined;
  }
}
