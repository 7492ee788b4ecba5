/** What a former primary (or diverged replica) does next while rejoining, from the leader it sees. Pure. */

export interface RejoinInput {
  readonly self: string;
  readonly holder: string | undefined;
  readonly podIP: string | undefined;
  /** The holder reports itself ready: it can be rewound from. */
  readonly ready: boolean;
}

export type RejoinStep =
  | { readonly kind: 'lead' }
  | { readonly kind: 'rewind'; readonly holder: string; readonly podIP: string }
  | { readonly kind: 'wait' };

/**
 * @example
 * ```ts
 * planRejoin({ self: 'pg-0', holder: 'pg-1', podIP: '10.0.0.2', ready: true });
 * // { kind: 'rewind', holder: 'pg-1', podIP: '10.0.0.2' }
 * ```
 */
export function planRejoin(input: RejoinInput): RejoinStep {
  if (input.holder === input.self) return { kind: 'lead' };
  if (input.holder && input.podIP && input.ready) return { kind: 'rewind', holder: input.holder, podIP: input.podIP };
  return { kind: 'wait' };
}
