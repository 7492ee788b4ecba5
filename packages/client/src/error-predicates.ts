/**
 * Questions a `catch` block asks about a client error, as type guards, and controller-runtime's
 * `IgnoreNotFound` for the common "already gone is fine" case. They test the error classes (never
 * `status`, which is the server's Status object, not the HTTP code).
 */
import { AlreadyExistsError, ConflictError, NotFoundError } from './errors.js';

/**
 * True when the object (or its namespace, or the resource) does not exist: HTTP 404.
 *
 * @example
 * ```ts
 * try {
 *   await client.resource('v1', 'Secret').get('tls', { namespace: 'web' });
 * } catch (error) {
 *   if (!isNotFound(error)) throw error;
 *   // create it
 * }
 * ```
 */
export function isNotFound(error: unknown): error is NotFoundError {
  return error instanceof NotFoundError;
}

/**
 * True when a create found an object of that name already there: HTTP 409 with reason
 * `AlreadyExists`. Distinct from {@link isConflict}, which is a stale write.
 *
 * @example
 * ```ts
 * try {
 *   await client.resource('v1', 'ConfigMap').create(configMap);
 * } catch (error) {
 *   if (!isAlreadyExists(error)) throw error;
 * }
 * ```
 */
export function isAlreadyExists(error: unknown): error is AlreadyExistsError {
  return error instanceof AlreadyExistsError;
}

/**
 * True when an update or delete carried a resourceVersion (or other precondition) the object no
 * longer has: HTTP 409 with reason `Conflict`. Re-read and try again. Not true for
 * {@link isAlreadyExists}, though both are 409.
 *
 * @example
 * ```ts
 * try {
 *   await leases.update(edited, { namespace });
 * } catch (error) {
 *   if (!isConflict(error)) throw error;
 *   // someone else wrote first: read again
 * }
 * ```
 */
export function isConflict(error: unknown): error is ConflictError {
  return error instanceof ConflictError;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && 'then' in value && typeof value.then === 'function';
}

/**
 * Treats "not found" as success, as controller-runtime's `client.IgnoreNotFound` does.
 *
 * Given a promise, resolves to its value, or to `undefined` when it rejects with a
 * {@link NotFoundError}; any other rejection passes through. Given an error (as a `.catch`
 * handler), returns `undefined` for a NotFoundError and rethrows anything else.
 *
 * @example
 * ```ts
 * // Deleting what is already gone is done.
 * await ignoreNotFound(client.resource('v1', 'Pod').delete('web-0', { namespace: 'web' }));
 * const secret = await ignoreNotFound(client.resource('v1', 'Secret').get('tls', { namespace: 'web' }));
 * // or as a handler
 * await client.resource('v1', 'Pod').delete('web-0', { namespace: 'web' }).catch(ignoreNotFound);
 * ```
 */
export function ignoreNotFound<T>(promise: PromiseLike<T>): Promise<T | undefined>;
export function ignoreNotFound(error: unknown): undefined;
export function ignoreNotFound(subject: unknown): Promise<unknown> | undefined {
  if (isPromiseLike(subject))
    return Promise.resolve(subject).then(undefined, (error: unknown) => ignoreNotFound(error));
  if (isNotFound(subject)) return undefined;
  throw subject;
}
