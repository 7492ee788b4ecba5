/**
 * The wire type of an agent's peer API (`GET /status` on POD_IP:8000): its report as of now, plus
 * whether it could be promoted. Candidates rank each other from this (fresh to the millisecond)
 * rather than from the Pod annotations (written every few seconds).
 */
import { z } from 'zod';
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

const lsn = z.string().regex(/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/);

/**
 * What a peer's answer must look like before failover or switchover ranks it: the fields they
 * read, each checked (an LSN is an LSN). Anything else is no answer, so a malformed or hostile
 * reply makes the peer no candidate rather than breaking the decision.
 */
export const liveStatusWire = z.looseObject({
  name: z.string().min(1).max(253),
  candidate: z.boolean(),
  candidateWhy: z.string().max(1000).optional(),
  systemIdentifier: z.string().max(32),
  timeline: z.number().int().min(0),
  receivedLsn: lsn,
  replayedLsn: lsn,
  primaryLsnSeen: lsn.optional(),
  receiverStatus: z.string().max(64).nullable(),
});

/** The path the peer API serves the live status on. */
export const PEER_STATUS_PATH = '/status';

/**
 * The peer API's failsafe endpoint (`POST /failsafe` on POD_IP:8000): a primary that cannot reach
 * the API server asks every other member to vouch for it (see agent/plan/leadership/failsafe-plan.ts).
 */
export const PEER_FAILSAFE_PATH = '/failsafe';

/** What the primary sends: its identity as the Lease holder (its Pod name). */
export const failsafeRequest = z.object({ leader: z.string().min(1) });
export type FailsafeRequest = z.infer<typeof failsafeRequest>;

/** A member's answer; `accepted` only from a replica following that holder, which then will not take over. */
export const failsafeAnswer = z.object({
  name: z.string(),
  accepted: z.boolean(),
  /** Why not, when refused. */
  reason: z.string().optional(),
});
export type FailsafeAnswer = z.infer<typeof failsafeAnswer>;
