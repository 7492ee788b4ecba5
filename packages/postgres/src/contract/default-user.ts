/**
 * `spec.users` as the operator and the agents act on it. As in PGO, a cluster whose spec omits
 * `users` gets one user named after the cluster, owning a database of that name; `users: []`
 * declares none. A cluster named `postgres` gets none: that role is the superuser the operator
 * manages itself. Pure.
 */
import { SUPERUSER } from './names.js';

/**
 * The declared users, or PGO's default user when `users` is omitted.
 *
 * @example
 * ```ts
 * effectiveUsers(undefined, 'hippo'); // [{ name: 'hippo', databases: ['hippo'] }]
 * effectiveUsers([], 'hippo'); // []
 * ```
 */
export function effectiveUsers<U extends { readonly name: string; readonly databases?: readonly string[] }>(
  users: readonly U[] | undefined,
  cluster: string,
): readonly U[] {
  if (users !== undefined) return users;
  if (!cluster || cluster === SUPERUSER) return [];
  // Every other field of a user entry is optional: the default has only these two.
  return [{ name: cluster, databases: [cluster] } as unknown as U];
}
