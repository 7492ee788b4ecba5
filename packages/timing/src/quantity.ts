/**
 * Kubernetes quantities (`500m`, `1.5Gi`, `2e3`): the one parser every Kanri package uses, with
 * the semantics of apimachinery's `resource.Quantity`. Pure.
 *
 * What it follows from `resource.Quantity`: the grammar (a sign, digits with an optional fraction,
 * then a binary suffix `Ki`…`Ei`, a decimal one `n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`, or an
 * exponent `e3`/`E-2`); no surrounding spaces; values finer than a nano rounded up (away from zero)
 * to one; magnitudes above 2^63-1 capped there; `Value()` and `MilliValue()` rounded up, away from
 * zero. The arithmetic is exact (BigInt nanos), so `1.1k` is 1100, not 1100.0000000000002.
 */

const NUMBER = String.raw`(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)`;
const SUFFIX = '(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?';

/**
 * A Kubernetes quantity, signed: what {@link parseQuantity} reads. For schemas (a CRD `pattern`).
 *
 * @example
 * ```ts
 * QUANTITY_PATTERN.test('-1.5Gi'); // true
 * ```
 */
export const QUANTITY_PATTERN = new RegExp(`^[+-]?${NUMBER}${SUFFIX}$`);

/**
 * A Kubernetes quantity that is not negative, e.g. a volume's size.
 *
 * @example
 * ```ts
 * z.string().regex(NON_NEGATIVE_QUANTITY_PATTERN);
 * ```
 */
export const NON_NEGATIVE_QUANTITY_PATTERN = new RegExp(`^\\+?${NUMBER}${SUFFIX}$`);

const DECIMAL_EXPONENT: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_EXPONENT: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

const NANOS_PER_UNIT = 10n ** 9n;
/** resource.Quantity caps magnitudes at the largest int64 (in units). */
const MAX_NANOS = (2n ** 63n - 1n) * NANOS_PER_UNIT;

/** `a / b` for positive `b`, rounded away from zero. */
function divideAway(a: bigint, b: bigint): bigint {
  const quotient = a / b;
  if (quotient * b === a) return quotient;
  return a < 0n ? quotient - 1n : quotient + 1n;
}

/**
 * The quantity in nanos (value × 10^9), exact; undefined when `text` is not a quantity.
 *
 * @example
 * ```ts
 * quantityNanos('500m'); // 500000000n
 * ```
 */
export function quantityNanos(text: string): bigint | undefined {
  if (!QUANTITY_PATTERN.test(text)) return undefined;
  const negative = text.startsWith('-');
  const unsigned = text.replace(/^[+-]/, '');
  const numberEnd = /^[0-9.]*/.exec(unsigned)?.[0].length ?? 0;
  const [whole = '', fraction = ''] = unsigned.slice(0, numberEnd).split('.');
  const suffix = unsigned.slice(numberEnd);
  const digits = BigInt(`${whole}${fraction}` || '0');
  if (digits === 0n) return 0n;

  let binary = 0;
  let decimal: number;
  if (suffix in BINARY_EXPONENT) {
    binary = BINARY_EXPONENT[suffix] ?? 0;
    decimal = 0;
  } else if (suffix in DECIMAL_EXPONENT) decimal = DECIMAL_EXPONENT[suffix] ?? 0;
  else decimal = Number(suffix.slice(1));
  // digits × 2^binary × 10^shift nanos.
  const shift = decimal + 9 - fraction.length;

  let magnitude: bigint;
  // Past these the result is known without building huge numbers: at least 10^51 nanos is over the
  // cap, and a divisor of over 10^(digits + 19) leaves less than one nano, which rounds up to one.
  if (shift > 60) magnitude = MAX_NANOS;
  else if (-shift > whole.length + fraction.length + 20) magnitude = 1n;
  else {
    const scaled = digits << BigInt(binary);
    magnitude = shift >= 0 ? scaled * 10n ** BigInt(shift) : divideAway(scaled, 10n ** BigInt(-shift));
  }
  if (magnitude > MAX_NANOS) magnitude = MAX_NANOS;
  return negative ? -magnitude : magnitude;
}

/**
 * The quantity as a number (`AsApproximateFloat64`); undefined when `text` is not a quantity.
 *
 * @example
 * ```ts
 * parseQuantity('500m'); // 0.5
 * parseQuantity('2Gi'); // 2147483648
 * parseQuantity('1 Gi'); // undefined
 * ```
 */
export function parseQuantity(text: string): number | undefined {
  const nanos = quantityNanos(text);
  return nanos === undefined ? undefined : Number(nanos) / 1e9;
}

/**
 * The quantity in whole units, rounded up away from zero (`Value()`): bytes of a storage size.
 *
 * @example
 * ```ts
 * quantityValue('1.5Gi'); // 1610612736
 * quantityValue('1500m'); // 2
 * ```
 */
export function quantityValue(text: string): number | undefined {
  const nanos = quantityNanos(text);
  return nanos === undefined ? undefined : Number(divideAway(nanos, NANOS_PER_UNIT));
}

/**
 * The quantity in thousandths, rounded up away from zero (`MilliValue()`): millicores of a CPU amount.
 *
 * @example
 * ```ts
 * quantityMilliValue('0.25'); // 250
 * ```
 */
export function quantityMilliValue(text: string): number | undefined {
  const nanos = quantityNanos(text);
  return nanos === undefined ? undefined : Number(divideAway(nanos, 10n ** 6n));
}
