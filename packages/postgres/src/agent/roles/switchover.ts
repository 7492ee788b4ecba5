/**
 * A planned switchover, served by the primary: stop writes cleanly, wait until the chosen replica
 * has received the shutdown checkpoint, and hand the Lease over to it. The operator orders it on
 * this Pod (ANNOTATION.switchoverOrder, contract/switchover-order.ts); each order's token is
 * served once, switched over, refused or failed, and echoed as the report's `switchoverServed`.
 * A failure leaves a reason and the primary running.
 */
import { handOverLease, holderOf } from '@kanri/runtime';
import { sleepUnlessAborted } from '@kanri/timing';
import { ANNOTATION, EVENT_REASON, parseSwitchoverOrder } from '../../contract/index.js';
import type { AgentContext } from '../context.js';
import { fetchPeerStatus } from '../peers/peer-status.js';
import { planSwitchoverTarget } from '../plan/leadership/switchover-plan.js';
import { parseLsn } from '../plan/lsn.js';
import { readControlData } from '../postgres/rewind.js';
import { untilAccepting } from '../retry.js';
import type { PrimarySession } from './primary-session.js';

/** How long a switchover waits for the target to receive the old primary's last WAL record. */
const SWITCHOVER_CATCH_UP_MS = 30_000;

export async function maybeSwitchover(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
): Promise<void> {
  const { config, view, state, log } = ctx;
  const order = parseSwitchoverOrder(view.pod(config.podName)?.metadata?.annotations?.[ANNOTATION.switchoverOrder]);
  if (!order || order.token === state.snapshot().decisions.switchoverServed) return;
  // Only the holder serves: an order left on a former primary's Pod is the operator's to clear.
  const lease = await view.lease.refresh(leadership);
  if (holderOf(lease) !== config.podName) return;
  const request = order.target;
  if (ctx.backups.archiveFailing && view.clusterAnnotation(ANNOTATION.switchoverForce) !== 'true') {
    const why = `WAL archiving fails (${ctx.backups.lastFailure?.reason ?? 'see WALArchiving'})`;
    state.decide('switchover', `waiting: ${why}; set ${ANNOTATION.switchoverForce}=true to go ahead anyway`);
    return;
  }
  // Echoed only with the outcome final: a refusal, or a switchover's end while the report still
  // says not ready. The operator reads an echo from a ready primary as a request that ended here.
  const served = () => state.decide('switchoverServed', order.token);
  const target = await chooseTarget(ctx, request);
  if ('why' in target) {
    state.decide('switchover', `refused ${request}: ${target.why}`);
    log.warn({ request, why: target.why }, 'switchover refused');
    ctx.events.record('Warning', EVENT_REASON.switchoverRefused, `switchover to ${request} refused: ${target.why}`);
    served();
    return;
  }
  await switchOverTo(ctx, session, leadership, target, { reason: `switchover requested (${request})`, served });
}

/**
 * Wakes the primary's tasks when the order on this Pod changes, so that it is served at once
 * instead of a task period later; returns the unsubscribe function.
 */
export function wakeOnSwitchoverOrder(ctx: AgentContext): () => void {
  const order = () => ctx.view.pod(ctx.config.podName)?.metadata?.annotations?.[ANNOTATION.switchoverOrder];
  let seen = order();
  return ctx.view.onPodsChange(() => {
    const now = order();
    if (now === seen) return;
    seen = now;
    ctx.primaryWakeup.wake();
  });
}

/**
 * Hands over from a primary whose data volume is full but whose postgres still runs (it refuses
 * every write that needs new space): a switchover to the best of `names`, the instances with room
 * (roles/step-down.ts). True once the Lease is handed over.
 */
export async function switchOverFromFullVolume(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
  names: readonly string[],
  full: string,
): Promise<boolean> {
  const target = await chooseTarget(ctx, '*', new Set(names));
  if ('why' in target) {
    ctx.log.warn({ why: target.why }, 'cannot hand over from a full data volume');
    ctx.state.decide('switchover', `cannot hand over from a full data volume: ${target.why}`);
    return false;
  }
  return switchOverTo(ctx, session, leadership, target, { reason: full });
}

/** Stops writes cleanly, waits until `target` has the final WAL, and hands the Lease over; true once handed. */
async function switchOverTo(
  ctx: AgentContext,
  session: PrimarySession,
  leadership: AbortSignal,
  target: { readonly name: string; readonly ip: string },
  request: {
    readonly reason: string;
    /** Records the order as served, once it is: handed over, or failed (postgres not yet back). */
    readonly served?: () => void;
  },
): Promise<boolean> {
  const { config, view, state, log, postgres } = ctx;
  const started = performance.now();
  const { name, ip } = target;
  log.info({ target: name }, 'switchover: stopping writes');
  session.beginSwitching();
  state.setPhase(`switching over to ${name}`, { report: true });
  let handed = false;
  try {
    // A clean shutdown: the WAL senders send everything up to the shutdown checkpoint first.
    await postgres.stop('fast', 30_000);
    const control = await readControlData(ctx.pgBin, config.pgdata, ctx.redactor);
    if (control.state !== 'shut down') throw new Error(`postgres did not shut down cleanly (${control.state})`);
    const final = parseLsn(control.checkpointLsn) ?? Number.POSITIVE_INFINITY;
    const deadline = performance.now() + SWITCHOVER_CATCH_UP_MS;
    let received: string | undefined;
    while (performance.now() < deadline && !leadership.aborted) {
      received = (await fetchPeerStatus(ctx.peers, { name, ip }, 1_000))?.receivedLsn;
      if ((parseLsn(received) ?? -1) > final) break;
      await sleepUnlessAborted(50);
    }
    if (!((parseLsn(received) ?? -1) > final))
      throw new Error(
        `${name} did not receive the final WAL ${control.checkpointLsn} (it has ${received ?? 'nothing'})`,
      );
    const written = await handOverLease(ctx.leaseRef, {
      from: config.podName,
      to: name,
      reason: request.reason,
      annotations: { [ANNOTATION.syncStandbys]: null },
      signal: leadership,
    });
    if (!written) throw new Error('could not hand the leader Lease over');
    view.lease.see(written);
    handed = true;
    const ms = Math.round(performance.now() - started);
    state.decide(
      'switchover',
      `switched over to ${name}: writes stopped, ${name} had all WAL up to ${control.checkpointLsn}, Lease handed over after ${ms} ms`,
    );
    log.info({ target: name, ms, finalLsn: control.checkpointLsn }, 'switchover: Lease handed over');
    ctx.events.record(
      'Normal',
      EVENT_REASON.switchover,
      `switchover from ${config.podName} to ${name} (Lease handed over in ${ms} ms)`,
    );
    request.served?.();
    session.lostTo(name);
  } catch (error) {
    const why = ctx.redactor.describe(error);
    log.error({ err: error, target: name }, 'switchover failed; staying primary');
    state.decide('switchover', `failed to switch over to ${name}: ${why}`);
    ctx.events.record('Warning', EVENT_REASON.switchoverRefused, `switchover to ${name} failed: ${why}`);
    // Writes are no longer being stopped: a postgres that does not come back (a full volume) is
    // an outage from here, which roles/step-down.ts must be able to see.
    session.endSwitching();
    request.served?.();
    if (!leadership.aborted) {
      postgres.start();
      await untilAccepting(ctx.db, leadership);
      state.setPhase(undefined, { report: true });
    }
  } finally {
    if (!handed) session.endSwitching();
  }
  return handed;
}

/** The switchover's target for `request`; `only` narrows the instances considered. */
async function chooseTarget(ctx: AgentContext, request: string, only?: ReadonlySet<string>) {
  const { config, view, db } = ctx;
  const rows = await db.query<{ name: string; state: string }>(
    'SELECT application_name AS name, state FROM pg_stat_replication',
  );
  const [current] = await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  const asked = view
    .pods()
    .filter(
      (p) =>
        p.metadata?.name !== config.podName &&
        p.status?.podIP &&
        (request === '*' || p.metadata?.name === request) &&
        (only === undefined || only.has(p.metadata?.name ?? '')),
    );
  const peers = await Promise.all(
    asked.map(async (p) => ({
      name: p.metadata?.name as string,
      ip: p.status?.podIP as string,
      status: await fetchPeerStatus(ctx.peers, { name: p.metadata?.name as string, ip: p.status?.podIP as string }),
    })),
  );
  return planSwitchoverTarget({
    self: config.podName,
    request,
    peers,
    streaming: new Set(rows.filter((r) => r.state === 'streaming').map((r) => r.name)),
    currentLsn: current?.lsn,
    maximumLagBytes: view.ha.maximumLagOnFailover,
  });
}
