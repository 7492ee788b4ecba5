/**
 * The wire type of an agent's peer API (`GET /status` on POD_IP:8000): its report as of now, plus
 * whether it could be promoted. Candidates rank each other from this (fresh to the millisecond)
 * rather than from the Pod annotations (written every few seconds).
 */
import type { InstanceReport } from './instance-report.js';

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

/** The path the peer API serves the live status on. */
export const PEER_STATUS_PATH = '/status';
