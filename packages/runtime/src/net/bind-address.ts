/** `host:port` bind addresses, shared by the manager's health server and the webhook server. Pure. */

/**
 * Splits `host:port` (or `:port`, every interface) into its parts; throws on a bad port.
 *
 * @example
 * ```ts
 * parseBindAddress('127.0.0.1:8080'); // { host: '127.0.0.1', port: 8080 }
 * parseBindAddress(':9443'); // { host: undefined, port: 9443 }
 * ```
 */
export function parseBindAddress(bindAddress: string): { host: string | undefined; port: number } {
  const colon = bindAddress.lastIndexOf(':');
  const host = colon > 0 ? bindAddress.slice(0, colon) : undefined;
  const port = Number(bindAddress.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new RangeError(`bindAddress "${bindAddress}" must be host:port or :port with a port from 0 to 65535`);
  }
  return { host, port };
}
