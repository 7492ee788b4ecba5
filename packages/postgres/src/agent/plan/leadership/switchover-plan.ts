/**
 * Which replica a planned switchover hands the primary role to: of the replicas that answered,
 * are candidates, stream from this primary and lag at most the failover limit, the most advanced
 * (failover-plan's order). Pure.
 */
import type { LiveStatus } from '../../../contract/index.js';
import { lsnDistance, maxLsn } from '../lsn.js';
import { type Candidate, compareCandidates, formatBytes } from './failover-plan.js';

/**
 * A peer's live status as a failover candidate.
 *
 * @example
 * ```ts
 * const candidates = statuses.map(toCandidate);
 * ```
 */
export function toCandidate(status: LiveStatus): Candidate {
  return {
    name: status.name,
    eligible: status.candidate,
    ...(status.candidateWhy ? { why: status.candidateWhy } : {}),
    systemIdentifier: status.systemIdentifier,
    timeline: status.timeline,
    // A restarted WAL receiver reports from the start of its segment until it streams again.
    receivedLsn: maxLsn(status.receivedLsn, status.replayedLsn) ?? status.receivedLsn,
    replayedLsn: status.replayedLsn,
  };
}

export interface SwitchoverInput {
  readonly self: string;
  /** The annotation's value: a Pod name, or `*` for the best replica. */
  readonly request: string;
  /** The replicas asked (by the request's name, or all for `*`), with what they answered. */
  readonly peers: readonly { readonly name: string; readonly ip: string; readonly status: LiveStatus | undefined }[];
  /** application_names streaming from this primary now. */
  readonly streaming: ReadonlySet<string>;
  readonly currentLsn: string | undefined;
  readonly maximumLagBytes: number;
}

export type SwitchoverTarget = { readonly name: string; readonly ip: string } | { readonly why: string };

/**
 * @example
 * ```ts
 * planSwitchoverTarget({ self: 'pg-0', request: 'pg-0', peers: [], streaming: new Set(), currentLsn: '0/0', maximumLagBytes: 0 });
 * // { why: 'pg-0 is the primary already' }
 * ```
 */
export function planSwitchoverTarget(input: SwitchoverInput): SwitchoverTarget {
  const { self, request } = input;
  if (request === self) return { why: `${self} is the primary already` };
  if (request !== '*' && input.peers.length === 0) return { why: `${request} is not an instance of this cluster` };
  const problems: string[] = [];
  const fit = input.peers.filter(({ name, status }) => {
    const lag = status ? lsnDistance(status.receivedLsn, input.currentLsn) : 0;
    const problem = !status
      ? 'its agent does not answer'
      : !status.candidate
        ? (status.candidateWhy ?? 'not a candidate')
        : !input.streaming.has(status.name)
          ? 'it is not streaming from this primary'
          : lag > input.maximumLagBytes
            ? `it lags ${formatBytes(lag)} > ${formatBytes(input.maximumLagBytes)}`
            : undefined;
    if (problem) problems.push(`${status?.name ?? name}: ${problem}`);
    return problem === undefined;
  });
  const best = fit
    .map((f) => ({ ip: f.ip, candidate: toCandidate(f.status as LiveStatus) }))
    .sort((a, b) => compareCandidates(a.candidate, b.candidate))[0];
  if (!best) return { why: problems.join('; ') || 'no replica to switch over to' };
  return { name: best.candidate.name, ip: best.ip };
}
