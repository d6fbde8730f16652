/**
 * The risk gate before settlement (spec: InitiateCheckoutRequest, behaviour 3). Pure: the caller gathers the
 * signals; `evaluateRisk` returns every rule that fired and one decision.
 *
 * Rules (amounts per currency, see RISK_AMOUNT_LIMITS and limitsFor; no FX feed):
 * | rule_code              | fires when                                                        | decision |
 * |------------------------|-------------------------------------------------------------------|----------|
 * | AMOUNT_STEP_UP         | amount > step-up limit (1,000.00 in 2-decimal currencies)          | step_up  |
 * | AMOUNT_BLOCK           | amount > block limit (10,000.00)                                   | block    |
 * | VELOCITY_STEP_UP       | this key already started >= 10 checkouts in the last hour         | step_up  |
 * | VELOCITY_BLOCK         | >= 30 in the last hour ("at least 30": the read stops at 30)       | block    |
 * | NEW_KEY_HIGH_AMOUNT    | key younger than 1 h and amount > new-key limit (250.00)           | step_up  |
 * | CURRENCY_COUNTRY_MISMATCH | cart currency is not the store country's currency               | signal   |
 * | SHIP_COUNTRY_MISMATCH  | shipping country differs from the instrument's (billing) country   | signal   |
 * | MISMATCH_COMBINED      | two or more mismatch signals together                              | step_up  |
 * The decision is the strongest rule (block > step_up > allow). Mode `enforce` applies it (step_up → 202
 * user_action_required, block → 403 policy_blocked); mode `observe` always allows and reports what it would
 * have done.
 */
import { minorUnitExponent } from "../../search/money.ts";
import { fail, type ActorError } from "../runtime/errors.ts";

export type RiskMode = "observe" | "enforce";
export type RiskDecision = "allow" | "step_up" | "block";

export interface RiskAmountLimits {
  stepUpOverMinor: number;
  blockOverMinor: number;
  newKeyStepUpOverMinor: number;
}

/** The limits in major units: 1,000.00 / 10,000.00 / 250.00 of the cart's currency unless it has its own row. */
const MAJOR_LIMITS = { stepUp: 1_000, block: 10_000, newKey: 250 } as const;

function scaled(unitsPerMajor: number): RiskAmountLimits {
  return { stepUpOverMinor: MAJOR_LIMITS.stepUp * unitsPerMajor, blockOverMinor: MAJOR_LIMITS.block * unitsPerMajor, newKeyStepUpOverMinor: MAJOR_LIMITS.newKey * unitsPerMajor };
}

/**
 * Currencies whose unit is worth far less than a dollar (under ~0.2 USD), in rounded units per US dollar: with the
 * limits in their own major unit, ¥1,001 (about 7 USD) or CLP 1,001 (about 1 USD) would need a step-up, and Rp 10,001
 * (about 0.6 USD) would be blocked (review R-5: the session-16 fix covered zero-decimal currencies only, so IDR, INR,
 * IQD, COP and the like kept limits of a few dollars to a few hundred). Their limits are about what 1,000 / 10,000 /
 * 250 US dollars are worth. Rounded rates, fixed here on purpose: the gate takes no FX feed, and an order of
 * magnitude is what it needs (a limit 20 % off moves a threshold, a limit 100x off makes the gate useless). Every
 * other currency (unit between ~0.2 and ~5 USD: EUR, GBP, CHF, PLN, BRL, PEN, KWD, BHD, …) takes the limits in its own
 * major unit, scaled by its ISO 4217 exponent (`limitsFor`), so 1,000.000 KWD in a three-decimal currency.
 */
export const UNITS_PER_USD: Readonly<Record<string, number>> = {
  // zero-decimal (ISO 4217 exponent 0)
  BIF: 2_900, CLP: 950, DJF: 180, GNF: 8_600, ISK: 140, KMF: 450, PYG: 7_500, RWF: 1_400, UGX: 3_700, VND: 25_000,
  VUV: 120, XAF: 600, XOF: 600, XPF: 110,
  // two-decimal
  AMD: 390, ARS: 1_000, BDT: 120, CNY: 7, COP: 4_000, CRC: 510, CZK: 23, DKK: 7, DOP: 60, DZD: 135, EGP: 50,
  ETB: 120, GHS: 15, HKD: 8, HUF: 360, IDR: 16_000, INR: 85, IRR: 42_000, JMD: 157, KES: 130, KGS: 87, KHR: 4_000,
  KZT: 500, LAK: 21_500, LBP: 89_500, LKR: 300, MAD: 10, MKD: 57, MMK: 2_100, MNT: 3_400, MXN: 18, MUR: 46,
  MWK: 1_750, MZN: 64, NGN: 1_500, NIO: 37, NOK: 11, NPR: 136, PHP: 57, PKR: 280, RSD: 105, RUB: 90, SEK: 11,
  SLE: 23, SOS: 570, SYP: 13_000, THB: 35, TJS: 11, TRY: 38, TTD: 7, TWD: 32, TZS: 2_600, UAH: 41, UYU: 40,
  UZS: 12_500, VES: 100, YER: 250, ZAR: 18, ZMW: 27,
  // three-decimal
  IQD: 1_310,
};

/** Own limits: JPY and KRW as fixed before (round figures), the rest from UNITS_PER_USD in each currency's minor units. */
export const RISK_AMOUNT_LIMITS: Readonly<Record<string, RiskAmountLimits>> = {
  ...Object.fromEntries(Object.entries(UNITS_PER_USD).map(([code, perUsd]) => [code, scaled(perUsd * 10 ** minorUnitExponent(code))])),
  JPY: { stepUpOverMinor: 150_000, blockOverMinor: 1_500_000, newKeyStepUpOverMinor: 40_000 },
  KRW: { stepUpOverMinor: 1_300_000, blockOverMinor: 13_000_000, newKeyStepUpOverMinor: 330_000 },
};

/** A currency's limits: its own row, else 1,000 / 10,000 / 250 of its major unit in its minor units. */
export function limitsFor(currency: string): RiskAmountLimits {
  const code = currency.toUpperCase();
  return RISK_AMOUNT_LIMITS[code] ?? scaled(10 ** minorUnitExponent(code));
}

export const VELOCITY_WINDOW_MS = 60 * 60 * 1000;
export const VELOCITY_STEP_UP_COUNT = 10;
export const VELOCITY_BLOCK_COUNT = 30;
/**
 * The most checkout sessions the velocity read returns (actors/store/commerce.ts `riskColumns`): enough to decide,
 * since no rule counts past VELOCITY_BLOCK_COUNT. A key with more in the hour reads as that many; its block message
 * says "at least" (`velocityMessage`).
 */
export const VELOCITY_READ_LIMIT = VELOCITY_BLOCK_COUNT;
export const NEW_KEY_AGE_MS = 60 * 60 * 1000;

/** Currency of a store's country, for the mismatch signal (ISO 3166-1 alpha-2 → ISO 4217). */
const COUNTRY_CURRENCY: Readonly<Record<string, string>> = {
  US: "USD", CA: "CAD", GB: "GBP", AU: "AUD", NZ: "NZD", JP: "JPY", KR: "KRW", CH: "CHF", SE: "SEK", NO: "NOK",
  DK: "DKK", PL: "PLN", CZ: "CZK", IN: "INR", BR: "BRL", MX: "MXN", SG: "SGD", HK: "HKD", CN: "CNY", ZA: "ZAR",
  DE: "EUR", FR: "EUR", IT: "EUR", ES: "EUR", NL: "EUR", BE: "EUR", AT: "EUR", IE: "EUR", PT: "EUR", FI: "EUR",
  GR: "EUR", LU: "EUR", SK: "EUR", SI: "EUR", EE: "EUR", LV: "EUR", LT: "EUR", HR: "EUR", MT: "EUR", CY: "EUR",
};

export interface RiskInput {
  amountMinor: number;
  currency: string;
  now: number;
  keyCreatedAt: number;
  /**
   * One time per earlier checkout session of this key (any window; only the last hour counts): the velocity read
   * gives, for each session with an order in the hour, the instant of one such order (actors/store/commerce.ts).
   */
  recentCheckoutTimes: readonly number[];
  storeCountry?: string | null;
  shippingCountry?: string | null;
  /** Country of the payment instrument or billing address, when the rail tells us. */
  billingCountry?: string | null;
}

export interface RiskSignal {
  rule_code: string;
  decision: RiskDecision | "signal";
  message: string;
}

export interface RiskResult {
  mode: RiskMode;
  /** What the rules say. */
  decision: RiskDecision;
  /** What the caller must do: `decision` in enforce mode, always `allow` in observe mode. */
  effective: RiskDecision;
  signals: RiskSignal[];
}

export function parseRiskMode(value: string | undefined): RiskMode {
  if (value === undefined || value === "") return "observe";
  if (value === "observe" || value === "enforce") return value;
  throw new Error(`SPEC005_KYAI_GATE_MODE must be observe or enforce, got ${JSON.stringify(value)}`);
}

/** The velocity rules' message: a count at the read's limit may stand for more (the read stopped there). */
export function velocityMessage(recent: number): string {
  return `${recent >= VELOCITY_READ_LIMIT ? "at least " : ""}${recent} checkouts by this key in the last hour`;
}

export function countWithin(times: readonly number[], now: number, windowMs: number): number {
  return times.filter((t) => t <= now && now - t < windowMs).length;
}

const rank: Record<RiskDecision, number> = { allow: 0, step_up: 1, block: 2 };

export function evaluateRisk(input: RiskInput, mode: RiskMode): RiskResult {
  const currency = input.currency.toUpperCase();
  const limits = limitsFor(currency);
  const signals: RiskSignal[] = [];
  const add = (rule_code: string, decision: RiskSignal["decision"], message: string): void => {
    signals.push({ rule_code, decision, message });
  };

  if (input.amountMinor > limits.blockOverMinor) add("AMOUNT_BLOCK", "block", `amount above ${limits.blockOverMinor} minor units`);
  else if (input.amountMinor > limits.stepUpOverMinor) add("AMOUNT_STEP_UP", "step_up", `amount above ${limits.stepUpOverMinor} minor units`);

  const recent = countWithin(input.recentCheckoutTimes, input.now, VELOCITY_WINDOW_MS);
  if (recent >= VELOCITY_BLOCK_COUNT) add("VELOCITY_BLOCK", "block", velocityMessage(recent));
  else if (recent >= VELOCITY_STEP_UP_COUNT) add("VELOCITY_STEP_UP", "step_up", velocityMessage(recent));

  if (input.now - input.keyCreatedAt < NEW_KEY_AGE_MS && input.amountMinor > limits.newKeyStepUpOverMinor) {
    add("NEW_KEY_HIGH_AMOUNT", "step_up", "key younger than one hour with a high amount");
  }

  let mismatches = 0;
  const storeCurrency = input.storeCountry ? COUNTRY_CURRENCY[input.storeCountry.toUpperCase()] : undefined;
  if (storeCurrency && storeCurrency !== currency) {
    mismatches++;
    add("CURRENCY_COUNTRY_MISMATCH", "signal", `currency ${currency} differs from the store country's ${storeCurrency}`);
  }
  if (input.shippingCountry && input.billingCountry && input.shippingCountry.toUpperCase() !== input.billingCountry.toUpperCase()) {
    mismatches++;
    add("SHIP_COUNTRY_MISMATCH", "signal", "shipping country differs from the payment instrument's country");
  }
  if (mismatches >= 2) add("MISMATCH_COMBINED", "step_up", "several mismatch signals together");

  const decision = signals.reduce<RiskDecision>((d, s) => (s.decision !== "signal" && rank[s.decision] > rank[d] ? s.decision : d), "allow");
  return { mode, decision, effective: mode === "enforce" ? decision : "allow", signals };
}

/** The error to return for an effective step-up or block; undefined when the checkout may proceed. */
export function riskGateError(result: RiskResult): ActorError | undefined {
  const ruleCodes = result.signals.filter((s) => s.decision === result.effective).map((s) => s.rule_code);
  if (result.effective === "block") {
    return fail("policy_blocked", "The risk gate blocked this checkout.", { rule_code: ruleCodes[0], rule_codes: ruleCodes, mode: result.mode });
  }
  if (result.effective === "step_up") {
    return fail("user_action_required", "A human step-up is needed before settlement.", { rule_codes: ruleCodes, mode: result.mode });
  }
  return undefined;
}
