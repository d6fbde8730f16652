/** ISO 4217 minor-unit exponents, for converting the API's decimal prices at the edge. Default 2. */
const EXPONENT: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0,
  XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

/** The exponents that are not 2, for SQL that converts a row's minor units itself (commerce.ts cancelPendingOrderRows). */
export const MINOR_UNIT_EXPONENTS_NOT_2: Readonly<Record<string, number>> = EXPONENT;

export function minorUnitExponent(currency: string): number {
  return EXPONENT[currency.toUpperCase()] ?? 2;
}

/** Decimal amount → integer minor units (rounded to the nearest unit, so 19.99 → 1999). */
export function toMinor(major: number, currency: string): number {
  return Math.round(major * 10 ** minorUnitExponent(currency));
}

/**
 * The exact minor-unit bounds of a decimal price filter: a price `p` (minor units) is at least `major` iff
 * `p >= minorAtLeast(major)`, at most it iff `p <= minorAtMost(major)`. Not `toMinor`'s rounding: a bound finer than
 * the currency (214.994 USD) would be rounded to 214.99 and let that price through (audit A-2, session 16). The
 * slack absorbs only binary noise (214.99 × 100 is 21498.999999999996), relative to the value.
 */
function scaledWithSlack(major: number, currency: string): { x: number; slack: number } {
  const x = major * 10 ** minorUnitExponent(currency);
  return { x, slack: Math.max(1e-9, Math.abs(x) * 4 * Number.EPSILON) };
}

export function minorAtLeast(major: number, currency: string): number {
  const { x, slack } = scaledWithSlack(major, currency);
  return Math.ceil(x - slack);
}

export function minorAtMost(major: number, currency: string): number {
  const { x, slack } = scaledWithSlack(major, currency);
  return Math.floor(x + slack);
}

/**
 * Integer minor units → decimal amount for the API. IEEE division is correctly rounded, so for a safe integer
 * `minor / 10^e` is already the double nearest the exact decimal (what parsing "19.99" gives); no string round trip
 * (toFixed + Number) is needed. test/unit/money.test.ts checks the two agree.
 */
export function toMajor(minor: number, currency: string): number {
  return minor / 10 ** minorUnitExponent(currency);
}
