/**
 * How long the PostgreSQL certificates the operator issues live, and when they are renewed. A
 * year by default, renewed 30 days before the end; `KANRI_CERTIFICATE_VALIDITY_SECONDS` on the
 * operator shortens it (CloudNativePG's operator has the same knob), down to a minute for tests of
 * rotation. Renewal starts when a third of the lifetime remains, at most 30 days before the end,
 * so a short lifetime still leaves the reconcile time to renew. Pure.
 */

export const CERTIFICATE_VALIDITY_VARIABLE = 'KANRI_CERTIFICATE_VALIDITY_SECONDS';

export interface CertificateLifetime {
  /** Validity of a new certificate, in days (fractions allowed). */
  readonly validityDays: number;
  /** Renew once less than this remains, in days. */
  readonly renewBeforeDays: number;
}

const DAY_SECONDS = 86_400;
const DEFAULT_SECONDS = 365 * DAY_SECONDS;
const MIN_SECONDS = 60;

/**
 * The lifetime the environment asks for; throws naming the variable when it is not a whole number
 * of seconds, at least 60.
 *
 * @example
 * ```ts
 * certificateLifetime({}); // { validityDays: 365, renewBeforeDays: 30 }
 * certificateLifetime({ KANRI_CERTIFICATE_VALIDITY_SECONDS: '90' }).renewBeforeDays * 86_400; // 30
 * ```
 */
export function certificateLifetime(env: Readonly<Record<string, string | undefined>>): CertificateLifetime {
  const raw = env[CERTIFICATE_VALIDITY_VARIABLE];
  const seconds = raw === undefined || raw === '' ? DEFAULT_SECONDS : Number(raw);
  if (!Number.isInteger(seconds) || seconds < MIN_SECONDS)
    throw new Error(
      `${CERTIFICATE_VALIDITY_VARIABLE} must be a whole number of seconds, at least ${MIN_SECONDS}: got "${raw}"`,
    );
  return { validityDays: seconds / DAY_SECONDS, renewBeforeDays: Math.min(30, seconds / 3 / DAY_SECONDS) };
}

/**
 * Milliseconds until the first of `certificatesPem` enters its renewal window (0 when one already
 * has), or undefined when none can be read.
 *
 * @example
 * ```ts
 * renewalDueInMs([certPem], lifetime); // schedule the next reconcile no later than this
 * ```
 */
export function renewalDueInMs(
  notAfters: readonly (string | undefined)[],
  lifetime: Pick<CertificateLifetime, 'renewBeforeDays'>,
  now: Date = new Date(),
): number | undefined {
  const ends = notAfters.map((end) => (end ? Date.parse(end) : Number.NaN)).filter((end) => !Number.isNaN(end));
  if (ends.length === 0) return undefined;
  const due = Math.min(...ends) - lifetime.renewBeforeDays * 86_400_000;
  return Math.max(0, due - now.getTime());
}
