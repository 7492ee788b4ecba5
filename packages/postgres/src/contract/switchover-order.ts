/**
 * The operator's order to the primary to switch over, the value of ANNOTATION.switchoverOrder on
 * the primary's Pod: a token unique to one switchover request, and the request's target (a Pod
 * name, or `*` for the best replica). The agent echoes the token as its report's
 * `switchoverServed` once it served the order, so each request is served at most once: a new
 * request is a new token, and a new primary's Pod never carries the old one. Pure.
 */

export interface SwitchoverOrder {
  /** Unique to one request: `[a-z0-9-]`, no `:`. */
  readonly token: string;
  /** The request's value: a Pod name, or `*`. */
  readonly target: string;
}

/**
 * @example
 * ```ts
 * formatSwitchoverOrder({ token: 'm4k2x-9f3a', target: '*' }); // 'm4k2x-9f3a:*'
 * ```
 */
export function formatSwitchoverOrder(order: SwitchoverOrder): string {
  return `${order.token}:${order.target}`;
}

/**
 * The order an annotation value holds; undefined for none, or for a value no operator wrote.
 *
 * @example
 * ```ts
 * parseSwitchoverOrder('m4k2x-9f3a:db-i-1'); // { token: 'm4k2x-9f3a', target: 'db-i-1' }
 * ```
 */
export function parseSwitchoverOrder(value: string | undefined): SwitchoverOrder | undefined {
  const at = value?.indexOf(':') ?? -1;
  if (value === undefined || at <= 0 || at === value.length - 1) return undefined;
  return { token: value.slice(0, at), target: value.slice(at + 1) };
}
