/**
 * Store settings written by the merchant (dashboard settings page): which MCP tools the store serves, which
 * payment rails it offers, and its coupons. Messages of the `store/<slug>` actor like the catalog ones, so these
 * writes are serialised with every other write of the store and announced with `store.changed`.
 *
 * Rules that belong to the store, not to a form:
 * - tool names are checked by the caller against the MCP registry (the actor does not import the gateway);
 *   null means "all tools", an empty list means "none";
 * - MOCK (the simulated rail) can be kept or dropped but never added: only the seeded demo store offers it;
 * - coupon codes are stored upper case; a fixed coupon is in the store's currency.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import type { ActorContext } from "../runtime/define-actor.ts";
import { fail } from "../runtime/errors.ts";
import { STORE_CHANGED } from "./messages.ts";
import { amountProblem, impossibleDateTime } from "./ingest.ts";
import { toMinor } from "./schemas.ts";

export const PAYMENT_RAILS = ["card", "x402", "MOCK"] as const;
export type PaymentRail = (typeof PAYMENT_RAILS)[number];

/** The `integer` coupons.usage_limit column's largest value (audit W-5: 3e9 was a field-less 400 from Postgres). */
export const MAX_USAGE_LIMIT = 2_147_483_647;

export const settingsMessages = {
  setEnabledMcpTools: T.Object({ tools: T.Union([T.Array(T.String({ minLength: 1, maxLength: 100 }), { maxItems: 200 }), T.Null()]) }),
  setPaymentMethods: T.Object({ methods: T.Array(T.Union(PAYMENT_RAILS.map((r) => T.Literal(r))), { maxItems: 3 }) }),
  upsertCoupon: T.Object({
    code: T.String({ pattern: "^[A-Za-z0-9_-]{2,64}$" }),
    kind: T.Union([T.Literal("percent"), T.Literal("fixed")]),
    /** percent: 1..100; fixed: minor units of the store's currency. */
    value: T.Integer({ minimum: 1 }),
    minSpendMinor: T.Integer({ minimum: 0 }),
    expiresAt: T.Union([T.String({ format: "date-time" }), T.Null()]),
    usageLimit: T.Union([T.Integer({ minimum: 0, maximum: MAX_USAGE_LIMIT }), T.Null()]),
  }),
  setCouponActive: T.Object({ code: T.String({ minLength: 1, maxLength: 64 }), active: T.Boolean() }),
};

type Ctx = ActorContext<unknown>;

/** A coupon as a merchant writes it: money in decimal units of the store's currency (REST body, dashboard form). */
export interface CouponInput {
  code: string;
  kind: "percent" | "fixed";
  value: number;
  minSpend?: number;
  /** ISO 8601 with an offset or Z; omitted or null = no expiry. */
  expiresAt?: string | null;
  usageLimit?: number | null;
}

/**
 * The `upsertCoupon` message for a merchant's coupon, or 400 `validation_error` naming the field: the one check REST
 * and the dashboard form both use (the form rounded 10.6 % to 11, kept 1.234 as 1.23 and stored a 1e15 coupon:
 * audit A3-3). A percent is a whole 1..100; a fixed value and the minimum spend pass `amountProblem` in the store's
 * currency and a fixed value is at least one minor unit; the expiry is a real instant (2027-02-30 is refused, not
 * rolled over to 2 March: audit A3-8) in the years 0001..9999 (an expanded year such as +010000 reached Postgres,
 * which refused it: audit W-5); the usage limit is a whole number 0..2^31 − 1 (the `integer` column).
 */
export function couponFromInput(input: CouponInput, storeCurrency: string): Static<(typeof settingsMessages)["upsertCoupon"]> {
  if (input.kind === "percent" && (!Number.isInteger(input.value) || input.value < 1 || input.value > 100)) {
    throw fail("validation_error", "A percent coupon's value is a whole percentage 1..100.", { field: "value" });
  }
  for (const [field, amount] of [["value", input.kind === "fixed" ? input.value : undefined], ["minSpend", input.minSpend]] as const) {
    if (amount !== undefined && !(Number.isFinite(amount) && amount >= 0)) throw fail("validation_error", `Invalid ${field}: must be a number of at least 0`, { field });
    const problem = amount === undefined ? null : amountProblem(amount, storeCurrency);
    if (problem) throw fail("validation_error", `Invalid ${field}: ${problem}`, { field });
  }
  const value = input.kind === "percent" ? input.value : toMinor(input.value, storeCurrency);
  if (value < 1) throw fail("validation_error", "A fixed coupon needs a value of at least one minor unit.", { field: "value" });
  let expiresAt: string | null = null;
  if (input.expiresAt) {
    const impossible = impossibleDateTime(input.expiresAt);
    const at = new Date(input.expiresAt);
    if (impossible || Number.isNaN(at.getTime())) {
      throw fail("validation_error", `Invalid expiresAt: ${impossible ?? "must be an ISO 8601 time"}`, { field: "expiresAt" });
    }
    expiresAt = at.toISOString();
  }
  const limit = input.usageLimit ?? null;
  if (limit !== null && !(Number.isInteger(limit) && limit >= 0 && limit <= MAX_USAGE_LIMIT)) {
    throw fail("validation_error", `Invalid usageLimit: must be a whole number from 0 to ${MAX_USAGE_LIMIT}`, { field: "usageLimit" });
  }
  return { code: input.code, kind: input.kind, value, minSpendMinor: toMinor(input.minSpend ?? 0, storeCurrency), expiresAt, usageLimit: limit };
}

/** Pure: the rails a store may switch to from `current` (MOCK only when it already had it), deduplicated in a fixed order. */
export function nextPaymentMethods(current: readonly string[], wanted: readonly PaymentRail[]): PaymentRail[] {
  if (wanted.includes("MOCK") && !current.includes("MOCK")) {
    // the demo store starts with MOCK; once a store's list lacks it, it cannot come back (the same words on the demo
    // store itself, whose operator removed it, said it was "only available on the demo store": helper C, session 19)
    throw fail("validation_error", "MOCK (simulated payments) cannot be added: it can only be kept by the demo store, which starts with it, and once removed it cannot be enabled again.", { field: "methods" });
  }
  return PAYMENT_RAILS.filter((r) => wanted.includes(r));
}

export const settingsHandlers = {
  async setEnabledMcpTools(ctx: Ctx, b: Static<(typeof settingsMessages)["setEnabledMcpTools"]>): Promise<{ enabledMcpTools: string[] | null }> {
    const tx = await ctx.tx();
    const tools = b.tools === null ? null : [...new Set(b.tools)].sort();
    const rows = await tx`UPDATE stores SET enabled_mcp_tools = ${tools}::text[], updated_at = now() WHERE slug = ${ctx.id} RETURNING slug`;
    if (!rows.length) throw fail("store_not_found", `No store ${ctx.id}.`);
    ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "mcp_tools" });
    return { enabledMcpTools: tools };
  },

  async setPaymentMethods(ctx: Ctx, b: Static<(typeof settingsMessages)["setPaymentMethods"]>): Promise<{ paymentMethods: PaymentRail[] }> {
    const tx = await ctx.tx();
    const [s] = await tx<{ payment_methods: string[] }[]>`SELECT payment_methods FROM stores WHERE slug = ${ctx.id} FOR UPDATE`;
    if (!s) throw fail("store_not_found", `No store ${ctx.id}.`);
    const methods = nextPaymentMethods(s.payment_methods ?? [], b.methods);
    await tx`UPDATE stores SET payment_methods = ${methods}::text[], updated_at = now() WHERE slug = ${ctx.id}`;
    ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "payment_methods" });
    return { paymentMethods: methods };
  },

  async upsertCoupon(ctx: Ctx, b: Static<(typeof settingsMessages)["upsertCoupon"]>): Promise<{ code: string; created: boolean }> {
    if (b.kind === "percent" && b.value > 100) throw fail("validation_error", "A percent coupon is 1..100.", { field: "value" });
    const tx = await ctx.tx();
    const [s] = await tx<{ currency: string }[]>`SELECT currency FROM stores WHERE slug = ${ctx.id}`;
    if (!s) throw fail("store_not_found", `No store ${ctx.id}.`);
    const code = b.code.toUpperCase();
    const currency = b.kind === "fixed" ? s.currency : null;
    const [row] = await tx<{ inserted: boolean }[]>`
      INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, expires_at, usage_limit)
      VALUES (${ctx.id}, ${code}, ${b.kind}, ${b.value}, ${b.minSpendMinor}, ${currency}, ${b.expiresAt}, ${b.usageLimit})
      ON CONFLICT (store_slug, code) DO UPDATE SET kind = EXCLUDED.kind, value = EXCLUDED.value, min_spend_minor = EXCLUDED.min_spend_minor,
        currency = EXCLUDED.currency, expires_at = EXCLUDED.expires_at, usage_limit = EXCLUDED.usage_limit, active = true
      RETURNING (xmax = 0) AS inserted`;
    ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "coupons" });
    return { code, created: !!row?.inserted };
  },

  async setCouponActive(ctx: Ctx, b: Static<(typeof settingsMessages)["setCouponActive"]>): Promise<{ code: string; active: boolean }> {
    const tx = await ctx.tx();
    const code = b.code.toUpperCase();
    const rows = await tx`UPDATE coupons SET active = ${b.active} WHERE store_slug = ${ctx.id} AND code = ${code} RETURNING code`;
    if (!rows.length) throw fail("not_found", "No such coupon in this store.", { code });
    ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "coupons" });
    return { code, active: b.active };
  },
};
