/**
 * Agent Payments Protocol (AP2) mandates → our checkout. An agent presents a PaymentMandate (and optionally the
 * IntentMandate / CartMandate it derives from) for one of its carts; the mandate's limits are checked against the
 * cart before anything is charged, then the cart completes with the mandate's payment token.
 *
 * Limits (MANDATE_LIMIT_EXCEEDED, `details.violated` one of amount | currency | payee | expiry, with the mandate's
 * limit and the cart total):
 * - amount:   the cart total must not exceed `payment_details_total.amount.value` (a value with more decimals
 *             than the currency has is 400 INVALID_ARGUMENT, never rounded);
 * - currency: `payment_details_total.amount.currency` must be the cart's currency;
 * - payee:    `merchant_agent` must be the cart's merchant (a multi-store cart needs every merchant named in the
 *             intent mandate's `merchants`), and every cart merchant must be in `intent_mandate.merchants` if given;
 * - expiry:   `intent_mandate.intent_expiry` and `cart_mandate.contents.cart_expiry` must lie in the future;
 * - cart:     a mandate pays the one cart it was first presented for (bound in index.ts `ap2Pay`, common.ts
 *             `bindMandate`: the signature does not cover `cart_id`).
 * The `user_authorization` must be present here and is verified by ap2-auth.ts (a JWS by the user's registered
 * device key over the mandate's hashes) before the limits are checked.
 */
import type { CartView } from "../../actors/cart/messages.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { asRecord } from "./common.ts";

export interface Ap2Mandate {
  paymentMandateId: string;
  currency: string;
  /** Minor units. */
  maxAmountMinor: number;
  merchantAgent: string;
  allowedMerchants: string[] | null;
  expiresAt: number | null;
  token: string;
}

const DECIMALS: Record<string, number> = { JPY: 0, KRW: 0 };

/**
 * A mandate amount in minor units, or null when it has more decimals than the currency (134.985 USD): rounding
 * would raise the user's limit by up to half a minor unit, and flooring would quietly change what they signed, so
 * the caller refuses it. Read from the decimal text (a JSON number's shortest form), not by multiplying floats.
 */
export function toMinor(value: number | string, currency: string): number | null {
  const d = DECIMALS[currency] ?? 2;
  const text = typeof value === "number" ? String(value) : value.trim();
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return null;
  const frac = (m[2] ?? "").replace(/0+$/, "");
  if (frac.length > d) return null;
  const minor = Number(m[1]) * 10 ** d + Number(frac.padEnd(d, "0") || "0");
  return Number.isSafeInteger(minor) ? minor : null;
}

/** Reads the AP2 request body (`payment_mandate`, optional `intent_mandate`, `cart_mandate`). */
export function parseAp2(body: unknown): Ap2Mandate {
  const b = asRecord(body);
  const pm = asRecord(b.payment_mandate);
  const contents = asRecord(pm.payment_mandate_contents);
  if (!b.payment_mandate || !pm.payment_mandate_contents) throw fail("MISSING_REQUIRED_ARGUMENT", "payment_mandate.payment_mandate_contents is required.", { field: "payment_mandate.payment_mandate_contents" });
  if (typeof pm.user_authorization !== "string" || pm.user_authorization.length === 0) {
    throw fail("MISSING_REQUIRED_ARGUMENT", "payment_mandate.user_authorization is required.", { field: "payment_mandate.user_authorization" });
  }
  const id = contents.payment_mandate_id;
  if (typeof id !== "string" || id.length === 0 || id.length > 200) throw fail("INVALID_ARGUMENT", "payment_mandate_id must be a string.", { field: "payment_mandate.payment_mandate_contents.payment_mandate_id" });
  const amount = asRecord(asRecord(contents.payment_details_total).amount);
  const currency = typeof amount.currency === "string" ? amount.currency.toUpperCase() : "";
  const value = amount.value;
  const amountField = "payment_mandate.payment_mandate_contents.payment_details_total.amount";
  if (!/^[A-Z]{3}$/.test(currency) || (typeof value !== "number" && typeof value !== "string") || (typeof value === "number" && (!Number.isFinite(value) || value < 0))) {
    throw fail("INVALID_ARGUMENT", "payment_details_total.amount needs a currency and a value.", { field: amountField });
  }
  const maxAmountMinor = toMinor(value, currency);
  if (maxAmountMinor === null) {
    const d = DECIMALS[currency] ?? 2;
    throw fail("INVALID_ARGUMENT", `payment_details_total.amount.value must be a non-negative decimal with at most ${d} decimal place(s) for ${currency}.`, {
      field: `${amountField}.value`,
      value: String(value),
      decimals: d,
    });
  }
  const merchantAgent = contents.merchant_agent;
  if (typeof merchantAgent !== "string" || merchantAgent.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", "merchant_agent is required.", { field: "payment_mandate.payment_mandate_contents.merchant_agent" });
  const token = asRecord(asRecord(contents.payment_response).details).token;
  if (typeof token !== "string" || token.length === 0) {
    throw fail("MISSING_REQUIRED_ARGUMENT", "payment_response.details.token is required.", { field: "payment_mandate.payment_mandate_contents.payment_response.details.token" });
  }
  const intent = asRecord(b.intent_mandate);
  const merchants = Array.isArray(intent.merchants) ? intent.merchants.filter((m): m is string => typeof m === "string") : null;
  const expiries = [intent.intent_expiry, asRecord(asRecord(b.cart_mandate).contents).cart_expiry]
    .filter((v): v is string => typeof v === "string")
    .map((v) => Date.parse(v));
  if (expiries.some((t) => Number.isNaN(t))) throw fail("INVALID_ARGUMENT", "mandate expiries must be ISO 8601 times.", { field: "intent_mandate.intent_expiry" });
  return {
    paymentMandateId: id,
    currency,
    maxAmountMinor,
    merchantAgent,
    allowedMerchants: merchants,
    expiresAt: expiries.length ? Math.min(...expiries) : null,
    token,
  };
}

/** Throws MANDATE_LIMIT_EXCEEDED when the cart is outside what the mandate allows. */
export function checkMandate(m: Ap2Mandate, cart: Pick<CartView, "currency" | "merchants" | "totals">, now: number): void {
  const details = {
    mandate: {
      payment_mandate_id: m.paymentMandateId,
      max_amount_minor: m.maxAmountMinor,
      currency: m.currency,
      merchant_agent: m.merchantAgent,
      merchants: m.allowedMerchants,
      expires_at: m.expiresAt === null ? null : new Date(m.expiresAt).toISOString(),
    },
    cart_total_minor: cart.totals.total_minor,
    cart_currency: cart.currency,
    cart_merchants: cart.merchants,
  };
  if (m.expiresAt !== null && now >= m.expiresAt) throw fail("MANDATE_LIMIT_EXCEEDED", "The mandate has expired.", { ...details, violated: "expiry" });
  if (m.currency !== cart.currency) throw fail("MANDATE_LIMIT_EXCEEDED", "The mandate is in another currency than the cart.", { ...details, violated: "currency" });
  const payees = m.allowedMerchants ?? [m.merchantAgent];
  if (!cart.merchants.includes(m.merchantAgent) || cart.merchants.some((s) => !payees.includes(s))) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The cart pays a merchant the mandate does not name.", { ...details, violated: "payee" });
  }
  if (cart.totals.total_minor > m.maxAmountMinor) throw fail("MANDATE_LIMIT_EXCEEDED", "The cart total exceeds the mandate's amount.", { ...details, violated: "amount" });
}
