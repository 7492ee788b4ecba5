/**
 * A primary on a full data volume hands over to a replica with room (plan/leadership/step-down-plan.ts
 * decides): it releases the Lease when postgres cannot run, or switches over cleanly when postgres
 * runs but cannot write. Either way within seconds, instead of after the kubelet's liveness probe
 * restarted this agent (a postgres that cannot run), or never (one that runs).
 */
import { sleepUnlessAborted } from '@kanri/timing';
import { EVENT_REASON, readPodReport } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { fetchPeerStatus } from '../peers/peer-status.js';
import { planStepDown, stepDownDue } from '../plan/leadership/step-down-plan.js';
import type { PrimarySession } from './primary-session.js';
import { switchOverFromFullVolume } from './switchover.js';

const CHECK_EVERY_MS = 1_000;
/** After a switch-over that did not hand over (postgres was restarted): the next attempt. */
const SWITCH_OVER_RETRY_MS = 30_000;

/** Runs while `leadership` lasts; once it hands over, it records why in the session. */
export async function watchStepDown(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
): Promise<void> {
  const { config, log } = ctx;
  let answeredAt = performance.now();
  let fullSince: number | undefined;
  let retryAt = 0;
  /**
   * A switch-over under way. Not awaited here: after a failed one it restarts postgres and waits
   * for it to answer, which on a full volume may be never, and the release below must go on.
   */
  let attempt: Promise<void> | undefined;
  /** Said once per episode: the reason's own clock would make every check a new line. */
  let warned = false;
  while (!leadership.aborted && session.steppedDown === undefined) {
    await sleepUnlessAborted(CHECK_EVERY_MS, leadership);
    if (leadership.aborted) break;
    // A switchover stops postgres on purpose: that is no outage.
    if (session.switching) {
      answeredAt = performance.now();
      continue;
    }
    try {
      const answering = await ctx.db.ping();
      const diskFull = await ctx.diskFull();
      const now = performance.now();
      if (answering) answeredAt = now;
      fullSince = diskFull === undefined ? undefined : (fullSince ?? now);
      if (diskFull === undefined) warned = false;
      const timing = {
        downForMs: answering ? 0 : now - answeredAt,
        fullForMs: fullSince === undefined ? 0 : now - fullSince,
        diskFull,
      };
      // Peers are asked only once the rest holds: not every second of a healthy primary's life.
      if (!stepDownDue(timing)) continue;
      // After a switch-over that did not hand over, only a release (postgres down) goes ahead: a
      // shutdown checkpoint that found no room leaves postgres crashed, and its restart fails too.
      if (timing.downForMs === 0 && (now < retryAt || attempt)) continue;
      const decision = planStepDown({ ...timing, others: await askOthers(ctx) });
      if (decision.action === 'stay') {
        if (decision.waiting && !warned) log.warn({ why: decision.waiting }, 'not stepping down');
        warned ||= decision.waiting !== undefined;
        continue;
      }
      const release = decision.action === 'release';
      log.error({ why: decision.why }, `STEPPING DOWN: ${release ? 'releasing' : 'handing over'} the leader Lease`);
      ctx.events.record(
        'Warning',
        EVENT_REASON.steppedDown,
        `${config.podName} ${release ? 'gave up' : 'hands over'} the leader Lease: ${decision.why}`,
      );
      if (release) {
        ctx.state.decide('failover', `stepped down: ${decision.why}`);
        session.stepDown(decision.why);
      } else {
        retryAt = now + SWITCH_OVER_RETRY_MS;
        const why = decision.why;
        attempt = switchOverFromFullVolume(ctx, session, leadership, decision.to, why)
          .then((handed) => {
            if (handed) session.stepDown(why);
          })
          .catch((error: unknown) => log.warn({ err: error }, 'handing over from a full volume failed'))
          .finally(() => {
            attempt = undefined;
          });
      }
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
