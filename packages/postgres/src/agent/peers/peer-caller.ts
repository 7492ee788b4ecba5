/**
 * Which instance made a peer API request, as its mutual TLS certificate says (peer-server.ts sets
 * it before the handler runs): a member may speak only as itself, so a replica cannot ask to be
 * vouched for as the primary. Apart from the server so the handler needs no TLS to be tested.
 */
import type { IncomingMessage } from 'node:http';

const callers = new WeakMap<IncomingMessage, string>();

/** Records `instance` as the caller of `request`. */
export function setPeerCaller(request: IncomingMessage, instance: string): void {
  callers.set(request, instance);
}

/**
 * The instance whose certificate made this request, when it came over the peer API's mutual TLS;
 * undefined over plain HTTP (an agent that has no certificate yet), where no vouch is given.
 *
 * @example
 * ```ts
 * const caller = peerCaller(request);
 * if (caller === undefined || caller !== body.leader) refuse();
 * ```
 */
export function peerCaller(request: IncomingMessage): string | undefined {
  return callers.get(request);
}
