/**
 * A primary whose postgres cannot run because its data volume is full gives the leader Lease up
 * (plan/step-down-plan.ts decides), so that a replica with room takes over within a failover's
 * time instead of after the kubelet's liveness probe restarted this agent.
 */
import { sleepUnlessAborted } from '@kanri/timing';
import { EVENT_REASON, readPodReport } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { fetchPeerStatus } from '../io/peer-status.js';
import { planStepDown, STEP_DOWN_AFTER_MS } from '../plan/step-down-plan.js';
import type { PrimarySession } from './primary-session.js';

const CHECK_EVERY_MS = 1_000;

/** Runs while `leadership` lasts; on a step-down it records why in the session and ends the campaign. */
export async function watchStepDown(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
): Promise<void> {
  const { config, log } = ctx;
  let answeredAt = performance.now();
  /** Said once per outage: the reason's own clock would make every check a new line. */
  let warned = false;
  while (!leadership.aborted && session.steppedDown === undefined) {
    await sleepUnlessAborted(CHECK_EVERY_MS, leadership);
    if (leadership.aborted) break;
    try {
      if (await ctx.db.ping()) {
        answeredAt = performance.now();
        warned = false;
        continue;
      }
      const downForMs = performance.now() - answeredAt;
      const diskFull = await ctx.diskFull();
      // Peers are asked only once the rest holds: not every second of a healthy primary's life.
      if (diskFull === undefined || downForMs < STEP_DOWN_AFTER_MS) continue;
      const decision = planStepDown({ downForMs, diskFull, others: await askOthers(ctx) });
      if (!decision.stepDown) {
        if (decision.waiting && !warned) log.warn({ why: decision.waiting }, 'not stepping down');
        warned ||= decision.waiting !== undefined;
        continue;
      }
      session.steppedDown = decision.why;
      log.error({ why: decision.why }, 'STEPPING DOWN: releasing the leader Lease');
      ctx.events.record(
        'Warning',
        EVENT_REASON.steppedDown,
        `${config.podName} gave up the leader Lease: ${decision.why}`,
      );
      ctx.state.decide('failover', `stepped down: ${decision.why}`);
      session.election.abort();
    } catch (error) {
      if (!leadership.aborted) log.warn({ err: error }, 'cannot check whether to step down; retrying');
    }
  }
}

/** Each other instance: is it a failover candidate now (its own answer), and is its volume full (its report)? */
async function askOthers(ctx: AgentContext) {
  const others = ctx.view.pods().filter((pod) => pod.metadata?.name && pod.metadata.name !== ctx.config.podName);
  return Promise.all(
    others.map(async (pod) => {
      const name = pod.metadata?.name ?? '';
      const ip = pod.status?.podIP;
      const live = ip ? await fetchPeerStatus(ctx.peers, { name, ip }) : undefined;
      const diskFull = readPodReport(pod)?.diskFull;
      return { name, candidate: live?.candidate === true, ...(diskFull ? { diskFull } : {}) };
    }),
  );
}
