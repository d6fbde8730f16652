/**
 * Agent Payments Protocol (AP2) mandates → our checkout. An agent presents a PaymentMandate (and optionally the
 * IntentMandate / CartMandate it derives from) for one of its carts; the mandate's limits are checked against the
 * cart before anything is charged, then the cart completes with the mandate's payment token.
 *
 * Limits (MANDATE_LIMIT_EXCEEDED, `details.violated` one of expiry | currency | payee | amount | cart | cart_contents,
 * with the mandate's limit and the cart total):
 * - amount:   the cart total must not exceed `payment_details_total.amount.value` (a value with more decimals
 *             than the currency has is 400 INVALID_ARGUMENT, never rounded);
 * - currency: `payment_details_total.amount.currency` must be the cart's currency (one outside ISO 4217 is 400
 *             INVALID_ARGUMENT naming the field; decimals per currency: `currencyExponent`);
 * - payee:    `merchant_agent` must be the cart's merchant (a multi-store cart needs every merchant named in the
 *             intent mandate's `merchants`), and every cart merchant must be in `intent_mandate.merchants` if given;
 * - expiry:   `intent_mandate.intent_expiry` and `cart_mandate.contents.cart_expiry` must lie in the future (both
 *             required when their part is sent; anything but an ISO 8601 date-time with a zone is 400);
 * - cart:     a signed cart mandate names the cart paid (`contents.id`), and a mandate pays the one cart it was first
 *             presented for, by the one agent key that first presented it (ap2-auth.ts `claimMandate`, then
 *             common.ts `bindMandate` from index.ts `ap2Pay`: the signature covers neither `cart_id` nor the key);
 * - cart_contents: the cart paid has the signed cart mandate's total and every line among its display items.
 * Each part is read only in its own role: an intent mandate carrying a cart mandate's members (or the reverse) is
 * 400, so a signed part cannot be presented under the other name to have its expiry ignored.
 * The `user_authorization` must be present here and is verified by ap2-auth.ts (a JWS by the user's registered
 * device key over the mandate's hashes) before the limits are checked.
 */
import type { CartView, PaymentLimitsInput } from "../../actors/cart/messages.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { currencyExponent, currencyProblem } from "../../actors/store/schemas.ts";
import { asRecord, boundedToken } from "./common.ts";

export interface Ap2Mandate {
  paymentMandateId: string;
  currency: string;
  /** Minor units. */
  maxAmountMinor: number;
  merchantAgent: string;
  allowedMerchants: string[] | null;
  expiresAt: number | null;
  token: string;
  /** The signed cart mandate's cart, when one is presented: it must be the cart paid (checkMandate). */
  cartMandate: Ap2CartMandate | null;
}

/** What a CartMandate's contents say about the cart the user approved (AP2 CartContents). */
export interface Ap2CartMandate {
  /** `contents.id`: the cart's id or `cart_<id>`. */
  id: string;
  /** `payment_request.details.total.amount`. */
  currency: string;
  totalMinor: number;
  /** `payment_request.details.display_items`; amountMinor null when the value is not a plain amount. */
  items: { label: string; currency: string; amountMinor: number | null }[];
}


/**
 * A mandate amount in minor units, or null when it has more decimals than the currency (134.985 USD): rounding
 * would raise the user's limit by up to half a minor unit, and flooring would quietly change what they signed, so
 * the caller refuses it. Read from the decimal text (a JSON number's shortest form), not by multiplying floats.
 */
export function toMinor(value: number | string, currency: string): number | null {
  const d = currencyExponent(currency);
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
  const total = readAmount(contents.payment_details_total, "payment_mandate.payment_mandate_contents.payment_details_total.amount", "payment_details_total.amount");
  const merchantAgent = contents.merchant_agent;
  if (typeof merchantAgent !== "string" || merchantAgent.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", "merchant_agent is required.", { field: "payment_mandate.payment_mandate_contents.merchant_agent" });
  const token = asRecord(asRecord(contents.payment_response).details).token;
  if (typeof token !== "string" || token.length === 0) {
    throw fail("MISSING_REQUIRED_ARGUMENT", "payment_response.details.token is required.", { field: "payment_mandate.payment_mandate_contents.payment_response.details.token" });
  }
  boundedToken(token, "payment_mandate.payment_mandate_contents.payment_response.details.token");
  const intent = parseIntentMandate(b.intent_mandate);
  const cartMandate = parseCartMandate(b.cart_mandate);
  const expiries = [intent?.expiresAt, cartMandate?.expiresAt].filter((t): t is number => t !== undefined);
  return {
    paymentMandateId: id,
    currency: total.currency,
    maxAmountMinor: total.minor,
    merchantAgent,
    allowedMerchants: intent?.merchants ?? null,
    expiresAt: expiries.length ? Math.min(...expiries) : null,
    token,
    cartMandate: cartMandate && { id: cartMandate.id, currency: cartMandate.currency, totalMinor: cartMandate.totalMinor, items: cartMandate.items },
  };
}

/**
 * A signed part counts only in the role it was made for. AP2 does not fix the order of `transaction_data` (it is
 * "an array containing the secure hashes" of the parts), so the signature alone does not say which hash was the
 * intent and which the cart: the part's own shape does. Each role's members are refused in the other role, and
 * each role's required members (AP2 types/mandate.py) must be there, so a signed intent presented as a cart
 * mandate (or the reverse) is refused instead of having its expiry read from the wrong place and ignored (R3-1).
 */
const INTENT_MEMBERS = ["intent_expiry", "natural_language_description", "merchants", "skus", "requires_refundability", "user_cart_confirmation_required"];
const CART_MEMBERS = ["contents", "merchant_authorization"];

function partObject(raw: unknown, part: "intent_mandate" | "cart_mandate", kind: string): Record<string, unknown> {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw fail("INVALID_ARGUMENT", `${part} must be an AP2 ${kind} object.`, { field: part });
  const r = raw as Record<string, unknown>;
  const [own, other, otherPart] = part === "intent_mandate" ? [INTENT_MEMBERS, CART_MEMBERS, "cart_mandate"] : [CART_MEMBERS, INTENT_MEMBERS, "intent_mandate"];
  const foreign = other.find((k) => k in r);
  if (foreign !== undefined) {
    throw fail("INVALID_ARGUMENT", `${part} carries \`${foreign}\`, a member of the other mandate kind: a mandate part counts only in its own role (send it as ${otherPart}).`, {
      field: `${part}.${foreign}`,
      role: part,
      own_members: own,
    });
  }
  return r;
}

function parseIntentMandate(raw: unknown): { expiresAt: number; merchants: string[] | null } | null {
  if (raw === undefined) return null;
  const intent = partObject(raw, "intent_mandate", "IntentMandate");
  const merchants = intent.merchants;
  if (merchants !== undefined && merchants !== null && !(Array.isArray(merchants) && merchants.every((m) => typeof m === "string" && m.length > 0))) {
    throw fail("INVALID_ARGUMENT", "intent_mandate.merchants must be a list of merchant names.", { field: "intent_mandate.merchants" });
  }
  return { expiresAt: isoTime(intent.intent_expiry, "intent_mandate.intent_expiry"), merchants: Array.isArray(merchants) ? (merchants as string[]) : null };
}

function parseCartMandate(raw: unknown): (Ap2CartMandate & { expiresAt: number }) | null {
  if (raw === undefined) return null;
  const cm = partObject(raw, "cart_mandate", "CartMandate");
  if (!cm.contents || typeof cm.contents !== "object" || Array.isArray(cm.contents)) {
    throw fail("MISSING_REQUIRED_ARGUMENT", "cart_mandate.contents (AP2 CartContents) is required.", { field: "cart_mandate.contents" });
  }
  const c = cm.contents as Record<string, unknown>;
  if (typeof c.id !== "string" || c.id.length === 0 || c.id.length > 200) {
    throw fail("MISSING_REQUIRED_ARGUMENT", "cart_mandate.contents.id must name the cart (its id, or cart_<id>).", { field: "cart_mandate.contents.id" });
  }
  const details = asRecord(asRecord(c.payment_request).details);
  const base = "cart_mandate.contents.payment_request.details";
  const total = readAmount(details.total, `${base}.total.amount`, `${base}.total.amount`);
  if (!Array.isArray(details.display_items)) throw fail("MISSING_REQUIRED_ARGUMENT", `${base}.display_items is required (one item per cart line).`, { field: `${base}.display_items` });
  // Items are read leniently: one that is not a line (a discount with a negative amount, say) simply matches no
  // cart line. What binds is that every cart line is among them (checkMandate).
  const items = details.display_items.map((raw) => {
    const it = asRecord(raw);
    const amount = asRecord(it.amount);
    const currency = typeof amount.currency === "string" ? amount.currency.toUpperCase() : "";
    const value = amount.value;
    const minor = typeof value === "number" || typeof value === "string" ? toMinor(value, currency) : null;
    return { label: typeof it.label === "string" ? it.label : "", currency, amountMinor: minor };
  });
  return { id: c.id, currency: total.currency, totalMinor: total.minor, items, expiresAt: isoTime(c.cart_expiry, "cart_mandate.contents.cart_expiry") };
}

/** A PaymentItem's `amount` {currency, value} in minor units, or 400 naming `field`. */
function readAmount(item: unknown, field: string, name: string): { currency: string; minor: number } {
  const amount = asRecord(asRecord(item).amount);
  const currency = typeof amount.currency === "string" ? amount.currency.toUpperCase() : "";
  const value = amount.value;
  if (!/^[A-Z]{3}$/.test(currency) || (typeof value !== "number" && typeof value !== "string") || (typeof value === "number" && (!Number.isFinite(value) || value < 0))) {
    throw fail("INVALID_ARGUMENT", `${name} needs a currency and a value.`, { field });
  }
  // The mandate's limit is in this currency: one that is not money (ZZZ) binds nothing a cart could be charged in.
  const badCurrency = currencyProblem(currency);
  if (badCurrency) throw fail("INVALID_ARGUMENT", `${name}.currency: ${badCurrency}.`, { field: `${field}.currency`, value: currency });
  const minor = toMinor(value, currency);
  if (minor === null) {
    const d = currencyExponent(currency);
    throw fail("INVALID_ARGUMENT", `${name}.value must be a non-negative decimal with at most ${d} decimal place(s) for ${currency}.`, { field: `${field}.value`, value: String(value), decimals: d });
  }
  return { currency, minor };
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * A signed expiry, which AP2 defines as an ISO 8601 string. Anything else is refused, never skipped: a limit the
 * user signed in another form (epoch seconds, a date without a zone) must not silently bind nothing (R3-2). A
 * time zone is required because without one the instant is ambiguous by hours.
 */
function isoTime(v: unknown, field: string): number {
  if (v === undefined || v === null) throw fail("MISSING_REQUIRED_ARGUMENT", `${field} is required (an ISO 8601 date-time).`, { field });
  const m = typeof v === "string" ? ISO_DATE_TIME.exec(v) : null;
  const t = m ? Date.parse(v as string) : NaN;
  // Date.parse rolls 2026-02-30 over to March; a calendar date that does not exist is malformed.
  const real = m !== null && new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))).getUTCDate() === Number(m[3]);
  if (!m || !real || Number.isNaN(t)) {
    throw fail("INVALID_ARGUMENT", `${field} must be an ISO 8601 date-time with a time zone (e.g. 2026-05-01T12:00:00Z).`, { field, value: String(typeof v === "object" ? JSON.stringify(v) : v).slice(0, 100) });
  }
  return t;
}

/** The mandate as a refusal shows it (`details.mandate`). */
function mandateDetails(m: Ap2Mandate): Record<string, unknown> {
  return {
    payment_mandate_id: m.paymentMandateId,
    max_amount_minor: m.maxAmountMinor,
    currency: m.currency,
    merchant_agent: m.merchantAgent,
    merchants: m.allowedMerchants,
    expires_at: m.expiresAt === null ? null : new Date(m.expiresAt).toISOString(),
  };
}

/**
 * The limits the cart checks again in the turn that charges (actors/cart/payment-limits.ts): checkMandate reads the
 * cart one turn earlier, and a shipping pick or price change in between would otherwise be charged (review R4-5).
 * Expiry and the cart's id and lines need no second look: the time is the gateway's, and a cart's id and lines do
 * not change (an edit makes a new cart). Its total does, so the amount and the signed cart mandate's exact total go.
 *
 * Payees are the cart's own merchants that the mandate names, not the mandate's whole list: the cart's merchants
 * cannot change after checkMandate, so nothing else can matter to the cart, and an intent mandate may name any
 * number of merchants of any length (only the body limit bounds it) while the cart's message is bounded (100 slugs of
 * at most 200 characters). Copying the list refused a valid signed mandate with an internal schema message (review
 * R6 LOW-1). The echo (`details.mandate.merchants`) is cut the same way, so the message stays small.
 */
export function mandateLimits(m: Ap2Mandate, cart: Pick<CartView, "merchants">): PaymentLimitsInput {
  const named = m.allowedMerchants ?? [m.merchantAgent];
  const payees = [...new Set(cart.merchants)].filter((s) => named.includes(s));
  return {
    currency: m.currency,
    maxTotalMinor: m.maxAmountMinor,
    payees,
    mandate: { ...mandateDetails(m), merchants: m.allowedMerchants === null ? null : payees },
    ...(m.cartMandate
      ? { exactTotalMinor: m.cartMandate.totalMinor, cartMandate: { id: m.cartMandate.id, currency: m.cartMandate.currency, total_minor: m.cartMandate.totalMinor } }
      : {}),
  };
}

/** Throws MANDATE_LIMIT_EXCEEDED when the cart is outside what the mandate allows. */
export function checkMandate(m: Ap2Mandate, cart: Pick<CartView, "id" | "currency" | "merchants" | "totals" | "items">, now: number): void {
  const details = {
    mandate: mandateDetails(m),
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
  if (m.cartMandate) checkCartMandate(m.cartMandate, cart, details);
}

/**
 * A signed cart mandate is the user's approval of one cart's contents (AP2: "a guarantee of the items and price"),
 * so the cart paid must be that cart, as it was shown: its id (`contents.id`, our id or `cart_<id>`), its total
 * (`payment_request.details.total`, exactly), and every line among `display_items` (label = the line's title,
 * amount = the line total, so the quantity is in it; one display item per line; other display items, such as
 * shipping or tax, are not lines and are not matched). `cart_id` in the request is not signed; without this a
 * mandate for one cart paid another cart, or the same cart after the agent changed it (R3-2).
 */
function checkCartMandate(cm: Ap2CartMandate, cart: Pick<CartView, "id" | "currency" | "totals" | "items">, details: Record<string, unknown>): void {
  const signed = { id: cm.id, currency: cm.currency, total_minor: cm.totalMinor };
  const id = cm.id.toLowerCase();
  if (id !== cart.id.toLowerCase() && id !== `cart_${cart.id.toLowerCase()}`) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The signed cart mandate is for another cart.", { ...details, violated: "cart", cart_mandate: signed, cart_id: cart.id });
  }
  if (cm.currency !== cart.currency || cm.totalMinor !== cart.totals.total_minor) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The cart's total is not the total of the signed cart mandate (the cart changed after the user approved it).", {
      ...details,
      violated: "cart_contents",
      cart_mandate: signed,
      cart_id: cart.id,
    });
  }
  const unused = [...cm.items];
  const unmatched = cart.items.filter((line) => {
    const i = unused.findIndex((it) => it.label === line.title && it.currency === cart.currency && it.amountMinor === line.line_total_minor);
    if (i === -1) return true;
    unused.splice(i, 1);
    return false;
  });
  if (unmatched.length > 0) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The cart has lines the signed cart mandate does not show (display_items: label = the line's title, amount = its line total).", {
      ...details,
      violated: "cart_contents",
      cart_mandate: signed,
      cart_id: cart.id,
      unmatched_lines: unmatched.map((l) => ({ product_id: l.product_id, title: l.title, quantity: l.quantity, line_total_minor: l.line_total_minor })),
    });
  }
}
