/**
 * The operator's side of a switchover request. Pure.
 *
 * The user (or a rolling update) asks on the cluster (ANNOTATION.switchover). The operator turns a
 * standing request into one order with a fresh token on the current primary's Pod
 * (ANNOTATION.switchoverOrder) and records the request, the primary and the token in
 * `status.switchover`. The request ends when the primary changed (completed) or when that primary
 * echoes the token in its report while it still is the primary (refused or failed: its agent's
 * Event says why); then the order and the request are cleared. Any other order on any Pod is stale
 * and cleared too, so a new primary's Pod never carries one: each request is served at most once,
 * and a request set again after it was cleared is a new one (a new token).
 *
 * The order on the Pod is a record of its own: a status write lost after the order was written
 * (the reconcile failed later) does not make the request a new one. Hence the ending removes the
 * request before the orders (switchover-actions.ts): while a request stands, its order does too.
 */
import { formatSwitchoverOrder, parseSwitchoverOrder } from '../../contract/index.js';

/** A switchover in progress, as `status.switchover` records it. */
export interface SwitchoverInProgress {
  /** The cluster annotation's value being served. */
  readonly request: string;
  /** The primary when the request was first seen: the Pod that carries the order. */
  readonly from: string;
  /** The order's token; absent in a status written before orders existed. */
  readonly token?: string;
}

/** An instance Pod, as far as switchovers go. */
export interface SwitchoverMember {
  readonly name: string;
  /** ANNOTATION.switchoverOrder on its Pod, as written. */
  readonly order?: string;
  /** The token its report says it served (`switchoverServed`). */
  readonly served?: string;
}

export interface SwitchoverInput {
  /** ANNOTATION.switchover on the cluster; undefined when nobody asks. */
  readonly request: string | undefined;
  /** `status.switchover` as last written. */
  readonly known: SwitchoverInProgress | undefined;
  /** The ready primary now (status.primary); undefined mid-handover. */
  readonly primary: string | undefined;
  /** The instances that are replicas now: a named target should be one. */
  readonly replicas: readonly string[];
  readonly members: readonly SwitchoverMember[];
  /** The token a new request gets (the caller makes it unique). */
  readonly newToken: string;
}

export interface SwitchoverEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

export interface SwitchoverStep {
  /** `status.switchover` from now on. */
  readonly status: SwitchoverInProgress | undefined;
  readonly events: readonly SwitchoverEvent[];
  /** The order to write on a Pod. */
  readonly order?: { readonly pod: string; readonly value: string };
  /** Pods whose order is to be removed. */
  readonly clearOrders: readonly string[];
  /** Remove the cluster's request: it was served. */
  readonly clearRequest: boolean;
}

/**
 * @example
 * ```ts
 * planSwitchover({ request: '*', known: undefined, primary: 'db-i-0', replicas: ['db-i-1'], members: [{ name: 'db-i-0' }], newToken: 't1' });
 * // { status: { request: '*', from: 'db-i-0', token: 't1' }, order: { pod: 'db-i-0', value: 't1:*' }, … }
 * ```
 */
export function planSwitchover(input: SwitchoverInput): SwitchoverStep {
  const { request, primary, members } = input;
  const known = inProgress(input);
  /** The Pods with an order, but `keep` (whose order stays, or is written anew). */
  const ordersBut = (keep?: string) =>
    members.filter((m) => m.order !== undefined && m.name !== keep).map((m) => m.name);
  const ended = (events: readonly SwitchoverEvent[]): SwitchoverStep => ({
    status: undefined,
    events,
    clearOrders: ordersBut(),
    clearRequest: true,
  });
  if (request === undefined) return { status: undefined, events: [], clearOrders: ordersBut(), clearRequest: false };

  if (known?.token !== undefined) {
    if (primary !== undefined && primary !== known.from)
      return ended([
        { type: 'Normal', reason: 'SwitchoverCompleted', message: `switchover done: ${known.from} → ${primary}` },
      ]);
    const from = members.find((m) => m.name === known.from);
    if (primary === known.from && from?.served === known.token) return ended([]);
    const value = formatSwitchoverOrder({ token: known.token, target: request });
    // Written again only to the primary that has not served it: its Pod was recreated, or the
    // last write failed. Mid-handover (no primary) nothing is written.
    const rewrite = primary === known.from && from !== undefined && from.order !== value;
    return {
      status: known,
      events: [],
      ...(rewrite ? { order: { pod: known.from, value } } : {}),
      clearOrders: ordersBut(rewrite || from?.order === value ? known.from : undefined),
      clearRequest: false,
    };
  }

  // A new request (or another value than the one in progress): from the primary there is now.
  if (primary === undefined) return { status: undefined, events: [], clearOrders: ordersBut(), clearRequest: false };
  const order = { pod: primary, value: formatSwitchoverOrder({ token: input.newToken, target: request }) };
  const event: SwitchoverEvent =
    request !== '*' && !input.replicas.includes(request)
      ? {
          type: 'Warning',
          reason: 'SwitchoverTargetInvalid',
          message: `switchover target ${request} is not a replica of this cluster`,
        }
      : {
          type: 'Normal',
          reason: 'SwitchoverRequested',
          message: `switchover from ${primary} to ${request === '*' ? 'the best replica' : request} requested`,
        };
  return {
    status: { request, from: primary, token: input.newToken },
    events: [event],
    order,
    clearOrders: ordersBut(primary),
    clearRequest: false,
  };
}

/** The request in progress: as the status records it, or as an order on a Pod says. */
function inProgress(input: SwitchoverInput): SwitchoverInProgress | undefined {
  const { request, known } = input;
  if (request === undefined) return undefined;
  if (known?.token !== undefined && known.request === request) return known;
  for (const member of input.members) {
    const order = parseSwitchoverOrder(member.order);
    if (order?.target === request) return { request, from: member.name, token: order.token };
  }
  return undefined;
}
