/**
 * The replica role: streams from the Lease holder, follows a new holder as soon as the Lease says
 * so, and, once the holder's Lease has expired, ranks the candidates (roles/failover.ts). Resolves
 * the next mode: lead (it holds the Lease now), rejoin (its WAL diverged) or undefined (stopping).
 */
import { join } from 'node:path';
import { holderOf, leaseExpiresAtMs } from '@kanri/runtime';
import { EVENT_REASON, names, ROLE } from '../../contract/index.js';
import type { AgentContext, Transition } from '../context.js';
import { writeFileIfChanged } from '../files.js';
import { leaseTimings } from '../lease-timings.js';
import { isVouchedFor } from '../plan/leadership/failsafe-plan.js';
import { planReplicaLap } from '../plan/leadership/replica-plan.js';
import { ANY_STANDBY, renderSynchronousStandbyNames } from '../plan/leadership/sync-plan.js';
import { servePostgresRequests } from '../requests/serve-requests.js';
import { considerFailover, warmRankingConnections } from './failover.js';
import { recloneReplica } from './reclone.js';

export async function runReplica(ctx: AgentContext, signal: AbortSignal): Promise<Transition | undefined> {
  const { config, files, postgres, state, view, log } = ctx;
  state.enter('follow', ROLE.replica, 'looking for the primary');
  const slot = names.slot(config.podName);
  let following: string | undefined;
  let followedHolder: string | undefined;
  let expiredSince: number | undefined;
  /** The hold end the peer connections were last opened for (roles/failover.ts). */
  let warmedFor: number | undefined;
  let lastDecision = '';
  const follow = (ip: string) => {
    files.setPrimary({ ip, slot, passfile: files.passfile, applicationName: config.podName }, slot);
    following = ip;
  };
  await writeFileIfChanged(join(config.pgdata, 'standby.signal'), '');
  while (!signal.aborted) {
    let waitMs = leaseTimings(ctx).retryPeriodMs;
    let noPrimary: string | undefined;
    try {
      const lease = view.lease.view ?? (await view.lease.refresh(signal));
      const holder = holderOf(lease);
      const { vouch } = state.snapshot();
      const { leaseDurationMs } = leaseTimings(ctx);
      const vouched = isVouchedFor(vouch, holder, performance.now(), leaseDurationMs);
      // A holder this replica vouched for keeps its hold until the vouch runs out (failsafe mode).
      const holdEndsAtMs = Math.max(leaseExpiresAtMs(lease), vouched && vouch ? vouch.atMs + leaseDurationMs : 0);
      const step = planReplicaLap({
        self: config.podName,
        diverged: ctx.divergence.line,
        walRemoved: ctx.walRemoved.confirmed,
        leaseExists: lease.exists,
        holder,
        expired: lease.exists && performance.now() >= leaseExpiresAtMs(lease),
        vouched,
      });
      switch (step.kind) {
        case 'rejoin':
          log.error({ line: step.line }, 'this replica has WAL the primary does not have: rewinding it');
          ctx.events.record(
            'Warning',
            EVENT_REASON.rewound,
            `${config.podName} diverged from the primary (${step.line.slice(0, 200)}); rewinding`,
          );
          return { mode: 'rejoin', holder, why: 'diverged replica' };
        case 'reclone':
          // A new lap of this role afterwards: it writes the agent's files into the new PGDATA.
          return (await recloneReplica(ctx, signal, holder, step.line)) ? { mode: 'follow' } : undefined;
        case 'confirm-lead':
          // Confirmed by a fresh read: a watch stalled by a network fault must not make it lead.
          if (holderOf(await view.lease.refresh(signal)) === config.podName) {
            log.info('this instance holds the leader Lease: becoming primary');
            return { mode: 'lead' };
          }
          break;
        case 'follow': {
          expiredSince = undefined;
          if (state.snapshot().decisions.failover?.startsWith('waiting')) state.decide('failover', undefined);
          const leader = view.leader(step.holder);
          if (leader.holder !== followedHolder) {
            followedHolder = leader.holder;
            state.forgetPrimaryLsn();
          }
          state.seePrimaryReport(leader.lsn);
          // Without a new holder's address there is nothing better to follow: keep the last primary.
          const ip = leader.podIP;
          if (ip && ip !== following) {
            if (following) log.info({ from: following, to: ip, leader: leader.holder }, 'following a new primary');
            follow(ip);
          } else if (!following) {
            files.setPrimary(undefined, slot);
          }
          // Wake just after the expiry: every ms here is a ms of RTO. Timers may fire a ms or so
          // early; the next pass then waits the rest.
          const untilExpiryMs = holdEndsAtMs - performance.now();
          waitMs = Math.min(waitMs, Math.max(1, untilExpiryMs + 2));
          // The holder is past its own renew deadline (it fences itself there): a ranking is near.
          // Seconds ahead, so the connections are open before it, not racing it.
          const { renewDeadlineMs } = leaseTimings(ctx);
          if (untilExpiryMs <= leaseDurationMs - renewDeadlineMs && warmedFor !== holdEndsAtMs) {
            warmedFor = holdEndsAtMs;
            warmRankingConnections(ctx, leader.holder);
          }
          break;
        }
        case 'consider-failover': {
          expiredSince ??= performance.now();
          const rankingStarted = performance.now();
          const decision = await considerFailover(ctx, lease, holder, expiredSince);
          if (decision.message !== lastDecision) {
            lastDecision = decision.message;
            log.info(
              {
                decision: decision.message,
                lastHolder: holder ?? null,
                rankedInMs: Math.round(performance.now() - rankingStarted),
                ...decision.timings,
                expiredForMs: Math.round(performance.now() - leaseExpiresAtMs(lease)),
              },
              'failover decision',
            );
            if (!decision.take)
              ctx.events.record('Normal', EVENT_REASON.failoverWaiting, `${config.podName}: ${decision.message}`);
          }
          state.decide('failover', decision.message);
          // The readiness message too: the operator shows it in the cluster's Ready condition.
          noPrimary = `no primary (the leader Lease ${holder ? `of ${holder} expired` : 'is free'}): ${decision.message}`;
          // With the decision, not after the files below: a report taken between the two would
          // carry the decision beside a readiness message from before it (CI saw one).
          state.setPhase(noPrimary);
          if (decision.takeover) return { mode: 'lead', takeover: decision.takeover };
          // Synchronous mode: the first commit waits for a replica streaming from the new primary,
          // and a replication connection took 28–91 ms on a busy machine (bench:failover --sync,
          // 2026-12-03: a new WAL receiver, TLS). So stream from the winner while it takes the Lease
          // and promotes, as a cascading standby: postgres follows its timeline switch on that
          // connection. Harmless if it does not win: a standby makes no WAL of its own, and the
          // Lease's holder is followed as soon as there is one.
          const winnerIp =
            decision.best && view.ha.synchronousNumber > 0 ? view.leader(decision.best).podIP : undefined;
          if (winnerIp && winnerIp !== following) {
            log.info(
              { from: following ?? null, to: winnerIp, winner: decision.best },
              "following the ranking's winner",
            );
            follow(winnerIp);
          }
          break;
        }
        case 'wait':
          break;
      }
      // A standby ignores synchronous_standby_names. Carrying the value a failover's leadership
      // starts with (roles/primary.ts) lets it promote before it writes any file
      // (plan/leadership/leadership-plan.ts): the write and its fsyncs took up to 110 ms before the first commit.
      files.setSynchronousStandbyNames(renderSynchronousStandbyNames(view.ha.synchronousNumber, ANY_STANDBY));
      const changed = await files.write();
      // Its own change at once (a new primary to follow): the requests' write of the files would
      // only delay it.
      if (!postgres.wanted) postgres.start();
      else if (changed) postgres.reload();
      await servePostgresRequests(ctx, signal);
      state.setPhase(noPrimary ?? (following ? undefined : 'no primary to follow (nobody holds the leader Lease)'));
      const observed = await ctx.db.observe();
      state.seePrimaryLsn(observed.senderEndLsn);
    } catch (error) {
      if (signal.aborted) break;
      log.warn({ err: error }, 'cannot follow the primary; retrying');
    }
    await view.lease.changed.wait(waitMs, signal);
  }
  return undefined;
}
