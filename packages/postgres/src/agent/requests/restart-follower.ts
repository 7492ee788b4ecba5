/**
 * Follows this Pod's ANNOTATION.restartPostgres for the agent: a token not served yet becomes a
 * restart request (agent/requests/postgres-requests.ts) that the role cycle serves
 * (requests/restart-in-place.ts) and echoes in its report as `restartServed`.
 */
import { ANNOTATION } from '../../contract/index.js';
import type { AgentContext } from '../context.js';

/**
 * Asks for a restart whenever the Pod carries a token not served yet, now and on every change of
 * the Pods; returns the unsubscribe function.
 *
 * @example
 * ```ts
 * const unfollow = followRestartRequests(ctx);
 * ```
 */
export function followRestartRequests(ctx: AgentContext): () => void {
  const { view, config, state, requests } = ctx;
  const look = () => {
    const token = view.pod(config.podName)?.metadata?.annotations?.[ANNOTATION.restartPostgres];
    if (token && token !== state.snapshot().decisions.restartServed)
      requests.requestRestart(token, `the operator asked for a restart in place (${token})`);
  };
  const off = view.onPodsChange(look);
  // The cache may have listed already: a first list delivers no change to a late subscriber.
  look();
  return off;
}
