/** Kubernetes' MicroTime wire format, which Leases (renewTime, acquireTime) and events.k8s.io Events (eventTime) use. Pure. */

/**
 * Formats a date as Kubernetes' MicroTime (`2006-01-02T15:04:05.000000Z`, RFC 3339 with six
 * fractional digits). JavaScript dates stop at milliseconds, so the last three digits are zero.
 *
 * @example
 * ```ts
 * import { formatMicroTime } from '@kanri/timing';
 *
 * formatMicroTime(new Date(0)); // '1970-01-01T00:00:00.000000Z'
 * await leases.patch('leader', { spec: { renewTime: formatMicroTime(new Date()) } }, { namespace, type: 'merge' });
 * ```
 */
export function formatMicroTime(date: Date): string {
  return `${date.toISOString().slice(0, -1)}000Z`;
}
