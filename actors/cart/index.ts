/**
 * `cart/<cartId>`: one activation per cart. It owns the items, the coupon, the cart status and the cart's one
 * live checkout session (state hash, idempotency binding, payment legs). The store side (stock holds, orders)
 * is asked through `store/<slug>` messages (actors/store/commerce.ts); money moves through a `PaymentRail`.
 *
 * Crash safety of a payment: the leg's intent ids are committed (`ctx.checkpoint()`) before the rail is called.
 * A turn that dies after that leaves the session IN_PROGRESS in its state row; the next activation sees it
 * (`onActivate`), marks it SETTLEMENT_UNKNOWN and reconciles by intent id (lookup, or the idempotent charge),
 * so a capture made before the crash is found, never repeated.
 *
 * The rules are the pure modules beside this file (cart-machine, checkout-machine, state-hash, coupons, totals);
 * docs/checkout.md has them as tables.
 */
import { createHash } from "node:crypto";
import { toMajor } from "../../search/money.ts";
import { bootHooks } from "../../infra/boot-hooks.ts";
import type { Config } from "../../infra/config.ts";
import type { Sql } from "../../infra/db.ts";
import { uuidV4FromHex } from "../../infra/uuid.ts";
import { railFor, type RailName } from "../payments/card-rails.ts";
import { SANDBOX_TOKENS } from "../payments/card-sandbox.ts";
import { assertCapturedAmount, type ChargeResult, type LookupResult, type PaymentRail } from "../payments/rail.ts";
import { evaluateRisk, parseRiskMode, riskGateError, type RiskResult } from "../payments/risk-gate.ts";
import { defineActor, type ActorContext } from "../runtime/define-actor.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import { checkpointWith } from "../runtime/host.ts";
import { isWriteRefused } from "../runtime/state-write.ts";
import {
  beginLegRiding,
  beginLegRows,
  cancelPendingOrderRows,
  commerceMessages,
  findCoupons,
  outboxCheckoutAbandoned,
  readCatalog,
  readCatalogWithRisk,
  readRiskInputs,
  settleCapturedLegRiding,
  settleLegRows,
  type BeginLegBody,
  type CatalogLine,
  type HeldSink,
} from "../store/commerce.ts";
import { CATALOG_CHANGED, heldStockChanged } from "../store/messages.ts";
import { shippingZonesOfStores } from "../store/reads.ts";
import { orderTotalMinor } from "../store/order-rows.ts";
import { assertNoRefundDecided, clearChainDecided, clearReconciliation, lockFlaggedOrder, openReconcileRefund, recordCapturedAmount, type FlaggedOrder } from "../store/reconcile.ts";
import { driveRefundRows, moveOrderAfterRefund, railOfOrder } from "../store/refund-flow.ts";
import { isIsoCountryCode, type ShippingZone } from "../store/schemas.ts";
import { agentCheckoutAllowed, AGENT_THRESHOLD } from "../trust/bands.ts";
import { applyCartEvent, assertCartMutable, assertNotReplaced, isCartExpired, mergedLineTooLarge, newCartHeader, stockShortfall, type CartHeader, type CartStatus } from "./cart-machine.ts";
import {
  applyCheckoutEvent,
  bindIdempotencyKey,
  checkoutCell,
  decideComplete,
  legOutcomes,
  newCheckoutSession,
  newLeg,
  PENDING_CONFIRMATION_TTL_MS,
  prepareLegsForCharge,
  resumeRetriesRolledBack,
  isSessionExpired,
  expiredSessionError,
  isStaleInProgress,
  settleLegs,
  STALE_IN_PROGRESS_MS,
  TERMINAL_CHECKOUT_STATUSES,
  type CheckoutSessionHeader,
  type LegResult,
  type PaymentLeg,
} from "./checkout-machine.ts";
import { type Coupon } from "./coupons.ts";
import { linePricing } from "./offer-rule.ts";
import { rollbackWayOn } from "./rollback-text.ts";
import { variantMissing } from "./variant-line.ts";
import {
  CartMessages,
  type CarryOverInput,
  type CartLineView,
  type CouponAnswer,
  type CreatedCartView,
  type CartView,
  type CheckoutBody,
  type CompleteReply,
  type CompletedView,
  type CreateBody,
  type MerchantTotalsView,
  type MoneyView,
  type PendingView,
  type PrecheckView,
  type PreviewView,
  type PreviewWarning,
  type ResolveCaptureBody,
  type ResolveCaptureView,
  type ShippingChoiceInput,
  type ShippingRatesView,
} from "./messages.ts";
import { checkoutProtocols } from "../store/checkout-protocols.ts";
import { assertMayHold } from "./hold-guard.ts";
import { assertApprovedState, assertWithinLimits } from "./payment-limits.ts";
import { chooseShipping, ruleOf, shippingOptions, storeShipping, type CartShipping, type StoreShipping } from "./shipping.ts";
import { assertStateExecutable, checkoutStateFromTotals, cmp, stateHash, type CheckoutState } from "./state-hash.ts";
import { previewedOf, storePricing, totalsOf, type StoredPricing } from "./stored-pricing.ts";
import { computeTotals, shippingFor, type CartTotals, type PricedLine, type ShippingRule } from "./totals.ts";

// ---------------------------------------------------------------------------------------------------------------
// Configuration reaches actors through a boot hook, keyed by the host's pool (tests run several servers per process).

interface CheckoutConfig {
  riskMode: "observe" | "enforce";
  crashAfterCapture: boolean;
  /** CHECKOUT_APPROVAL_HOLD_MS: how long a session waiting for the buyer's approval keeps its hold. */
  approvalHoldMs: number;
  /** CHECKOUT_MAX_PENDING_APPROVALS: sessions one caller may have holding stock unpaid at once (hold-guard.ts). */
  maxPendingApprovals: number;
}
const configs = new WeakMap<Sql, CheckoutConfig>();

function configOf(sql: Sql): CheckoutConfig {
  return (
    configs.get(sql) ?? {
      riskMode: parseRiskMode(process.env.SPEC005_KYAI_GATE_MODE),
      crashAfterCapture: false,
      approvalHoldMs: PENDING_CONFIRMATION_TTL_MS,
      maxPendingApprovals: 20,
    }
  );
}

export function setCheckoutConfig(
  sql: Sql,
  config: Pick<Config, "SPEC005_KYAI_GATE_MODE" | "NODE_ENV" | "CHECKOUT_APPROVAL_HOLD_MS" | "CHECKOUT_MAX_PENDING_APPROVALS">,
): void {
  configs.set(sql, {
    riskMode: config.SPEC005_KYAI_GATE_MODE,
    approvalHoldMs: config.CHECKOUT_APPROVAL_HOLD_MS,
    maxPendingApprovals: config.CHECKOUT_MAX_PENDING_APPROVALS,
    // Test-only fault injection for test/crash: die right after the processor captured, before the order write.
    crashAfterCapture: config.NODE_ENV === "test" && process.env.NODE_ENV === "test" && process.env.CHECKOUT_CRASH_AFTER_CAPTURE === "1",
  });
}

bootHooks.push({
  name: "checkout-config",
  roles: ["start", "actors"],
  async run({ services }) {
    setCheckoutConfig(services.sql, services.config);
  },
});

// ---------------------------------------------------------------------------------------------------------------
// State

interface CartItem {
  productId: string;
  variantId: string | null;
  storeSlug: string;
  title: string;
  quantity: number;
}

interface CartRecord extends CartHeader {
  id: string;
  keyId: string;
  createdAt: number;
  currency: string;
  items: CartItem[];
  couponCode: string | null;
  /** Destination and chosen option per store (get_shipping_rates); absent on carts stored before it existed. */
  shipping?: CartShipping | null;
}

interface SessionState extends CheckoutSessionHeader {
  /** The previewed totals and approved merchant state, compact (stored-pricing.ts): read them with totalsOf / previewedOf. */
  pricing?: StoredPricing;
  /** Sessions stored before `pricing` carry these instead (read as they are; a new preview replaces them). */
  totals?: CartTotals;
  previewed?: CheckoutState;
  stateHash: string;
  legs: PaymentLeg[];
  /** merchant slug → order id (deterministic per session and store). */
  orderIds: Record<string, string>;
  /** merchant slug → token of the last attempt (reconciliation charges with the same one). */
  tokens: Record<string, string>;
  rail: RailName;
  /** What the completed answer reports of the risk gate (sessions stored before also carry `effective` and messages). */
  risk: StoredRisk | null;
  createdAt: number;
  /**
   * While one store's capture waits for its merchant (escalated) and another store's leg waits for the buyer's
   * approval: when that approval expires. The session stays SETTLEMENT_UNKNOWN (its own expiry is null), so this is
   * the other legs' expiry: the reconciler then releases them (review R5-2). Absent otherwise.
   */
  approvalExpiresAt?: number;
  /**
   * When the buyer's approval of the current attempt runs out: set the first time the attempt waits for the buyer
   * (CHECKOUT_APPROVAL_HOLD_MS later) and kept while the attempt is resumed, so calling complete again while the
   * buyer has not approved does not extend the hold (audit X-3). Cleared once the attempt ends.
   */
  approvalDeadline?: number;
  /** The session was ended by a merchant's cancel of its pending order (`cancel` with `storeSlug`): audit B-1. */
  canceledByMerchant?: true;
}

type StoredRisk = Pick<RiskResult, "mode" | "decision"> & { signals: Pick<RiskResult["signals"][number], "rule_code" | "decision">[] };

/** Only what completedView reads: the signals' messages and `effective` were bytes in every later state write. */
function storedRisk(r: RiskResult): StoredRisk {
  return { mode: r.mode, decision: r.decision, signals: r.signals.map((x) => ({ rule_code: x.rule_code, decision: x.decision })) };
}

interface CartState {
  cart: CartRecord | null;
  session: SessionState | null;
  sessionSeq: number;
  /**
   * What the cart's stored `session` reminder is known to be: a row of session `sessionId` due at `at` or earlier (or
   * already claimed by a host's poll and firing: its turn sets this again). Written in the same statement as the
   * reminder op it describes (armSession), so the two agree after a commit, a rollback or a crash. Absent or null: not
   * known, and the next armSessionBy writes the row.
   */
  sessionTimer?: { sessionId: string; at: number } | null;
}

type Ctx = ActorContext<CartState>;

// ---------------------------------------------------------------------------------------------------------------
// The session timer (one `session` reminder per cart; every change of it goes through these three)

/** Arms the session timer at `at` (the row is written with the turn). */
async function armSession(ctx: Ctx, at: number, payload: { sessionId: string; retry?: number }): Promise<void> {
  await ctx.schedule("session", at, payload);
  // a retry count rides in the row's payload: such a row is not one armSessionBy may keep
  ctx.state.sessionTimer = payload.retry === undefined ? { sessionId: payload.sessionId, at } : null;
}

/**
 * Makes the session timer fire no later than `by`: nothing is written when the stored row is known to fire by then.
 * It may then fire early, and the reminder handler acts only at the session's own time (its expiry, or an IN_PROGRESS
 * payment's STALE_IN_PROGRESS_MS), arming itself again for that time. So a checkout paid within STALE_IN_PROGRESS_MS
 * of its preview (which arms the timer that early) never moves the row between the preview and the payment: the
 * update would not be HOT (`due_at` is the key of actor_reminders_due).
 */
async function armSessionBy(ctx: Ctx, sessionId: string, by: number): Promise<void> {
  const t = ctx.state.sessionTimer;
  if (t && t.sessionId === sessionId && t.at <= by) return;
  await armSession(ctx, by, { sessionId });
}

async function disarmSession(ctx: Ctx): Promise<void> {
  await ctx.cancelReminder("session");
  ctx.state.sessionTimer = null;
}

// ---------------------------------------------------------------------------------------------------------------
// Ids

/** `cs_<cart uuid hex>_<n>`: the cart is recoverable from the session id, so MCP calls need no lookup table. */
export function checkoutSessionId(cartId: string, seq: number): string {
  return `cs_${cartId.replace(/-/g, "")}_${seq}`;
}

export function cartIdOfSession(sessionId: string): string | null {
  const m = /^cs_([0-9a-f]{32})_\d+$/.exec(sessionId);
  if (!m) return null;
  const h = m[1];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A UUID v4-shaped id derived from a seed (stable order ids and default idempotency keys). */
function derivedUuid(...parts: string[]): string {
  return uuidV4FromHex(createHash("sha256").update(JSON.stringify(parts)).digest("hex"));
}

// ---------------------------------------------------------------------------------------------------------------
// Pricing: the cart's items against the live catalog

interface Priced {
  catalog: Map<string, CatalogLine>;
  lines: PricedLine[];
  totals: CartTotals;
  state: CheckoutState;
  /** Store slug → its shipping quote (or why it has none). */
  shipping: Map<string, StoreShipping>;
}

function variantOf(line: CatalogLine, variantId: string | null) {
  return variantId ? line.variants.find((v) => v.id === variantId) : undefined;
}

/** Units that can be held for a line: the product's availability, capped by a tracked variant's own (stock − held). */
function availableFor(line: CatalogLine, variantId: string | null): number | null {
  const v = variantOf(line, variantId);
  if (variantId && !v) return 0;
  let a = line.available;
  if (v) {
    if (!v.inStock) return 0;
    if (v.available !== null) a = a === null ? v.available : Math.min(a, v.available);
  }
  return a;
}

function toCoupon(row: Awaited<ReturnType<typeof findCoupons>>[number]): Coupon {
  return {
    code: row.code,
    kind: row.kind,
    ...(row.kind === "percent" ? { percentBps: Number(row.value) * 100 } : { amountMinor: Number(row.value) }),
    currency: row.currency,
    storeId: row.store_slug,
    minSpendMinor: Number(row.min_spend_minor),
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
    maxUses: row.usage_limit,
    usedCount: row.used_count,
    active: row.active,
  };
}

async function price(
  ctx: Ctx,
  cart: Pick<CartRecord, "items" | "couponCode" | "keyId" | "shipping">,
  couponCode = cart.couponCode,
  loaded?: Map<string, CatalogLine> | Promise<Map<string, CatalogLine>>,
  loadedZones?: Map<string, ShippingZone[]>,
): Promise<Priced> {
  const destination = cart.shipping ?? null;
  // The zones are read only for a cart with a destination; a cart without one is quoted from readCatalog's row.
  const [catalog, zones] = await Promise.all([
    loaded ?? readCatalog(ctx.sql, cart.items.map((i) => i.productId), cart.keyId),
    destination ? (loadedZones ?? shippingZonesOfStores(ctx.sql, [...new Set(cart.items.map((i) => i.storeSlug))])) : null,
  ]);
  const lines: PricedLine[] = [];
  const shipping: Record<string, ShippingRule> = {};
  const quotes = new Map<string, StoreShipping>();
  for (const [i, item] of cart.items.entries()) {
    const c = catalog.get(item.productId);
    if (!c) throw fail("PRODUCT_NOT_FOUND", "A product of the cart left the catalog.", { product_id: item.productId, field: `items[${i}]` });
    // the list price, and the key's offer where it prices this line (offer-rule.ts, shared with MCP's question)
    const { listPriceMinor, negotiated } = linePricing(c.priceMinor, item.variantId, variantOf(c, item.variantId), c.negotiated);
    lines.push({
      storeId: c.storeSlug,
      productId: item.productId,
      variantId: item.variantId,
      quantity: item.quantity,
      listPriceMinor,
      currency: c.currency,
      negotiated,
    });
    if (!quotes.has(c.storeSlug)) {
      const q = storeShipping({
        domestic: { rule: c.store.shipping, options: c.store.domesticShippingOptions, hasZones: c.store.hasShippingZones },
        destination,
        zones: zones?.get(c.storeSlug) ?? [],
        choice: destination?.choices[c.storeSlug],
        currency: c.currency,
      });
      quotes.set(c.storeSlug, q);
      // A store without a quote has no rule: its totals say `shippingQuoted: false` and preview refuses.
      if (q.status === "quoted") shipping[c.storeSlug] = q.rule;
    }
  }
  let coupon: { code: string; coupon: Coupon[] } | null = null;
  if (couponCode) {
    // Every store's row with this code: each is evaluated against its own store's lines (totals.ts discountsOf). A
    // use held by this cart's own session orders (one awaiting approval, a paid store of the session) is not counted
    // against it (findCoupons).
    const own = Object.values(ctx.state.session?.orderIds ?? {});
    const rows = await findCoupons(ctx.sql, [...new Set(lines.map((l) => l.storeId))], couponCode, own);
    coupon = { code: couponCode, coupon: rows.map(toCoupon) };
  }
  const totals = computeTotals({ lines, shipping, coupon, now: ctx.now() });
  const state = checkoutStateFromTotals(totals, {
    policyVersion: (slug) => String([...catalog.values()].find((c) => c.storeSlug === slug)?.store.policyVersion ?? 0),
    available: (_slug, productId, variantId) => {
      const c = catalog.get(productId);
      return c ? availableFor(c, variantId) : 0;
    },
  });
  return { catalog, lines, totals, state, shipping: quotes };
}

/**
 * A preview or a payment needs every store quoted. A store that does not ship to the cart's destination is
 * NOT_ELIGIBLE (another destination or other items); a store waiting for the buyer's destination or pick is
 * PRECONDITION_NOT_MET naming get_shipping_rates, with the options when the destination is known.
 */
function assertShippingQuoted(cart: CartRecord, priced: Priced): void {
  const unquoted = [...priced.shipping].filter(([, q]) => q.status !== "quoted");
  if (unquoted.length === 0) return;
  const dest = cart.shipping ?? null;
  const nowhere = unquoted.filter(([, q]) => q.status === "not_shippable").map(([slug]) => slug);
  if (nowhere.length) {
    throw fail("NOT_ELIGIBLE", `${nowhere.join(", ")} does not ship to ${dest?.countryCode} ${dest?.postalCode}; remove its items or use another destination.`, {
      reason: "destination_not_served",
      merchant_slugs: nowhere,
      destination: { country_code: dest?.countryCode, postal_code: dest?.postalCode },
    });
  }
  const slugs = unquoted.map(([slug]) => slug);
  throw fail(
    "PRECONDITION_NOT_MET",
    dest
      ? `Pick a shipping option for ${slugs.join(", ")}: call get_shipping_rates with this cart_id, the destination and option_id, then preview again.`
      : `${slugs.join(", ")} quotes shipping by destination and method: call get_shipping_rates with this cart_id and the buyer's destination (REST: \`shipping\` on POST /api/v1/agent/checkout/preview), then preview again.`,
    {
      required_step: "get_shipping_rates",
      reason: dest ? "shipping_option_required" : "shipping_destination_required",
      cart_id: cart.id,
      merchant_slugs: slugs,
      ...(dest
        ? {
            options: unquoted.flatMap(([slug, q]) => {
              const st = priced.totals.stores.find((x) => x.storeId === slug);
              if (q.status !== "selection_required" || !st) return [];
              return q.options.map((z) => {
                const cost = shippingFor(ruleOf(z), st.itemCount, st.subtotalMinor - st.discountMinor);
                return { merchant_slug: slug, option_id: z.id, name: z.name, cost: toMajor(cost, st.currency), cost_minor: cost, min_days: z.minDays, max_days: z.maxDays };
              });
            }),
          }
        : {}),
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Views

const isoOf = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function money(t: { subtotalMinor: number; discountMinor: number; shippingMinor: number; taxMinor: number; totalMinor: number }, currency: string): MoneyView {
  return {
    subtotal: toMajor(t.subtotalMinor, currency),
    discount: toMajor(t.discountMinor, currency),
    shipping: toMajor(t.shippingMinor, currency),
    tax: toMajor(t.taxMinor, currency),
    total: toMajor(t.totalMinor, currency),
    subtotal_minor: t.subtotalMinor,
    discount_minor: t.discountMinor,
    shipping_minor: t.shippingMinor,
    tax_minor: t.taxMinor,
    total_minor: t.totalMinor,
  };
}

function lineViews(cart: CartRecord, totals: CartTotals): CartLineView[] {
  const byKey = new Map(totals.stores.flatMap((s) => s.lines).map((l) => [`${l.productId}:${l.variantId ?? ""}`, l]));
  return cart.items.map((item) => {
    const l = byKey.get(`${item.productId}:${item.variantId ?? ""}`);
    const unit = l?.unitPriceMinor ?? 0;
    return {
      product_id: item.productId,
      variant_id: item.variantId,
      merchant_slug: item.storeSlug,
      title: item.title,
      quantity: item.quantity,
      unit_price: toMajor(unit, totals.currency),
      unit_price_minor: unit,
      list_price_minor: l?.listPriceMinor ?? unit,
      price_source: l?.priceSource ?? "list",
      line_total: toMajor(unit * item.quantity, totals.currency),
      line_total_minor: unit * item.quantity,
    };
  });
}

function couponView(cart: CartRecord, totals: CartTotals): CartView["coupon"] {
  if (!cart.couponCode) return null;
  const c = totals.coupon;
  if (!c) return null;
  return c.applied
    ? { code: c.code, applied: true, discount_minor: c.discountMinor }
    : { code: c.code, applied: false, reason: c.reason, discount_minor: 0 };
}

function liveOrCompletedSession(state: CartState): SessionState | null {
  const s = state.session;
  return s && (!TERMINAL_CHECKOUT_STATUSES.has(s.status) || s.status === "COMPLETED") ? s : null;
}

/** The session with this pricing as its preview, in the compact form (a session stored before it drops its old fields). */
function withPricing(s: SessionState, priced: Pick<Priced, "totals" | "state">): SessionState {
  const { totals: _t, previewed: _p, ...rest } = s;
  return { ...rest, pricing: storePricing(priced.totals, priced.state) };
}

function cartView(state: CartState, totals: CartTotals): CartView {
  const cart = state.cart as CartRecord;
  return {
    id: cart.id,
    cart_id: cart.id,
    status: cart.status,
    revision: cart.revision,
    currency: totals.currency,
    items: lineViews(cart, totals),
    coupon: couponView(cart, totals),
    totals: money(totals, totals.currency),
    merchants: totals.stores.map((s) => s.storeId),
    shipping: cart.shipping ? { country_code: cart.shipping.countryCode, postal_code: cart.shipping.postalCode, selected_options: { ...cart.shipping.choices } } : null,
    checkout_session_id: liveOrCompletedSession(state)?.id ?? null,
    checkout_status: liveOrCompletedSession(state)?.status ?? null,
    ...(cart.replacedBy ? { replaced_by_cart_id: cart.replacedBy } : {}),
    created_at: new Date(cart.createdAt).toISOString(),
    updated_at: new Date(cart.updatedAt).toISOString(),
    expires_at: new Date(cart.expiresAt).toISOString(),
  };
}

function previewView(state: CartState, priced: Priced): PreviewView {
  const s = state.session as SessionState;
  const cart = state.cart as CartRecord;
  const t = priced.totals;
  const merchants: MerchantTotalsView[] = t.stores.map((st) => {
    const q = priced.shipping.get(st.storeId);
    const zone = q?.status === "quoted" ? q.zone : null;
    return {
      merchant_slug: st.storeId,
      shipping_quoted: st.shippingQuoted,
      shipping_option: zone ? { option_id: zone.id, name: zone.name, min_days: zone.minDays, max_days: zone.maxDays } : null,
      ...money(st, t.currency),
    };
  });
  return {
    checkout_session_id: s.id,
    cart_id: cart.id,
    status: s.status,
    state_hash: s.stateHash,
    currency: t.currency,
    totals: money(t, t.currency),
    merchants,
    items: lineViews(cart, t),
    coupon: couponView(cart, t),
    expires_at: isoOf(s.expiresAt),
    stock_warnings: priced.state.stores.flatMap((st) =>
      st.lines.filter((l) => l.available !== null && l.available < l.quantity).map((l) => ({ product_id: l.productId, requested: l.quantity, available: l.available })),
    ),
    warnings: eligibilityWarnings(storesOf(priced), t.stores.map((st) => st.storeId)),
  };
}

/**
 * The merchants a payment would refuse as NOT_ELIGIBLE (the same test as assertStoresPayable), said at preview: the
 * agent learns it before it shows the human a total to approve, not after.
 */
function eligibilityWarnings(stores: Map<string, CatalogLine["store"]>, slugs: readonly string[]): PreviewWarning[] {
  return slugs.flatMap((slug): PreviewWarning[] => {
    const store = stores.get(slug);
    if (!store || !store.eligible) return [{ code: "NOT_ELIGIBLE", reason: "merchant_not_eligible", merchant_slug: slug, message: `Merchant ${slug} is not available to agents; a payment will be refused.` }];
    if (store.trustScore !== null && agentCheckoutAllowed(store.trustScore)) return [];
    return [{
      code: "NOT_ELIGIBLE",
      reason: "trust_below_agent_threshold",
      merchant_slug: slug,
      message: `Merchant ${slug} is below the agent checkout threshold; a payment will be refused (NOT_ELIGIBLE). The human may buy on the merchant's own site.`,
      trust_score: store.trustScore,
      threshold: AGENT_THRESHOLD,
    }];
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Guards

function ownCart(ctx: Ctx, keyId: string): CartRecord {
  const cart = ctx.state.cart;
  // Another tenant's cart reads exactly like a missing one.
  if (!cart || cart.keyId !== keyId) throw fail("CART_NOT_FOUND", "No cart with that id.", { cart_id: ctx.id });
  return cart;
}

function ownSession(ctx: Ctx, sessionId: string): SessionState {
  const s = ctx.state.session;
  if (!s || s.id !== sessionId) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session for this cart.", { checkout_session_id: sessionId });
  return s;
}

/**
 * assertCartMutable, and for a cart frozen by its checkout session the way out: the session's id, and that
 * cancelling it unfreezes the cart (or, while money may move, that it must finish first).
 */
function assertCartWritable(ctx: Ctx, cart: CartRecord, now: number, expectedRevision?: number): void {
  try {
    assertCartMutable(cart, now, expectedRevision);
  } catch (err) {
    const s = ctx.state.session;
    if (!(err instanceof ActorError) || err.details?.reason !== "checkout_in_progress" || !s) throw err;
    if (TERMINAL_CHECKOUT_STATUSES.has(s.status)) throw partlyPaidRefusal(cart, s, now, err.details);
    const paying = s.status === "IN_PROGRESS" || s.status === "SETTLEMENT_UNKNOWN";
    throw fail(
      "CART_NOT_MUTABLE",
      paying
        ? `The cart is frozen by checkout session ${s.id}, whose payment is running (${s.status}); it accepts no changes until the payment has finished.`
        : `The cart is frozen by checkout session ${s.id} (${s.status}). Cancel that session to unfreeze the cart (REST: POST /api/v1/agent/checkout/${s.id}/cancel; MCP: cancel_checkout), then change the cart and preview again; or pay the session as previewed.`,
      { ...err.details, checkout_session_id: s.id, checkout_status: s.status },
    );
  }
}

/**
 * The cart is CHECKOUT but its session has ended: some merchants were paid in it and the others were not (review
 * R5-5). No checkout is in progress, so the agent is told what is: which merchants stay paid, that a new preview
 * pays the remaining ones (the paid legs carry over), and that the cart otherwise expires at expires_at; past that,
 * that it has expired.
 */
function partlyPaidRefusal(cart: CartRecord, s: SessionState, now: number, details: Record<string, unknown> | undefined): ActorError {
  if (isCartExpired(cart, now, true)) return fail("CART_NOT_MUTABLE", "The cart has expired.", { reason: "expired", status: "EXPIRED", revision: cart.revision });
  const paid = s.legs.filter((l) => l.status === "captured").map((l) => l.storeId);
  return fail(
    "CART_NOT_MUTABLE",
    `Checkout session ${s.id} ended (${s.status}) after ${paid.join(", ")} was paid; those merchants stay paid and the cart's items are frozen. Preview the cart again to pay the remaining merchants (REST: POST /api/v1/agent/checkout/preview; MCP: preview_checkout), or create a new cart; otherwise this cart expires at expires_at.`,
    {
      ...details,
      reason: "partly_paid",
      checkout_session_id: s.id,
      checkout_status: s.status,
      paid_merchant_slugs: paid,
      required_step: "preview_checkout",
      expires_at: new Date(cart.expiresAt).toISOString(),
    },
  );
}

/** The cart is CHECKOUT only because merchants were paid in a session that has since ended (see partlyPaidRefusal). */
function checkoutEnded(ctx: Ctx): boolean {
  const s = ctx.state.session;
  return ctx.state.cart?.status === "CHECKOUT" && !!s && TERMINAL_CHECKOUT_STATUSES.has(s.status);
}

/**
 * A message addressed by checkout session id (complete, cancel): a missing cart or another key's reads as no such
 * session. The caller named a session, not a cart, so the answer neither names the cart nor tells it apart from
 * a session that never existed.
 */
function ownSessionOfCart(ctx: Ctx, keyId: string, sessionId: string): SessionState {
  const cart = ctx.state.cart;
  if (!cart || cart.keyId !== keyId) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session; preview the cart to start one.", { checkout_session_id: sessionId });
  return ownSession(ctx, sessionId);
}

/** Sandbox test hook (docs/checkout.md): the processor captures, then our order write is made to fail. */
const FINALIZATION_FAILS_TOKEN = "tok_finalization_fails";

const LIVE_WAITING = new Set(["OPEN", "READY_FOR_PAYMENT", "PENDING_EXTERNAL_CONFIRMATION"]);

// ---------------------------------------------------------------------------------------------------------------
// Coupons

/**
 * applyCoupon's answer for this code on the cart as it stands: the cart's write guard first (the same refusals), then
 * the coupon's own rules (coupons.ts evaluateCoupon through price). `check` answers the same without writing: the
 * applied answer shows the cart as it would be, at its current revision.
 */
async function couponOnCart(ctx: Ctx, body: { keyId: string; code: string; expectedRevision?: number }, mode: "apply" | "check"): Promise<CouponAnswer> {
  const cart = ownCart(ctx, body.keyId);
  const now = ctx.now();
  assertCartWritable(ctx, cart, now, body.expectedRevision);
  const code = body.code.trim().toUpperCase();
  const priced = await price(ctx, cart, code);
  const ev = priced.totals.coupon;
  if (!ev || !ev.applied) {
    const current = await price(ctx, cart);
    return {
      applied: false,
      code,
      reason: ev && !ev.applied ? ev.reason : "invalid",
      ...(ev && !ev.applied && ev.details ? { details: ev.details } : {}),
      discount_minor: 0,
      cart: cartView(ctx.state, current.totals),
    };
  }
  const withCoupon: CartRecord = mode === "apply" ? { ...applyCartEvent(cart, "mutate", now, body.expectedRevision), couponCode: code } : { ...cart, couponCode: code };
  if (mode === "apply") ctx.state.cart = withCoupon;
  return { applied: true, code: ev.code, discount_minor: ev.discountMinor, cart: cartView({ ...ctx.state, cart: withCoupon }, priced.totals) };
}

/**
 * A new cart made by an edit takes over what the buyer already chose on the old one (CarryOverInput): the destination
 * and the picks that still serve it (chooseShipping, as selectShipping keeps earlier picks), and the coupon only if it
 * applies to the new items — a coupon that no longer applies is dropped and said so, never kept silently inert.
 */
async function carryOver(
  ctx: Ctx,
  draft: CartRecord,
  from: CarryOverInput,
  catalog: Map<string, CatalogLine>,
  priced: Priced,
): Promise<{ priced: Priced; dropped: CreatedCartView["coupon_dropped"] }> {
  let zones: Map<string, ShippingZone[]> | undefined;
  if (from.shipping) {
    const slugs = [...new Set(draft.items.map((i) => i.storeSlug))];
    zones = await shippingZonesOfStores(ctx.sql, slugs);
    const previous: CartShipping = { countryCode: from.shipping.countryCode, postalCode: from.shipping.postalCode, choices: { ...from.shipping.choices } };
    draft.shipping = chooseShipping(slugs.map((slug) => ({ slug, zones: zones?.get(slug) ?? [] })), previous, draft.currency, previous).shipping;
  }
  const code = from.couponCode?.trim().toUpperCase();
  if (!code) return { priced: from.shipping ? await price(ctx, draft, null, catalog, zones) : priced, dropped: undefined };
  const withCoupon = await price(ctx, draft, code, catalog, zones);
  const ev = withCoupon.totals.coupon;
  if (ev?.applied) {
    draft.couponCode = code;
    return { priced: withCoupon, dropped: undefined };
  }
  const reason = ev && !ev.applied ? ev.reason : "invalid";
  return {
    priced: await price(ctx, draft, null, catalog, zones),
    dropped: {
      code,
      reason,
      ...(ev && !ev.applied && ev.details ? { details: ev.details } : {}),
      message: `Coupon ${code} does not apply to the edited cart (${reason}), so the new cart has no coupon; apply_coupon can try another code.`,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Shipping choice (get_shipping_rates with a cart)

function shippingRatesView(state: CartState, priced: Priced, zones: Map<string, ShippingZone[]>): ShippingRatesView {
  const cart = state.cart as CartRecord;
  const dest = cart.shipping as CartShipping;
  const t = priced.totals;
  const merchants = t.stores.map((st) => {
    const options = shippingOptions(zones.get(st.storeId) ?? [], dest, t.currency);
    const q = priced.shipping.get(st.storeId);
    const itemsMinor = st.subtotalMinor - st.discountMinor;
    return {
      merchant_slug: st.storeId,
      // A store with no zones at all ships free anywhere (one implicit option).
      shippable: q?.status !== "not_shippable",
      selected_option_id: q?.status === "quoted" ? (q.zone?.id ?? null) : null,
      options: options.map((z) => {
        const cost = shippingFor(ruleOf(z), st.itemCount, itemsMinor);
        return { option_id: z.id, name: z.name, cost: toMajor(cost, t.currency), cost_minor: cost, free: cost === 0, min_days: z.minDays, max_days: z.maxDays };
      }),
    };
  });
  const ready = [...priced.shipping.values()].every((q) => q.status === "quoted");
  const session = liveOrCompletedSession(state);
  return {
    cart_id: cart.id,
    revision: cart.revision,
    currency: t.currency,
    destination: { country_code: dest.countryCode, postal_code: dest.postalCode },
    merchants,
    totals: money(t, t.currency),
    ready_for_preview: ready,
    checkout_session_id: session?.id ?? null,
    checkout_status: session?.status ?? null,
    next: ready
      ? session?.status === "READY_FOR_PAYMENT"
        ? "complete_checkout with the checkout_session_id"
        : "preview_checkout with this cart_id"
      : merchants.some((m) => !m.shippable)
        ? "a merchant does not ship to this destination: remove its items or use another destination"
        : "call get_shipping_rates again with option_id (one of options) for each merchant whose selected_option_id is null",
  };
}

/** The same pick per merchant, whatever order the records list them in. */
function sameChoices(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

/**
 * Records the destination (and a picked option) on the cart. Only a change is a write: the cart's revision goes up
 * and a previewed session goes back to OPEN (its totals no longer hold); the same choice again changes nothing.
 * While money may be moving or the buyer is approving, a change is CHECKOUT_STATUS_INVALID (details.status).
 */
/**
 * The cart with its shipping replaced (`shipping: null`: no destination), a live session back to OPEN for a new
 * preview. A merchant already paid (or being paid) shipped on the choice the buyer approved; the destination is
 * shared by every merchant of the cart, so no change may reprice a leg whose money has moved. That holds as well once
 * the session has ended after some merchants were paid (the cart stays CHECKOUT and its next preview carries the paid
 * legs over): the paid orders ship to the approved destination, the rest must too (model finding M-1).
 */
function changeCartShipping(ctx: Ctx, cart: CartRecord, shipping: CartShipping | null, now: number, expectedRevision?: number): CartRecord {
  const live = ctx.state.session && !TERMINAL_CHECKOUT_STATUSES.has(ctx.state.session.status) ? ctx.state.session : null;
  const ended = !live && checkoutEnded(ctx) ? (ctx.state.session as SessionState) : null;
  const paid = live ? live.legs.filter((l) => l.status !== "unpaid").map((l) => l.storeId) : (ended?.legs.filter((l) => l.status === "captured").map((l) => l.storeId) ?? []);
  const holder = live ?? ended;
  if (holder && paid.length > 0) {
    throw fail("CHECKOUT_STATUS_INVALID", "A merchant of this checkout is already paid on the approved shipping; the shipping can no longer change.", {
      status: holder.status,
      reason: "merchant_already_paid",
      merchant_slugs: paid,
    });
  }
  const next = { ...applyCartEvent(cart, "change_shipping", now, expectedRevision), shipping };
  if (live) ctx.state.session = { ...live, ...applyCheckoutEvent(live, "shipping_changed", now) };
  return next;
}

async function chooseCartShipping(ctx: Ctx, keyId: string, input: ShippingChoiceInput, expectedRevision?: number): Promise<{ priced: Priced; zones: Map<string, ShippingZone[]> }> {
  ownCart(ctx, keyId);
  await endDueSession(ctx); // a shipping change must not revive a due session either (it reopened it OPEN)
  const cart = ownCart(ctx, keyId);
  assertNotReplaced(cart);
  // A country that does not exist is a mistake in the call (400, as the shipping estimate answers), not a place no
  // merchant ships to (403 destination_not_served); audit A, session 16.
  if (!isIsoCountryCode(input.countryCode)) {
    throw fail("INVALID_ARGUMENT", `country_code ${JSON.stringify(input.countryCode)} is not an ISO 3166-1 alpha-2 country code.`, { field: "country_code", value: input.countryCode });
  }
  const now = ctx.now();
  const slugs = [...new Set(cart.items.map((i) => i.storeSlug))];
  const zones = await shippingZonesOfStores(ctx.sql, slugs);
  const dest = { countryCode: input.countryCode, postalCode: input.postalCode };
  const { shipping, unknownOption } = chooseShipping(slugs.map((slug) => ({ slug, zones: zones.get(slug) ?? [] })), dest, cart.currency, cart.shipping ?? null, input.optionId?.toLowerCase());
  if (unknownOption) {
    throw fail("INVALID_ARGUMENT", "option_id is not a shipping option of this cart's merchants for that destination.", { field: "option_id", value: input.optionId });
  }
  const prev = cart.shipping ?? null;
  const changed =
    !prev || prev.countryCode !== shipping.countryCode || prev.postalCode !== shipping.postalCode || !sameChoices(prev.choices, shipping.choices);
  let next = cart;
  if (changed) next = changeCartShipping(ctx, cart, shipping, now, expectedRevision);
  else if (expectedRevision !== undefined && expectedRevision !== cart.revision) {
    assertCartMutable(cart, now, expectedRevision); // a stale revision is refused even when nothing would change
  }
  const priced = await price(ctx, next, next.couponCode, undefined, zones);
  ctx.state.cart = next;
  return { priced, zones };
}

// ---------------------------------------------------------------------------------------------------------------
// Preview

/**
 * A preview of a session whose payment waits for the buyer or runs: the table's CHECKOUT_STATUS_INVALID, with the way
 * on in its text (review AD-9; as the cart's own refusal for the same state says, assertCartWritable).
 */
function assertPreviewAllowed(live: SessionState, now: number): void {
  try {
    applyCheckoutEvent(live, "preview", now);
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    const next =
      live.status === "PENDING_EXTERNAL_CONFIRMATION"
        ? ` It waits for the buyer's approval: once the buyer has decided at the approval link, call complete_checkout again with the same checkout_session_id and idempotency_key; or cancel the session (REST: POST /api/v1/agent/checkout/${live.id}/cancel; MCP: cancel_checkout) and preview again.`
        : ` Its payment is running: call complete_checkout again with the same checkout_session_id and idempotency_key to learn the outcome; preview again only if it rolls back to READY_FOR_PAYMENT.`;
    throw new ActorError(err.code, `${err.message}${next}`, { ...err.details, checkout_session_id: live.id });
  }
}

async function doPreview(ctx: Ctx, keyId: string, expectedRevision?: number, shippingChoice?: ShippingChoiceInput): Promise<{ view: PreviewView; priced: Priced }> {
  ownCart(ctx, keyId);
  await endDueSession(ctx);
  if (shippingChoice) {
    await chooseCartShipping(ctx, keyId, shippingChoice, expectedRevision);
    expectedRevision = undefined; // checked by the choice; the choice itself may have moved the revision on
  }
  const cart = ownCart(ctx, keyId);
  assertNotReplaced(cart);
  const now = ctx.now();
  if (expectedRevision !== undefined && expectedRevision !== cart.revision) assertCartMutable(cart, now, expectedRevision);
  const live = ctx.state.session && !TERMINAL_CHECKOUT_STATUSES.has(ctx.state.session.status) ? ctx.state.session : null;
  if (live && live.status !== "OPEN" && live.status !== "READY_FOR_PAYMENT") assertPreviewAllowed(live, now);
  if (isCartExpired(cart, now, checkoutEnded(ctx))) throw fail("CART_NOT_MUTABLE", "The cart has expired.", { reason: "expired", status: "EXPIRED" });
  const priced = await price(ctx, cart);
  // No session is opened on a quote nobody can approve yet: the agent gets the missing step instead.
  assertShippingQuoted(cart, priced);
  const ready = priced.totals.stores.every((s) => s.shippingQuoted);
  const hash = stateHash(priced.state);
  let session: SessionState;
  if (live) {
    const moved = applyCheckoutEvent(live, "preview", now);
    // The status is the table's (preview → READY_FOR_PAYMENT): assertShippingQuoted above refused an unquoted leg,
    // and no status is written outside CHECKOUT_TRANSITIONS (review R5 note).
    session = { ...withPricing(moved, priced), stateHash: hash };
  } else {
    const seq = ctx.state.sessionSeq + 1;
    ctx.state.sessionSeq = seq;
    const id = checkoutSessionId(cart.id, seq);
    // A merchant paid in an earlier session of this cart (one leg captured, the session then canceled or expired:
    // the cart stays in CHECKOUT) stays paid: its captured leg and order carry over, so it is never charged twice.
    const ended = ctx.state.session;
    const paid = ended ? ended.legs.filter((l) => l.status === "captured" && ended.orderIds[l.storeId]) : [];
    session = {
      ...newCheckoutSession(id, now, ready),
      pricing: storePricing(priced.totals, priced.state),
      stateHash: hash,
      legs: priced.totals.stores.map((s) => paid.find((l) => l.storeId === s.storeId) ?? newLeg(s.storeId, s.totalMinor, priced.totals.currency)),
      orderIds: Object.fromEntries(paid.map((l) => [l.storeId, ended!.orderIds[l.storeId]!])),
      tokens: carriedCardMethods(ended),
      rail: "card",
      risk: null,
      createdAt: now,
    };
  }
  // Unpaid legs follow the latest preview; a captured leg keeps what was paid.
  session.legs = session.legs.map((leg) => {
    if (leg.status !== "unpaid") return leg;
    const st = priced.totals.stores.find((s) => s.storeId === leg.storeId);
    return st ? { ...leg, amountMinor: st.totalMinor, currency: priced.totals.currency } : leg;
  });
  ctx.state.cart = applyCartEvent(cart, "start_checkout", now);
  ctx.state.session = session;
  // Armed no later than a payment started now would need it (STALE_IN_PROGRESS_MS): a payment within that time keeps
  // this row (armSessionBy); otherwise it fires early and arms itself for the expiry.
  if (session.expiresAt !== null) await armSessionBy(ctx, session.id, Math.min(session.expiresAt, now + STALE_IN_PROGRESS_MS));
  return { view: previewView(ctx.state, priced), priced };
}

// ---------------------------------------------------------------------------------------------------------------
// Complete

/** The shipping a leg's order carries: the quoted option (the buyer's pick, or the store's one method) and destination. */
function shippingOfLeg(priced: Priced, cart: CartRecord, storeId: string): BeginLegBody["shipping"] {
  const q = priced.shipping.get(storeId);
  const zone = q?.status === "quoted" ? q.zone : null;
  return {
    optionId: zone?.id ?? null,
    name: zone?.name ?? null,
    countryCode: cart.shipping?.countryCode ?? null,
    postalCode: cart.shipping?.postalCode ?? null,
  };
}

/**
 * The card methods a new session of this cart starts from: each store's method in the cart's previous session (its
 * last attempt's, or what that session had carried), so that a call naming none repeats it in the new session too
 * (tokenFor). Without it the cart forgot the method when its session ended: after the buyer's approval expired (or
 * the session was canceled, or failed), the very call that had answered 202 "waiting for the buyer" until then,
 * `{cartId, idempotency_key}` on the one-call route, opened a new session and captured the store's default method
 * with nobody asked (audit DZ-1's class, across sessions; session 20, helper B). x402 references are not carried.
 */
function carriedCardMethods(ended: SessionState | null): Record<string, string> {
  if (!ended) return {};
  return Object.fromEntries(Object.entries(ended.tokens).filter(([, t]) => VALID_TEST_TOKENS.includes(t)));
}

/**
 * The payment method a leg's attempt uses: the call's, else the one the leg's previous attempt used (in this session,
 * or carried from the cart's previous one: carriedCardMethods), else the store's default. A call naming none repeats the earlier attempt as it was: after the buyer refused a payment at the
 * approval link, "call again" (PAYMENT_NOT_APPROVED's remedy, and the resume the 202 asks for) must ask the buyer
 * again, not capture the store's default card the buyer never chose (audit DZ-1); after a decline it is declined
 * again until the call names another method. Only a card-rail method of the earlier attempt is reused (an x402
 * authorization reference is not a card token).
 */
function tokenFor(body: CheckoutBody, leg: PaymentLeg, store: CatalogLine["store"] | undefined, earlier: string | undefined): string {
  const explicit = body.paymentMethods?.[leg.storeId] ?? body.paymentMethod;
  if (explicit) return explicit;
  if (earlier !== undefined && VALID_TEST_TOKENS.includes(earlier)) return earlier;
  return store?.paymentMethods.includes("MOCK") ? "MOCK" : "tok_approve";
}

function storesOf(priced: Priced): Map<string, CatalogLine["store"]> {
  const m = new Map<string, CatalogLine["store"]>();
  for (const c of priced.catalog.values()) m.set(c.storeSlug, c.store);
  return m;
}

/** What the card rail (the sandbox processor, actors/payments/card-sandbox.ts) accepts as a payment method. */
const VALID_TEST_TOKENS: readonly string[] = Object.values(SANDBOX_TOKENS);

/**
 * A card token the sandbox processor does not know is a mistake in the call, not a decline: refused before any
 * stock is held or any intent created, naming the tokens that work (the processor would only say "declined").
 */
function assertSandboxToken(body: CheckoutBody, storeId: string, token: string): void {
  if (VALID_TEST_TOKENS.includes(token)) return;
  const field = body.paymentMethods?.[storeId] !== undefined ? `payment_methods.${storeId}` : "payment_method";
  throw fail("INVALID_ARGUMENT", `${field} is not a sandbox test token; use one of ${VALID_TEST_TOKENS.join(", ")}. Nothing was held or charged.`, {
    field,
    reason: "invalid_test_token",
    valid_tokens: [...VALID_TEST_TOKENS],
    merchant_slug: storeId,
  });
}

/**
 * A one-call checkout's named card tokens, checked before its preview (review P-3): the preview is committed before
 * the payment is tried, so a token refused only then left the cart frozen (CHECKOUT) by a session the 400 did not name.
 * The same tokens `assertStoresPayable` would check: per store of the cart not already paid (a captured leg of an
 * ended session carries over), the store's `payment_methods` entry, else `payment_method`. A method the call leaves
 * out is the store's default or the leg's earlier one, both valid; x402 references are checked by their own flow.
 */
function assertNamedTokensBeforePreview(ctx: Ctx, cart: CartRecord, body: CheckoutBody): void {
  if ((body.rail ?? "card") !== "card") return;
  const paid = new Set((ctx.state.session?.legs ?? []).filter((l) => l.status === "captured").map((l) => l.storeId));
  const stores = [...new Set(cart.items.map((i) => i.storeSlug))].filter((slug) => !paid.has(slug)).sort(cmp);
  for (const storeId of stores) {
    const explicit = body.paymentMethods?.[storeId] ?? body.paymentMethod;
    if (explicit) assertSandboxToken(body, storeId, explicit);
  }
}

/**
 * Every key of `payment_methods` must name a merchant of the cart (audit A-10): a key the cart cannot use (a
 * misspelt or differently cased slug) was ignored and that merchant charged on its default method, not the one the
 * caller named. Refused before anything is previewed, held or charged, naming the cart's merchants.
 */
function assertPaymentMethodKeys(cart: CartRecord, body: CheckoutBody): void {
  if (!body.paymentMethods) return;
  const slugs = [...new Set(cart.items.map((i) => i.storeSlug))].sort(cmp);
  const unknown = Object.keys(body.paymentMethods).filter((k) => !slugs.includes(k)).sort(cmp)[0];
  if (unknown === undefined) return;
  throw fail("INVALID_ARGUMENT", `payment_methods names ${JSON.stringify(unknown)}, which is no merchant of this cart; its keys are merchant slugs: ${slugs.join(", ")}. Nothing was held or charged.`, {
    field: `payment_methods.${unknown}`,
    reason: "unknown_merchant",
    merchant_slugs: slugs,
  });
}

/** A refusal raised after the one-call's committed preview names the session it left READY_FOR_PAYMENT (review P-3). */
function namingSession(err: unknown, sessionId: string): unknown {
  if (!(err instanceof ActorError) || decidedErrors.has(err) || err.details?.checkout_session_id !== undefined) return err;
  return new ActorError(err.code, err.message, { ...err.details, checkout_session_id: sessionId });
}

/** The return terms of this turn's catalog read, which the payment's order event records (review R-6). */
function returnPolicyOf(store: CatalogLine["store"] | undefined): Pick<BeginLegBody, "returnPolicy"> {
  return store ? { returnPolicy: { acceptsReturns: store.acceptsReturns, returnWindowDays: store.returnWindowDays } } : {};
}

/** Store-level preconditions for paying each unpaid leg on this rail. */
function assertStoresPayable(session: SessionState, stores: Map<string, CatalogLine["store"]>, body: CheckoutBody, rail: RailName): Record<string, string> {
  const tokens: Record<string, string> = {};
  for (const leg of session.legs) {
    if (leg.status === "captured") continue;
    const store = stores.get(leg.storeId);
    if (!store || !store.eligible) throw fail("NOT_ELIGIBLE", `Merchant ${leg.storeId} is not available to agents.`, { merchant_slug: leg.storeId, reason: "merchant_not_eligible" });
    if (store.trustScore === null || !agentCheckoutAllowed(store.trustScore)) {
      throw fail("NOT_ELIGIBLE", `Merchant ${leg.storeId} is below the agent checkout threshold.`, {
        merchant_slug: leg.storeId,
        reason: "trust_below_agent_threshold",
        trust_score: store.trustScore,
        threshold: AGENT_THRESHOLD,
      });
    }
    if (store.hostedStorefront && rail !== "card") {
      throw fail("NATIVE_CHECKOUT_REQUIRED", `Merchant ${leg.storeId} sells through its hosted storefront; pay on its native rail.`, {
        merchant_slug: leg.storeId,
        rail,
        native_rails: checkoutProtocols(store),
        checkout_url: store.checkoutUrl,
      });
    }
    assertEnforcement(leg, store.enforcement);
    if (rail === "x402") {
      if (!store.paymentMethods.includes("x402")) throw fail("PAYMENT_METHOD_NOT_CONFIGURED", `Merchant ${leg.storeId} does not accept x402.`, { merchant_slug: leg.storeId, rail });
      // The leg's token is the reference of its prepared x402 authorization ("x402:<id>", actors/payments/x402-rail.ts).
      const ref = body.paymentMethods?.[leg.storeId] ?? body.paymentMethod;
      if (ref) tokens[leg.storeId] = ref;
      continue;
    }
    const token = tokenFor(body, leg, store, session.tokens[leg.storeId]);
    assertSandboxToken(body, leg.storeId, token);
    if (token === "MOCK" ? !store.paymentMethods.includes("MOCK") : !store.paymentMethods.includes("card")) {
      throw fail("PAYMENT_METHOD_NOT_CONFIGURED", `Merchant ${leg.storeId} does not accept ${token === "MOCK" ? "MOCK payments" : "cards"}.`, {
        merchant_slug: leg.storeId,
        payment_method: token,
        accepted: store.paymentMethods,
      });
    }
    tokens[leg.storeId] = token;
  }
  return tokens;
}

/**
 * Merchant enforcement rules (stores.checkout_enforcement, docs/checkout.md "Enforcement"). Rules that cannot be
 * read refuse fail-closed: an order must never pass a merchant rule because the rule was unreadable.
 */
function assertEnforcement(leg: PaymentLeg, rules: unknown): void {
  if (rules === null || rules === undefined) return;
  const r = rules as { unavailable?: unknown; max_order_minor?: unknown };
  const readable = typeof rules === "object" && !Array.isArray(rules) && r.unavailable !== true
    && (r.max_order_minor === undefined || (Number.isInteger(r.max_order_minor) && (r.max_order_minor as number) >= 0));
  if (!readable) {
    throw fail("ENFORCEMENT_UNAVAILABLE", `The enforcement rules of ${leg.storeId} cannot be read; nothing was charged. Retry later.`, { merchant_slug: leg.storeId });
  }
  if (r.max_order_minor !== undefined && leg.amountMinor > (r.max_order_minor as number)) {
    throw fail("CHECKOUT_BLOCKED_BY_POLICY", `Merchant ${leg.storeId} does not accept orders above its limit; a smaller order may pass.`, {
      merchant_slug: leg.storeId,
      rule_code: "MERCHANT_MAX_ORDER_AMOUNT",
      limit_minor: r.max_order_minor,
      amount_minor: leg.amountMinor,
      currency: leg.currency,
    });
  }
}

function orderIdFor(sessionId: string, slug: string): string {
  return derivedUuid("order.v1", sessionId, slug);
}

/**
 * The HeldSink of a leg's statements at `slug`: the tracked products whose held units moved (a hold, or its release)
 * are published as `heldStockChanged` when this turn commits (ctx.publish waits for it; a turn that fails publishes
 * nothing), so search re-reads their buyable stock at once rather than at its 30 s catch-up. Untracked stock holds
 * nothing, so its checkouts publish nothing.
 */
function heldSink(ctx: Ctx, slug: string): HeldSink {
  return (ids) => {
    const ev = heldStockChanged(slug, ids);
    if (ev) ctx.publish(CATALOG_CHANGED, ev);
  };
}

function completedView(ctx: Ctx, s: SessionState): CompletedView {
  const currency = totalsOf(s).currency;
  const orders = s.legs.map((l) => ({
    order_id: s.orderIds[l.storeId],
    merchant_slug: l.storeId,
    status: "paid",
    total: toMajor(l.amountMinor, currency),
    total_minor: l.amountMinor,
    currency,
    capture_reference: l.captureRef ?? null,
  }));
  const total = s.legs.reduce((a, l) => a + l.amountMinor, 0);
  return {
    status: "COMPLETED",
    checkout_session_id: s.id,
    cart_id: ctx.id,
    order_id: orders[0].order_id,
    order_ids: orders.map((o) => o.order_id),
    orders,
    total: toMajor(total, currency),
    total_minor: total,
    currency,
    payment_rail: s.rail,
    simulated: Object.values(s.tokens).every((t) => t === "MOCK"),
    state_hash: s.stateHash,
    risk: s.risk
      ? { mode: s.risk.mode, decision: s.risk.decision, signals: s.risk.signals.map((x) => ({ rule_code: x.rule_code, decision: x.decision })) }
      : { mode: "observe", decision: "allow", signals: [] },
  };
}

/**
 * What the completing call answered (completedView), for a retry with the same key: the orders as they stand now
 * (a merchant may have fulfilled or canceled one since), with the capture references and the totals paid. A total is
 * the order's (`orderTotalMinor`): after an accepted amount mismatch (the session COMPLETED by the merchant's accept)
 * it is what was captured, as the order views and webhooks say (the order views also show the priced total). The
 * receipt keeps the completing answer's shape.
 */
async function completedReceipt(ctx: Ctx, s: SessionState): Promise<Record<string, unknown>> {
  const view = completedView(ctx, s);
  const ids = view.orders.map((o) => o.order_id);
  const rows = ids.length
    ? await ctx.sql<{ id: string; status: string; total_minor: number; captured_minor: number | null }[]>`
        SELECT id, status, total_minor, captured_minor FROM orders WHERE id IN ${ctx.sql(ids)}`
    : [];
  const now = new Map(rows.map((r) => [r.id, r]));
  const { status: _completed, ...rest } = view;
  const orders = view.orders.map((o) => {
    const row = now.get(o.order_id);
    const totalMinor = row ? orderTotalMinor(row) : o.total_minor;
    return { ...o, status: row?.status ?? o.status, total: toMajor(totalMinor, o.currency), total_minor: totalMinor };
  });
  const totalMinor = orders.reduce((a, o) => a + o.total_minor, 0);
  return { ...rest, orders, total: toMajor(totalMinor, view.currency), total_minor: totalMinor };
}

function capturedOrderIds(s: SessionState): string[] {
  return s.legs.filter((l) => l.status === "captured").map((l) => s.orderIds[l.storeId]).filter(Boolean);
}

/** Some merchants of the session are paid and some are not: a multi-store checkout paid in part. */
function partlyPaid(s: SessionState): boolean {
  return s.legs.some((l) => l.status === "captured") && s.legs.some((l) => l.status !== "captured");
}

/**
 * A refusal of an attempt on a session where some merchants are already paid (a retry after a partly captured
 * rollback, or the resume's new attempt for the stores that had rolled back), said with what was paid: which
 * merchants, their orders, each leg's state and where the session stands (review R4-1). The attempt's own refusal
 * (the state check, the store checks, the risk gate, a shortage at the hold) says nothing about money, and an agent
 * that concluded "nothing was bought" and bought again in a new cart would charge the user twice.
 * `after` is the session as the refusal leaves it (still READY_FOR_PAYMENT, or ended).
 */
function withPaidSoFar(err: unknown, s: SessionState, after: SessionState): unknown {
  if (!(err instanceof ActorError) || decidedErrors.has(err) || !partlyPaid(s)) return err;
  const paid = s.legs.filter((l) => l.status === "captured").map((l) => l.storeId);
  const one = paid.length === 1;
  const what = `${paid.join(", ")} ${one ? "was" : "were"} paid and stay${one ? "s" : ""} paid (details.order_ids)`;
  const said = err.code === "SESSION_INACTIVE" || err.code === "CHECKOUT_SESSION_NOT_FOUND" ? `In it, ${what}; the other merchants were not charged.` : `Meanwhile ${what}; nothing was charged for the remaining merchants.`;
  const wayOn = TERMINAL_CHECKOUT_STATUSES.has(after.status)
    ? " The checkout session has ended; preview the cart again to pay the remaining merchants (the paid ones carry over and are not charged again)."
    : err.code === "STATE_EXECUTION_BLOCKED"
      ? " The checkout session stays open for the remaining merchants: preview the cart again (the paid ones carry over and are not charged again), then call again with the same checkout_session_id and idempotency_key."
      : "";
  return new ActorError(
    err.code,
    `${err.message} ${said}${wayOn}`,
    {
      ...err.details,
      checkout_session_id: s.id,
      checkout_status: after.status,
      partially_captured: true,
      captured_merchant_slugs: paid,
      completed_store_ids: paid,
      order_ids: capturedOrderIds(s),
      stores: legOutcomes(after.legs),
    },
  );
}

/** A leg whose outcome the rail says it can never learn (LookupResult `unresolved`): escalated for its merchant. */
type Unresolved = Extract<LookupResult, { status: "unresolved" }>;
type ChargedLeg = LegResult & { result?: ChargeResult; unresolved?: Unresolved };

/** A leg's result from the rail's answer: its capture reference, approval link, or (failed) the rail's reason (C-3). */
function chargedLeg(r: ChargeResult): ChargedLeg {
  return {
    outcome: r.status,
    captureRef: r.status === "captured" ? r.captureRef : undefined,
    approvalUrl: r.status === "needs_buyer_approval" ? r.approvalUrl : undefined,
    ...(r.status === "failed" ? { reason: r.reason } : {}),
    result: r,
  };
}

/**
 * Calls the rail for one leg. A thrown call (answer lost) is asked again by lookup; still unknown → unknown.
 * A leg of nothing (a 100 % coupon on free shipping) is captured without a rail call: no money moves, and a rail
 * refuses to charge 0 (docs/decisions.md "A zero leg is paid without the rail").
 */
async function chargeLeg(rail: PaymentRail, leg: PaymentLeg, token: string, mode: "charge" | "reconcile"): Promise<ChargedLeg> {
  if (leg.amountMinor === 0) return { outcome: "captured" };
  const intent = { intentId: leg.intentId as string, storeId: leg.storeId, amountMinor: leg.amountMinor, currency: leg.currency, paymentToken: token };
  try {
    if (mode === "reconcile") {
      const found = await rail.lookup(intent.intentId);
      if (found.status === "unresolved") return { outcome: "unknown", unresolved: found };
      // Never seen by the processor: nothing was captured, so charging under the same intent id is the first charge.
      return chargedLeg(found.status === "unknown" ? await rail.charge(intent) : found);
    }
    return chargedLeg(await rail.charge(intent));
  } catch (err) {
    // An UPSTREAM_* error (or a crash of the call) may have lost an answer; any other error is the rail refusing the
    // request (its validation). Either way the processor is asked: an intent it never saw captured nothing, so a
    // refusal rolls the leg back (its hold released) instead of leaving the session committed IN_PROGRESS for good.
    const refused = err instanceof ActorError && !err.code.startsWith("UPSTREAM_");
    try {
      const found = await rail.lookup(intent.intentId);
      if (found.status === "unresolved") return { outcome: "unknown", unresolved: found };
      if (found.status !== "unknown") return chargedLeg(found);
      if (refused) return { outcome: "failed" };
    } catch {
      /* still unknown */
    }
    return { outcome: "unknown" };
  }
}

/**
 * The stores among `legs` at which the merchant has blocked this key (audit M-2): read by runPayment before it asks
 * the rail to capture. One point read of store_agent_allowlist by its primary key per store.
 */
async function blockedStoresOf(sql: Sql, keyId: string, legs: readonly PaymentLeg[]): Promise<string[]> {
  if (legs.length === 0) return [];
  const slugs = [...new Set(legs.map((l) => l.storeId))];
  const rows = await sql<{ store_slug: string }[]>`SELECT store_slug FROM store_agent_allowlist
    WHERE agent_key_id = ${keyId}::uuid AND status = 'blocked' AND store_slug = ANY(${slugs}::text[]) ORDER BY store_slug`;
  return rows.map((r) => r.store_slug);
}

/**
 * Errors runPayment throws after it committed the session's new state (a rollback, an escalation, a still-unknown
 * answer with its timer). The reconciler's turn is done then; any other error came before anything was decided.
 */
const decidedErrors = new WeakSet<ActorError>();

function decided(err: ActorError): ActorError {
  decidedErrors.add(err);
  return err;
}

/**
 * Lock order across stores (docs/checkout.md "Lock order"): a turn that writes several stores' legs in its one
 * transaction (holds, settles, cancels) writes them one leg after another in store-slug order, so two carts listing
 * the same stores in opposite orders never lock each other's rows the other way round (40P01). One after another, not
 * sent together: the legs share the turn's one connection, so their statements lock in the order they reach the
 * server, and a leg that takes a round trip more (a captured settle reads its order first, a hold that falls back
 * to the full statement) would lock its rows after a later store's (review RV-1).
 */
const byStoreSlug = (a: { storeId: string }, b: { storeId: string }) => cmp(a.storeId, b.storeId);

/**
 * Runs the rail for every leg now in `processing`, records the store side, and applies the one session event
 * `settleLegs` decides. Returns the reply, or throws the rollback error after committing the new state. `retry`: the
 * reconcile reminder's count of looks that decided nothing (reconcileBackoffMs), for an escalated x402 leg's reminder.
 * `blockReadThisTurn`: a new attempt whose hold guard read the merchant's block in this turn (startAttempt); any other
 * charge reads it first (audit M-2).
 */
async function runPayment(ctx: Ctx, mode: "charge" | "reconcile", retry = 0, blockReadThisTurn = false): Promise<CompleteReply> {
  const s = ctx.state.session as SessionState;
  const rail = railFor(ctx.sql, s.rail);
  if (!rail) throw fail("PAYMENT_METHOD_NOT_CONFIGURED", `The ${s.rail} rail is not available.`, { rail: s.rail });
  const pending = s.legs.filter((l) => l.status === "processing" || (mode === "reconcile" && (l.status === "unknown" || l.status === "needs_buyer_approval")));
  const results: Record<string, LegResult> = {};
  // Audit M-2: a charge reads the merchant's block in the cart's turn before the rail is asked to capture. A new
  // attempt read it this turn with its risk inputs (hold-guard.ts, `blockReadThisTurn`: no statement more); the resume
  // after the buyer approved never did, so a block committed while the buyer decided, whose cancel could not end the
  // session (another merchant's leg unpaid) or has not reached this cart yet, would have been paid. Read here, it
  // refuses the attempt before any capture. A block committed after this read queues its cancel behind this turn.
  const blockedAt = mode === "charge" && !blockReadThisTurn ? await blockedStoresOf(ctx.sql, (ctx.state.cart as CartRecord).keyId, pending) : [];
  if (blockedAt.length) for (const leg of pending) results[leg.storeId] = { outcome: "failed" };
  else {
    await Promise.all(
      pending.map(async (leg) => {
        results[leg.storeId] = await chargeLeg(rail, leg, s.tokens[leg.storeId] ?? "tok_approve", mode);
      }),
    );
  }
  if (mode === "reconcile" && s.approvalExpiresAt !== undefined && ctx.now() >= s.approvalExpiresAt) {
    // Beside an escalated capture, an approval not given in time expires as the session's would: its leg rolls
    // back and its hold goes back (the escalated leg keeps the session for its merchant).
    for (const [slug, r] of Object.entries(results)) if (r.outcome === "needs_buyer_approval") results[slug] = { outcome: "not_approved" };
  }
  if (configOf(ctx.sql).crashAfterCapture && Object.values(results).some((r) => r.outcome === "captured")) {
    // The processor has the money; our order write has not happened. Die like a killed process would.
    process.kill(process.pid, "SIGKILL");
    await Bun.sleep(10_000);
  }
  // A capture we cannot complete (a different amount than authorised, or the order write refused) is never
  // recorded as paid: the order is flagged for a human to reconcile, the leg stays unknown (no timer: the rail
  // answered, a person must decide), and the caller gets the code with the capture reference.
  // The turn's transaction is opened only when a statement needs it (an escalation, or not the single-leg path).
  let opened: Sql | undefined;
  const txOf = async (): Promise<Sql> => (opened ??= await ctx.tx());
  const now0 = ctx.now();
  let escalation: ActorError | null = null;
  /** Every leg escalated in this turn (the first is `escalation`): the answer names them all (review V2-1). */
  const flaggedLegs: ActorError[] = [];
  const escalated = new Set<string>();
  /** An escalated leg the rail could not decide (x402 `unresolved`): the chain may still decide it. */
  let railMayDecide = false;
  for (const leg of pending) {
    const r = results[leg.storeId];
    const res = (r as { result?: ChargeResult }).result;
    const unresolved = (r as ChargedLeg).unresolved;
    if (unresolved) {
      // The rail cannot learn whether this leg moved money (x402 without a readable chain, past the authorization's
      // validity): its merchant decides, as for an escalated capture; the stock stays held. The reminder still asks
      // the rail with the backoff (below): a chain that decides first pays or releases it.
      escalated.add(leg.storeId);
      railMayDecide = true;
      const flagged = await escalateCapture(await txOf(), s, leg, results, unresolvedProblem(leg, unresolved), "settlement_unknown", {
        reference: unresolved.reference,
        evidence: unresolved.evidence ?? null,
        rail_reason: unresolved.reason,
      });
      escalation ??= flagged;
      flaggedLegs.push(flagged);
      continue;
    }
    // A leg of nothing has no capture (chargeLeg never called the rail): nothing a human could accept or refund,
    // so it is never escalated (review R5-1); it settles below, or rolls back when its order no longer waits.
    if (r.outcome !== "captured" || leg.amountMinor === 0) continue;
    let problem: ActorError | null = null;
    try {
      if (res) assertCapturedAmount(res, { amountMinor: leg.amountMinor, currency: leg.currency });
      if (s.tokens[leg.storeId] === FINALIZATION_FAILS_TOKEN) {
        throw fail("PAYMENT_CAPTURED_FINALIZATION_FAILED", "The payment was captured but the order could not be completed; it is flagged for refund or reconciliation.", {
          capture_reference: r.captureRef,
        });
      }
    } catch (err) {
      if (!(err instanceof ActorError)) throw err;
      problem = err;
    }
    if (!problem) continue;
    escalated.add(leg.storeId);
    // Every escalated leg is flagged (and its result made unknown), not only the first: `escalation ??= await …` skipped
    // the call for a second one, whose capture then settled below as paid at the authorised amount (model finding P-2).
    const flagged = await escalateCapture(await txOf(), s, leg, results, problem);
    escalation ??= flagged;
    flaggedLegs.push(flagged);
  }
  const only = pending.length === 1 ? pending[0]! : null;
  // An x402 reconcile may settle an order escalated as settlement_unknown: the general path clears its flag with it.
  const mayBeFlagged = mode === "reconcile" && s.rail === "x402";
  if (only && !opened && !mayBeFlagged && results[only.storeId]!.outcome === "captured") {
    // A charge's view is what the handler answers; a reconcile may run from the session timer, which answers nothing.
    const done = await settleOneLegRiding(ctx, s, only, results, now0, mode === "charge");
    if (done) return done;
  }
  const tx = await txOf();
  const changed: Record<string, string[]> = {};
  // One leg after another, in slug order (see byStoreSlug). The first failure ends the loop: its error (a 40P01, a
  // 503) is the turn's, not a sibling's `current transaction is aborted` (a 500).
  for (const leg of [...pending].sort(byStoreSlug)) {
    const r = results[leg.storeId];
    const orderId = s.orderIds[leg.storeId];
    const reservationId = leg.intentId as string;
    if (r.outcome === "captured") {
      const res = (r as { result?: ChargeResult }).result;
      // The order must still be waiting for this capture: one canceled (or otherwise moved) meanwhile is never
      // answered "paid" nor sold stock (settleLegRows would commit the hold whatever the order's status). The row
      // lock holds off a concurrent move until this turn commits.
      // An order this capture already paid (a replay) settles as before; a flagged one stays with its human.
      const [o] = await tx<{ status: string; capture_ref: string | null; reconciliation: string | null }[]>`SELECT status, capture_ref, reconciliation
        FROM orders WHERE id = ${orderId} AND store_slug = ${leg.storeId} FOR UPDATE`;
      const waiting = o && (o.status === "pending" || (o.status !== "canceled" && o.capture_ref === (r.captureRef ?? null) && o.reconciliation === null));
      if (!waiting && leg.amountMinor === 0) {
        // No money moved: the hold goes back and the leg rolls back, as for a refused charge.
        await settleLegRows(tx, leg.storeId, { orderId, reservationId, outcome: "released", note: "order_not_waiting" }, now0, heldSink(ctx, leg.storeId));
        results[leg.storeId] = { outcome: "failed" };
        continue;
      }
      if (!waiting) {
        const problem = fail("PAYMENT_CAPTURED_FINALIZATION_FAILED", "The payment was captured but the order is no longer waiting for it; it is flagged for refund or reconciliation.", {
          capture_reference: r.captureRef,
          order_status: o?.status ?? null,
        });
        escalated.add(leg.storeId);
        const flagged = await escalateCapture(tx, s, leg, results, problem);
        escalation ??= flagged;
        flaggedLegs.push(flagged);
        continue;
      }
      const done = await settleLegRows(
        tx,
        leg.storeId,
        {
          orderId,
          reservationId,
          outcome: "captured",
          intentId: reservationId,
          captureRef: r.captureRef,
          simulated: res?.status === "captured" ? res.simulated : false,
          totalMinor: leg.amountMinor,
          currency: leg.currency,
        },
        now0,
      );
      if (done.changed.length) changed[leg.storeId] = done.changed;
      // The chain decided a leg escalated to its merchant: the flag goes with the payment, in this transaction.
      if (mayBeFlagged) await clearChainDecided(tx, leg.storeId, orderId, "captured");
    } else if (r.outcome === "declined" || r.outcome === "failed" || r.outcome === "not_approved") {
      const note = blockedAt.length ? "agent_blocked_by_merchant" : r.outcome;
      await settleLegRows(tx, leg.storeId, { orderId, reservationId, outcome: "released", note }, now0, heldSink(ctx, leg.storeId));
      if (mayBeFlagged) await clearChainDecided(tx, leg.storeId, orderId, "released");
    }
  }
  for (const [storeSlug, upserted] of Object.entries(changed)) ctx.publish("catalog.changed", { storeSlug, upserted, removed: [] });
  const settled = settleLegs(s.legs, results);
  const now = ctx.now();
  const moved = withApprovalDeadline(ctx, s, applyCheckoutEvent(s, settled.event, now), now);
  const next: SessionState = { ...s, ...moved, legs: settled.legs, approvalExpiresAt: undefined };
  ctx.state.session = next;
  switch (settled.event) {
    case "payment_captured": {
      ctx.state.cart = applyCartEvent(ctx.state.cart as CartRecord, "complete", now);
      await disarmSession(ctx);
      return completedView(ctx, next);
    }
    case "buyer_approval_required": {
      if (next.expiresAt !== null) await armSession(ctx, next.expiresAt, { sessionId: next.id });
      const view: PendingView = {
        status: "PENDING_EXTERNAL_CONFIRMATION",
        checkout_session_id: next.id,
        cart_id: ctx.id,
        approval_urls: settled.approvalUrls.map((a) => ({ merchant_slug: a.storeId, url: a.url })),
        completed_store_ids: settled.completedStoreIds,
        stores: settled.stores,
        expires_at: isoOf(next.expiresAt),
      };
      return view;
    }
    case "settlement_unknown": {
      if (escalation) {
        // Nothing to ask the rail again for the escalated legs: it answered. A person reconciles; the same key gets
        // the same answer. Other stores' legs are not frozen by it (review R5-2): one still unknown is looked at again
        // by the timer, one waiting for the buyer keeps its approval link (in the error) and its expiry.
        const others = next.legs.filter((l) => l.status !== "captured" && !escalated.has(l.storeId));
        const approvals = others.filter((l) => l.status === "needs_buyer_approval");
        if (approvals.length) next.approvalExpiresAt = s.approvalExpiresAt ?? s.approvalDeadline ?? now + configOf(ctx.sql).approvalHoldMs;
        if (others.some((l) => l.status === "unknown" || l.status === "processing")) await armSession(ctx, now + 5_000, { sessionId: next.id });
        else if (next.approvalExpiresAt !== undefined) await armSession(ctx, next.approvalExpiresAt, { sessionId: next.id });
        // An escalated x402 leg the rail could not decide is still the chain's (a node that catches up, an rpc_url
        // fixed): asked again with the backoff, without waiting for the agent (review RG MED-3); the merchant may decide first.
        else if (railMayDecide) await armSession(ctx, now + reconcileBackoffMs(retry), { sessionId: next.id, retry: retry + 1 });
        else await disarmSession(ctx);
        await ctx.checkpoint();
        const every = everyEscalation(escalation, flaggedLegs, next);
        if (!approvals.length) throw decided(every);
        throw decided(
          new ActorError(every.code, every.message, {
            ...every.details,
            approval_urls: settled.approvalUrls.map((a) => ({ merchant_slug: a.storeId, url: a.url })),
            approval_expires_at: isoOf(next.approvalExpiresAt ?? null),
          }),
        );
      }
      await armSession(ctx, now + 5_000, { sessionId: next.id });
      await ctx.checkpoint();
      throw decided(fail("UPSTREAM_UNAVAILABLE", "The payment processor's answer was lost; the checkout is being reconciled. Call again with the same idempotency_key.", {
        status: next.status,
        checkout_session_id: next.id,
      }));
    }
    default: {
      if (await unpaidOrderCanceled(tx, next)) {
        // A merchant refunded another escalated leg (its order canceled) while this one was still unknown (review
        // V2-2): the session can never be paid, so it ends, as resolveCapture's R5-3 branch ends it, instead of
        // advertising READY_FOR_PAYMENT until the next attempt fails it. Paid legs stay paid and carry over.
        const ended = await endSessionUnpaid(ctx, next, "state_blocked", "checkout_failed_merchant_refunded");
        await ctx.checkpoint();
        const inactive = fail("SESSION_INACTIVE", "The checkout session is FAILED: a merchant refunded its capture and canceled its order, so this session can no longer be paid. Preview the cart again to start a new checkout session.", {
          status: ended.status,
          reason: "checkout_failed_merchant_refunded",
          checkout_session_id: next.id,
        });
        const told = withPaidSoFar(inactive, next, ended);
        throw decided(told instanceof ActorError ? told : inactive);
      }
      // Rolled back to READY_FOR_PAYMENT: nothing captured on the failed legs, their stock is back.
      if (next.expiresAt !== null) await armSession(ctx, next.expiresAt, { sessionId: next.id });
      await ctx.checkpoint();
      if (blockedAt.length) {
        // Refused as the attempt's own check refuses (hold-guard.ts assertMayHold): nothing was asked of the rail, the
        // session is READY_FOR_PAYMENT with nothing held; allowing the key again lets the same session pay (audit M-2).
        const paid = next.legs.filter((l) => l.status === "captured").map((l) => l.storeId);
        throw decided(fail("NOT_ELIGIBLE", `The merchant ${blockedAt.join(", ")} has blocked this agent key; it cannot check out at that store. Nothing was captured.`, {
          reason: "agent_blocked_by_merchant",
          merchant_slugs: blockedAt,
          checkout_session_id: next.id,
          idempotency_key_bound: true,
          order_ids: capturedOrderIds(next),
          ...(paid.length ? { partially_captured: true, captured_merchant_slugs: paid } : {}),
        }));
      }
      const err = settled.error as { code: Parameters<typeof fail>[0]; details: Record<string, unknown> };
      const paid = next.legs.filter((l) => l.status === "captured").map((l) => l.storeId);
      // the buyer refused at an approval link (a leg waiting for them ends not approved): calling again asks them
      // again; a processor's own refusal (no link) would refuse again, so that way on is another method (review V-1)
      const refusedAtLink = err.code === "PAYMENT_NOT_APPROVED" && s.legs.some((l) => (l.status === "needs_buyer_approval" || l.lastOutcome === "needs_buyer_approval") && results[l.storeId]?.outcome === "not_approved");
      throw decided(fail(err.code, rollbackMessage(err.code, paid, refusedAtLink), {
        ...err.details,
        checkout_session_id: next.id,
        idempotency_key_bound: true,
        ...(refusedAtLink ? { refused_at_approval_link: true } : {}),
        order_ids: capturedOrderIds(next),
        ...(paid.length ? { partially_captured: true, captured_merchant_slugs: paid } : {}),
      }));
    }
  }
}

/**
 * The way on after a wrong-amount capture (review AD-9): the spec's "funds may be captured … stop" said in words, and
 * who settles it, so the agent neither pays again nor waits for an answer this call will never give.
 */
export const AMOUNT_MISMATCH_NEXT =
  "Money was captured (details.capture_reference, details.captured_minor): do not retry and do not pay again, with this key or another. " +
  "The order is flagged for the merchant, who reconciles it (accepts the captured amount as paid, or refunds it); read the order " +
  "(REST GET /api/v1/agent/orders/{order_id}, MCP get_order with details.order_id) for the outcome.";

/**
 * A capture that cannot be recorded as paid (a different amount than authorised, the order write failed, or the order
 * no longer pending): the order is flagged for a human with the capture reference and a `reconciliation_required`
 * event, the leg's result becomes unknown (the session stays SETTLEMENT_UNKNOWN, its stock neither sold nor released)
 * and the caller gets the funds-captured code. The merchant resolves it (merchant reconcile route).
 */
async function escalateCapture(
  tx: Sql,
  s: SessionState,
  leg: PaymentLeg,
  results: Record<string, LegResult>,
  problem: ActorError,
  flag: "amount_mismatch" | "finalization_failed" | "settlement_unknown" = problem.code === "PAYMENT_AMOUNT_MISMATCH" ? "amount_mismatch" : "finalization_failed",
  eventData: Record<string, unknown> = {},
): Promise<ActorError> {
  const r = results[leg.storeId]!;
  const orderId = s.orderIds[leg.storeId];
  await tx`WITH o AS (UPDATE orders SET reconciliation = ${flag}, capture_ref = ${r.captureRef ?? null}, updated_at = now()
      WHERE id = ${orderId} AND store_slug = ${leg.storeId} AND reconciliation IS DISTINCT FROM ${flag} RETURNING id)
    INSERT INTO order_events (order_id, type, data)
    SELECT id, 'reconciliation_required', ${tx.json({ actor: "system", reason: flag, capture_ref: r.captureRef ?? null, intent_id: leg.intentId, ...eventData } as never)}::jsonb FROM o`;
  results[leg.storeId] = { outcome: "unknown" };
  return new ActorError(problem.code, problem.code === "PAYMENT_AMOUNT_MISMATCH" ? `${problem.message} ${AMOUNT_MISMATCH_NEXT}` : problem.message, { ...problem.details, capture_reference: r.captureRef, merchant_slug: leg.storeId, order_id: orderId, checkout_session_id: s.id });
}

/**
 * The answer of an attempt that escalated one or more legs: the first leg's code, text and details as before, plus
 * every flagged leg (`details.escalations`: store, order, code, capture reference), every leg's state
 * (`details.stores`, as a rollback's) and the orders already paid (`order_ids`, `completed_store_ids`), so an agent
 * whose attempt escalated two legs learns of the second capture too and pays neither again (review V2-1).
 */
function everyEscalation(first: ActorError, all: readonly ActorError[], next: SessionState): ActorError {
  const escalations = all.map((e) => {
    const d = e.details ?? {};
    return {
      merchant_slug: d.merchant_slug,
      order_id: d.order_id,
      code: e.code,
      capture_reference: d.capture_reference ?? null,
      ...(d.captured_minor !== undefined ? { captured_minor: d.captured_minor } : {}),
      ...(d.payment_reference !== undefined ? { payment_reference: d.payment_reference } : {}),
    };
  });
  const others = escalations.slice(1).map((e) => String(e.merchant_slug));
  const also = others.length
    ? ` Also flagged for ${others.length === 1 ? "its merchant" : "their merchants"} in this attempt: ${others.join(", ")} (details.escalations). Money may have been captured for every store listed there: do not pay again for any of them, with this key or another; each merchant accepts or refunds its own (read each order, details.escalations[].order_id, for the outcome).`
    : "";
  const paid = next.legs.filter((l) => l.status === "captured").map((l) => l.storeId);
  return new ActorError(first.code, `${first.message}${also}`, {
    ...first.details,
    escalations,
    stores: legOutcomes(next.legs),
    completed_store_ids: paid,
    order_ids: capturedOrderIds(next),
  });
}

/**
 * What the agent hears while a leg whose outcome nobody can learn waits for its merchant: 409
 * CHECKOUT_ALREADY_IN_PROGRESS (retry the same call: once the merchant decided, the same key answers the order, or
 * the session rolled back), never a 402 that would make it sign again, nor a 503 that promises the dependency will
 * answer.
 */
function unresolvedProblem(leg: PaymentLeg, u: Unresolved): ActorError {
  return fail(
    "CHECKOUT_ALREADY_IN_PROGRESS",
    `Whether the payment to ${leg.storeId} went through cannot be determined any more; the merchant was asked to check its records and decide. Call again later with the same idempotency_key; do not pay again.`,
    { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: u.reason, payment_reference: u.reference },
  );
}

/**
 * The captured leg of a one-leg payment: its order paid in the same statement as the session COMPLETED and the
 * cart completed (one autocommit statement instead of BEGIN, settle, state, COMMIT). Null when the settle's guard
 * refused (the order was not pending, a stale hint): nothing was written, the state is as it was, and runPayment's
 * general path decides.
 */
async function settleOneLegRiding(ctx: Ctx, s: SessionState, leg: PaymentLeg, results: Record<string, LegResult>, now0: number, viewIsReply: boolean): Promise<CompletedView | null> {
  const settled = settleLegs(s.legs, results);
  if (settled.event !== "payment_captured") return null;
  const r = results[leg.storeId]!;
  const res = (r as { result?: ChargeResult }).result;
  const riding = settleCapturedLegRiding(
    ctx.sql,
    leg.storeId,
    {
      orderId: s.orderIds[leg.storeId]!,
      reservationId: leg.intentId as string,
      outcome: "captured",
      intentId: leg.intentId as string,
      captureRef: r.captureRef,
      simulated: res?.status === "captured" ? res.simulated : false,
      totalMinor: leg.amountMinor,
      currency: leg.currency,
    },
    now0,
  );
  const before = { session: ctx.state.session, cart: ctx.state.cart };
  const now = ctx.now();
  const next: SessionState = { ...s, ...withApprovalDeadline(ctx, s, applyCheckoutEvent(s, settled.event, now), now), legs: settled.legs };
  ctx.state.session = next;
  ctx.state.cart = applyCartEvent(ctx.state.cart as CartRecord, "complete", now);
  await disarmSession(ctx);
  const view = completedView(ctx, next);
  let row: Record<string, unknown>;
  try {
    // the turn's reply rides too (its copy for resends, over a transport that can lose replies)
    row = await checkpointWith(ctx as ActorContext<unknown>, riding.write, viewIsReply ? { finalReply: view } : {});
  } catch (err) {
    if (!isWriteRefused(err)) throw err;
    // The general path cancels the timer again on the same outcome, or the turn fails and nothing is written.
    ctx.state.session = before.session;
    ctx.state.cart = before.cart;
    return null;
  }
  const upserted = riding.changed(row);
  if (upserted.length) ctx.publish("catalog.changed", { storeSlug: leg.storeId, upserted, removed: [] });
  return view;
}

/**
 * The failure's text. In a multi-store checkout other merchants' legs may already be captured (and stay paid):
 * then "nothing was captured" would be false about money, so the text names who was paid.
 */
export function rollbackMessage(code: string, capturedStoreIds: readonly string[] = [], refusedAtLink = false): string {
  const what =
    code === "PAYMENT_DECLINED"
      ? "The processor declined the payment instrument"
      : code === "PAYMENT_NOT_APPROVED"
        ? "The payer did not approve"
        : "The payment failed and was rolled back";
  // The session stays bound to the key of its first attempt: a new key for "a new card" is IDEMPOTENCY_KEY_CONFLICT,
  // so the way on names the key (review AD-3; details.idempotency_key_bound). The bridges replace it with their own.
  const retry = rollbackWayOn(refusedAtLink, "rest");
  if (capturedStoreIds.length === 0) return `${what}; nothing was captured.${retry}`;
  return `${what}; nothing was captured for the remaining merchants, but ${capturedStoreIds.join(", ")} ${capturedStoreIds.length === 1 ? "was" : "were"} paid and stay${capturedStoreIds.length === 1 ? "s" : ""} paid (details.order_ids).${retry}`;
}

/**
 * Whether an unpaid leg's order is canceled: its merchant refunded an escalated capture (reconcile `refund`) while
 * another leg kept the session SETTLEMENT_UNKNOWN. Such a session can never be paid (its order ids are fixed), so it
 * must not go back to READY_FOR_PAYMENT (review V2-2, as R5-3 for the refund itself). Read in the turn's transaction.
 */
async function unpaidOrderCanceled(tx: Sql, s: SessionState): Promise<boolean> {
  const ids = s.legs.filter((l) => l.status !== "captured").map((l) => s.orderIds[l.storeId]).filter((id): id is string => id !== undefined);
  if (!ids.length) return false;
  const [row] = await tx<{ one: number }[]>`SELECT 1 AS one FROM orders WHERE id IN ${tx(ids)} AND status = 'canceled' LIMIT 1`;
  return row !== undefined;
}

/** Whether another store's leg of the session is not paid: ending the session would end that store's sale too. */
function otherStoreUnpaid(s: SessionState, slug: string): boolean {
  return s.legs.some((l) => l.storeId !== slug && l.status !== "captured");
}

/**
 * A merchant's cancel of its own pending order (`cancel` with `storeSlug`) ends the session only when no other
 * store's sale goes with it (review R1-1: one tenant must not cancel another's order). A session the cancel is refused
 * for anyway (paying, finished) answers as before.
 */
function assertOnlyStoreLeft(s: SessionState, slug: string): void {
  if ("error" in checkoutCell(s.status, "cancel") || !otherStoreUnpaid(s, slug)) return;
  throw fail(
    "ORDER_NOT_CANCELLABLE",
    "This order is part of the buyer's checkout together with other merchants' orders, so it cannot be canceled on its own while that checkout is open. The buyer may cancel or pay it; otherwise the checkout expires at expires_at and releases this order.",
    { status: "pending", reason: "shared_checkout", checkout_session_id: s.id, checkout_status: s.status, expires_at: s.expiresAt === null ? null : new Date(s.expiresAt).toISOString() },
  );
}

async function endSessionUnpaid(
  ctx: Ctx,
  s: SessionState,
  event: "state_blocked" | "expire" | "cancel",
  reason?: string,
  byAgent = false,
  byMerchant = false,
): Promise<SessionState> {
  const now = ctx.now();
  const moved = { ...s, ...applyCheckoutEvent(s, event, now) };
  ctx.state.session = moved;
  // A leg still waiting for the buyer can never be captured now: its intent is withdrawn at the rail, so the buyer's
  // link says the checkout is no longer payable instead of "approved" (helper B, B-4). Before this turn commits: should
  // the turn fail after it, the session's next charge of the intent answers not_approved, which rolls the leg back.
  const rail = railFor(ctx.sql, s.rail);
  for (const leg of s.legs) {
    if (leg.status === "needs_buyer_approval" && leg.intentId) await rail?.voidIntent?.(leg.intentId);
  }
  // Unpaid orders of the session are canceled and their stock released, in this turn's transaction.
  const unpaid = Object.entries(s.orderIds).filter(([slug]) => s.legs.find((l) => l.storeId === slug)?.status !== "captured").sort(([a], [b]) => cmp(a, b));
  if (unpaid.length) {
    const tx = await ctx.tx();
    // one store after another, in slug order (see byStoreSlug)
    for (const [slug, orderId] of unpaid) {
      await cancelPendingOrderRows(tx, slug, { orderId, reason: reason ?? `checkout_${moved.status.toLowerCase()}`, byAgent, byMerchant }, now, heldSink(ctx, slug));
    }
  }
  const cart = ctx.state.cart as CartRecord;
  if (cart.status === "CHECKOUT" && !s.legs.some((l) => l.status === "captured")) ctx.state.cart = applyCartEvent(cart, "end_checkout", now);
  await disarmSession(ctx);
  await ctx.cancelReminder("reconcile");
  return moved;
}

/**
 * The end of a session left unfinished past its expiry: EXPIRED, its unpaid orders canceled and their stock released
 * (endSessionUnpaid), and one `checkout.abandoned` per merchant whose leg was not paid, in this turn's transaction.
 * The session timer does it at the session's time; a preview that finds the session due first does it then
 * (endDueSession).
 */
async function expireSession(ctx: Ctx, s: SessionState): Promise<void> {
  const moved = await endSessionUnpaid(ctx, s, "expire");
  const tx = await ctx.tx();
  // One event per merchant whose leg was not paid, with that leg's own total: a paid merchant has an order,
  // and no merchant learns the others of the cart or their amounts (audit D7).
  await outboxCheckoutAbandoned(tx, {
    checkoutSessionId: s.id,
    cartId: ctx.id,
    legs: s.legs.map((l) => ({ merchantSlug: l.storeId, totalMinor: l.amountMinor, captured: l.status === "captured" })),
    currency: totalsOf(s).currency,
    status: moved.status,
    now: ctx.now(),
  });
}

/**
 * A session still waiting (OPEN, READY_FOR_PAYMENT, PENDING_EXTERNAL_CONFIRMATION) past its expiry whose timer has not
 * run yet (the reminder poll comes a little later, or later still after a host was down) is expired now, as its
 * timer would, before a preview or a one-call checkout looks at it. Such a session is expired for every caller
 * already (its completion answers "expired; preview the cart again"), but the preview took it for a live one and
 * previewed it again: the same session id came back with the old attempt's idempotency key bound, so the new key of
 * the new session the answer promised was refused IDEMPOTENCY_KEY_CONFLICT (a shipping change reopened it OPEN
 * likewise). Called by the preview, the one-call checkout and the shipping changes, after the cart's owner is checked.
 */
async function endDueSession(ctx: Ctx): Promise<void> {
  const s = ctx.state.session;
  if (!s || !LIVE_WAITING.has(s.status) || !isSessionExpired(s, ctx.now())) return;
  await expireSession(ctx, s);
}

/**
 * `complete`'s refusals that need no hold and no charge, in the same order, without doing anything (the `precheck`
 * message). A finished session is only reported: what `complete` answers for it is its own business (idempotent
 * replays), and no payment can start from it.
 */
async function doPrecheck(ctx: Ctx, body: CheckoutBody & { sessionId: string; intent?: "complete" | "cancel" }): Promise<PrecheckView> {
  const cart = ownCart(ctx, body.keyId);
  const s = ownSession(ctx, body.sessionId);
  const now = ctx.now();
  const priced = await price(ctx, cart);
  // A payment that starts charges the session's pricing (re-bound to the current one on a reconfirmation): the human
  // is asked about that, and `complete` refuses another state than the hash answered here (audit V2).
  const answer = (totals = priced.totals, stateHash = s.stateHash, legs = s.legs): PrecheckView => ({
    cart: cartView(ctx.state, totals),
    session: { id: s.id, status: s.status, state_hash: stateHash, charges: legs.filter((l) => l.status !== "captured").map((l) => ({ merchant_slug: l.storeId, amount_minor: l.amountMinor })) },
  });
  if (body.intent === "cancel") {
    // pure: throws what cancel would (SESSION_INACTIVE, CHECKOUT_STATUS_INVALID); a session past its expiry as the
    // EXPIRED session cancel ends it as first (SESSION_INACTIVE), before the human is asked
    applyCheckoutEvent(LIVE_WAITING.has(s.status) && isSessionExpired(s, now) ? { ...s, status: "EXPIRED" } : s, "cancel", now);
    return answer();
  }
  assertNotReplaced(cart);
  if (TERMINAL_CHECKOUT_STATUSES.has(s.status)) return answer();
  if (LIVE_WAITING.has(s.status) && isSessionExpired(s, now)) throw withPaidSoFar(expiredSessionError(s), s, { ...s, status: "EXPIRED" });
  if (s.status === "OPEN") {
    throw fail("PRECONDITION_NOT_MET", "The cart's shipping changed after the preview; call preview_checkout again and show the new totals.", {
      status: "OPEN",
      required_step: "preview_checkout",
      checkout_session_id: s.id,
    });
  }
  const decision = decideComplete(s, body.idempotencyKey ?? s.idempotencyKey ?? derivedUuid("idempotency.v1", s.id), capturedOrderIds(s));
  if (decision.action !== "start") return answer();
  let session = s;
  try {
    assertShippingQuoted(cart, priced);
    try {
      const ok = assertStateExecutable(previewedOf(s), priced.state, body.reconfirmedStateHash ?? null, capturedStoreIds(s));
      if (ok.reconfirmed) {
        const repriced = { ...withPricing(s, priced), stateHash: ok.currentHash };
        session = { ...repriced, legs: s.legs.map((leg) => (leg.status !== "unpaid" ? leg : { ...leg, amountMinor: totalsOf(repriced).stores.find((x) => x.storeId === leg.storeId)?.totalMinor ?? leg.amountMinor })) };
      }
    } catch (err) {
      if (err instanceof ActorError && err.code === "STATE_EXECUTION_BLOCKED" && !partlyPaid(s)) {
        // As complete would: the session can never be paid, so it fails now rather than after a human approved it
        // (one with a merchant paid stays READY_FOR_PAYMENT for the others, as complete leaves it).
        await endSessionUnpaid(ctx, s, "state_blocked");
        await ctx.checkpoint();
      }
      throw err;
    }
    assertStoresPayable(session, storesOf(priced), body, body.rail ?? "card");
  } catch (err) {
    throw withPaidSoFar(err, s, (ctx.state.session as SessionState | null) ?? s);
  }
  return answer(totalsOf(session), session.stateHash, session.legs);
}

async function doComplete(ctx: Ctx, body: CheckoutBody, sessionId: string, fresh: Priced | null): Promise<CompleteReply> {
  const cart = ownCart(ctx, body.keyId);
  assertNotReplaced(cart);
  assertPaymentMethodKeys(cart, body);
  let s = ownSession(ctx, sessionId);
  const now = ctx.now();
  const rail: RailName = body.rail ?? "card";
  const key = body.idempotencyKey ?? s.idempotencyKey ?? derivedUuid("idempotency.v1", s.id);
  // A session past its expiry is decided as the EXPIRED session its timer makes of it (404 CHECKOUT_SESSION_NOT_FOUND,
  // any key), so the answer does not depend on whether the timer has run yet (helper B, B-5).
  const asDecided: SessionState = LIVE_WAITING.has(s.status) && isSessionExpired(s, now) ? { ...s, status: "EXPIRED" } : s;
  // The same key on a completed session: its receipt is the answer (read only then; another key learns nothing).
  const receipt = s.status === "COMPLETED" && s.idempotencyKey === key ? await completedReceipt(ctx, s) : undefined;
  let decision: ReturnType<typeof decideComplete>;
  try {
    decision = decideComplete(asDecided, key, capturedOrderIds(s), receipt);
  } catch (err) {
    // A session that ended after some merchants were paid still says so to the caller (same owner, same key or none).
    throw err instanceof ActorError && (err.code === "SESSION_INACTIVE" || err.code === "CHECKOUT_SESSION_NOT_FOUND") ? withPaidSoFar(err, s, asDecided) : err;
  }
  if (decision.action === "resume") {
    assertApprovedState(body.approvedStateHash, s);
    // Legs that rolled back in the attempt that asked the buyer (declined, failed, not approved: nothing captured)
    // get their new attempt in this same call, with the payment methods it names, once the resumed legs are captured
    // (audit B2 F4): the 202 told the caller so. Card rail only: that is where a buyer approves.
    const rolledBack = s.rail === "card" && rail === "card" ? s.legs.filter((l) => l.status === "unpaid").map((l) => l.storeId) : [];
    // A token the processor does not know is refused before the approved leg is captured, as a first attempt's is.
    for (const storeId of rolledBack) {
      const explicit = body.paymentMethods?.[storeId] ?? body.paymentMethod;
      if (explicit) assertSandboxToken(body, storeId, explicit);
    }
    s = { ...s, ...applyCheckoutEvent(s, "resume_payment", now) };
    s.legs = s.legs.map((l) => (l.status === "needs_buyer_approval" ? { ...l, status: "processing" } : l));
    ctx.state.session = s;
    await armSessionBy(ctx, s.id, now + STALE_IN_PROGRESS_MS);
    await ctx.checkpoint();
    if (rolledBack.length === 0) return runPayment(ctx, "charge");
    try {
      return await runPayment(ctx, "charge");
    } catch (err) {
      // Only a rollback committed by runPayment whose sole open legs are the earlier rollbacks goes on.
      if (!(err instanceof ActorError) || !decidedErrors.has(err) || !resumeRetriesRolledBack(rolledBack, ctx.state.session as SessionState)) throw err;
    }
    // READY_FOR_PAYMENT with the same key: the start path (state check, stores, risk, hold, new intent ids).
    return doComplete(ctx, body, sessionId, null);
  }
  if (decision.action === "reconcile") return runPayment(ctx, "reconcile");
  try {
    return await startAttempt(ctx, body, s, key, rail, now, fresh);
  } catch (err) {
    throw withPaidSoFar(err, s, (ctx.state.session as SessionState | null) ?? s);
  }
}

/** The stores whose leg this session already captured: the state check does not ask their stock to cover their lines. */
function capturedStoreIds(s: SessionState): Set<string> {
  return new Set(s.legs.filter((l) => l.status === "captured").map((l) => l.storeId));
}

/**
 * The session header after a settle: entering PENDING_EXTERNAL_CONFIRMATION, its expiry is the attempt's approval
 * deadline, set the first time (now + CHECKOUT_APPROVAL_HOLD_MS) and kept through resumes (a resume that finds the buyer
 * has still not approved must not extend the hold); in IN_PROGRESS / SETTLEMENT_UNKNOWN the deadline is kept for the
 * attempt; anywhere else (rolled back, completed, ended) the attempt is over and so is its deadline.
 */
function withApprovalDeadline(ctx: Ctx, prev: SessionState, moved: SessionState, now: number): SessionState {
  if (moved.status === "PENDING_EXTERNAL_CONFIRMATION") {
    const deadline = prev.approvalDeadline ?? now + configOf(ctx.sql).approvalHoldMs;
    return { ...moved, expiresAt: deadline, approvalDeadline: deadline };
  }
  if (moved.status === "IN_PROGRESS" || moved.status === "SETTLEMENT_UNKNOWN") return moved;
  return { ...moved, approvalDeadline: undefined };
}

/** A new attempt on a READY_FOR_PAYMENT session (the first, or a retry after a rollback) with the key bound. */
async function startAttempt(ctx: Ctx, body: CheckoutBody, s: SessionState, key: string, rail: RailName, now: number, fresh: Priced | null): Promise<CompleteReply> {
  // start: the merchant state must still be what was approved. The risk inputs and the hold guard's read (what this
  // caller may hold, hold-guard.ts: the stores of the legs this attempt pays) come back with the catalog read (extra
  // columns of the same statement); a completion priced just before reads them on their own meanwhile.
  const current = ctx.state.cart as CartRecord;
  const guard = { keyId: body.keyId, sessionId: s.id, storeSlugs: s.legs.filter((l) => l.status === "unpaid").map((l) => l.storeId) };
  const riskRead = fresh
    ? readRiskInputs(ctx.sql, body.keyId, body.identityCreatedAt, guard, now)
    : readCatalogWithRisk(ctx.sql, current.items.map((i) => i.productId), body.keyId, body.identityCreatedAt, guard, now);
  riskRead.catch(() => {}); // awaited below; a refusal before that must not leave an unhandled rejection
  const priced = fresh ?? (await price(ctx, current, current.couponCode, riskRead.then((r) => ("catalog" in r ? r.catalog : new Map()))));
  // The quote previewed may have gone since (the merchant replaced its zones): never pay a leg without one.
  assertShippingQuoted(ctx.state.cart as CartRecord, priced);
  if (!fresh) {
    try {
      const ok = assertStateExecutable(previewedOf(s), priced.state, body.reconfirmedStateHash ?? null, capturedStoreIds(s));
      if (ok.reconfirmed) s = { ...withPricing(s, priced), stateHash: ok.currentHash };
    } catch (err) {
      // A session with a merchant paid stays READY_FOR_PAYMENT for the others (a new preview, then the same key, pays
      // them), as after a partly captured rollback; nothing of this attempt was written. Without one it fails.
      if (err instanceof ActorError && err.code === "STATE_EXECUTION_BLOCKED" && !partlyPaid(s)) {
        await endSessionUnpaid(ctx, s, "state_blocked");
        await ctx.checkpoint();
      }
      throw err;
    }
    s.legs = s.legs.map((leg) => {
      if (leg.status !== "unpaid") return leg;
      const st = totalsOf(s).stores.find((x) => x.storeId === leg.storeId);
      return st ? { ...leg, amountMinor: st.totalMinor } : leg;
    });
  }
  // A mandate's limits bind what this turn charges, priced now, not the caller's earlier read (review R4-5); so does
  // the state the human approved (audit V2), checked second: no new approval lifts a mandate's limit.
  if (body.limits) assertWithinLimits(body.limits, { id: s.id, currency: totalsOf(s).currency, legs: s.legs });
  assertApprovedState(body.approvedStateHash, s);
  const stores = storesOf(priced);
  const tokens = assertStoresPayable(s, stores, body, rail);
  const unpaid = s.legs.filter((l) => l.status === "unpaid");
  const amountMinor = unpaid.reduce((a, l) => a + l.amountMinor, 0);
  const currency = totalsOf(s).currency;

  // x402 without a prepared authorization: the gateway answers the 402 challenge for these amounts.
  if (rail === "x402" && (!railFor(ctx.sql, "x402") || !Object.values(tokens).some((t) => t.startsWith("x402:")))) {
    return {
      status: "X402_PAYMENT_REQUIRED",
      checkout_session_id: s.id,
      cart_id: ctx.id,
      currency,
      total_minor: amountMinor,
      legs: unpaid.map((l) => ({ merchant_slug: l.storeId, amount_minor: l.amountMinor })),
      paid_merchant_slugs: s.legs.filter((l) => l.status === "captured").map((l) => l.storeId),
    };
  }

  // What this caller may hold (hold-guard.ts): a key the merchant blocked, or one with too many checkouts already
  // holding stock while they wait for a buyer, is refused before any hold; the session stays as it was. The legs
  // asked about at the read are these (the state check above changes amounts, never which legs are unpaid).
  const riskInputs = await riskRead;
  const { keyCreatedAt, recent, holdGuard } = "risk" in riskInputs ? riskInputs.risk : riskInputs;
  const cfg = configOf(ctx.sql);
  assertMayHold(holdGuard!, { sessionId: s.id, maxPendingApprovals: cfg.maxPendingApprovals, approvalHoldMs: cfg.approvalHoldMs, now });
  // Risk gate before settlement; a step-up or block leaves the session untouched.
  const firstStore = stores.get(unpaid[0]?.storeId ?? "");
  // an owner nobody can date (no agent_keys row, no identity time) is taken for one created now (audit X-2)
  const risk = evaluateRisk({ amountMinor, currency, now, keyCreatedAt: keyCreatedAt ?? now, recentCheckoutTimes: recent, storeCountry: firstStore?.country ?? null }, configOf(ctx.sql).riskMode);
  const gate = riskGateError(risk);
  if (gate) throw fail(gate.code, gate.message, { ...gate.details, checkout_session_id: s.id, signals: risk.signals });

  // Hold the stock and write the pending orders (one statement per store) in this turn's transaction, which also
  // commits the session IN_PROGRESS with its intent ids: both are durable before the processor is called, or
  // neither is. A shortage is a blocked state. One store: the hold rides in the state statement itself.
  s = bindIdempotencyKey(s, key);
  const prepared = prepareLegsForCharge(s.id, key, s.legs);
  const orderIds = { ...s.orderIds };
  for (const leg of prepared) orderIds[leg.storeId] ??= orderIdFor(s.id, leg.storeId);
  const byStore = new Map(totalsOf(s).stores.map((st) => [st.storeId, st]));
  const cart = ctx.state.cart as CartRecord;
  const legBody = (leg: PaymentLeg): BeginLegBody => {
    const st = byStore.get(leg.storeId)!;
    return {
      orderId: orderIds[leg.storeId],
      checkoutSessionId: s.id,
      cartId: cart.id,
      reservationId: leg.intentId as string,
      agentKeyId: body.keyId,
      currency,
      paymentRail: rail,
      paymentMethod: tokens[leg.storeId] ?? rail,
      couponCode: st.discountMinor > 0 ? cart.couponCode : null,
      subtotalMinor: st.subtotalMinor,
      discountMinor: st.discountMinor,
      shippingMinor: st.shippingMinor,
      taxMinor: st.taxMinor,
      totalMinor: leg.amountMinor,
      ...(body.buyer?.storeSlug === leg.storeId ? { buyerRef: body.buyer.buyerRef } : {}),
      shipping: shippingOfLeg(priced, cart, leg.storeId),
      ...returnPolicyOf(stores.get(leg.storeId)),
      lines: st.lines.map((l) => ({
        productId: l.productId,
        variantId: l.variantId,
        title: cart.items.find((i) => i.productId === l.productId && i.variantId === l.variantId)?.title ?? "",
        quantity: l.quantity,
        unitPriceMinor: l.unitPriceMinor,
        ...(l.priceSource === "negotiated" ? { negotiated: true } : {}),
      })),
    };
  };
  const toBegin = prepared.filter((leg) => leg.status === "processing").sort(byStoreSlug);
  const inProgress = (): SessionState => ({ ...s, ...applyCheckoutEvent(s, "begin_payment", now), legs: prepared, orderIds, tokens: { ...s.tokens, ...tokens }, rail, risk: storedRisk(risk) });
  // One store (the common cart): its hold rides in the statement that commits the session IN_PROGRESS.
  if (toBegin.length === 1 && (await beginOneLegRiding(ctx, toBegin[0]!.storeId, legBody(toBegin[0]!), inProgress(), now))) return runPayment(ctx, "charge", 0, true);
  const tx = await ctx.tx();
  // One store after another, in slug order (see byStoreSlug). The first refusal ends the loop: a shortage stops the
  // attempt, and after a statement error the transaction is aborted for the stores after it anyway.
  let refused: { reason: unknown } | undefined;
  for (const leg of toBegin) {
    try {
      await beginLegRows(tx, leg.storeId, legBody(leg), now, heldSink(ctx, leg.storeId));
    } catch (reason) {
      refused = { reason };
      break;
    }
  }
  if (refused) {
    const err = refused.reason;
    // A shortage on a session with a merchant paid: the turn's error rolls this attempt's holds and new orders back and
    // the session stays READY_FOR_PAYMENT for the remaining merchants (as at the state check above). An order the
    // merchant canceled or moved on can never be paid in this session (its order ids are its own), so the session
    // fails then, as it does without a paid merchant: the other stores' holds go back with their orders.
    const gone = err instanceof ActorError && ["order_canceled", "order_not_pending"].includes(String((err.details?.reasons as { code?: string }[] | undefined)?.[0]?.code));
    if (err instanceof ActorError && err.code === "STATE_EXECUTION_BLOCKED" && (gone || !partlyPaid(s))) {
      await endSessionUnpaid(ctx, { ...s, orderIds }, "state_blocked");
      await ctx.checkpoint();
    }
    throw err;
  }
  ctx.state.session = inProgress();
  await armSessionBy(ctx, s.id, now + STALE_IN_PROGRESS_MS);
  await ctx.checkpoint();
  return runPayment(ctx, "charge", 0, true);
}

/**
 * A single leg's hold and order rows written in the same statement as the session IN_PROGRESS with its intent id
 * and reconciler timer (one autocommit statement instead of BEGIN, hold, state, COMMIT): both durable before the
 * processor is called, or neither. False when the hold's guard refused (anything but the plain outcome: a shortage,
 * a replayed reservation, a stale hint): nothing was written, the session is as it was, and the caller takes the
 * general path, which decides those cases.
 */
async function beginOneLegRiding(ctx: Ctx, slug: string, body: BeginLegBody, inProgress: SessionState, now: number): Promise<boolean> {
  const before = ctx.state.session;
  const leg = beginLegRiding(ctx.sql, slug, body, now);
  ctx.state.session = inProgress;
  await armSessionBy(ctx, inProgress.id, now + STALE_IN_PROGRESS_MS);
  try {
    // published with the turn's next write (the settle, or the state it ends in), which the payment always makes
    heldSink(ctx, slug)(leg.done(await checkpointWith(ctx as ActorContext<unknown>, leg.write)));
    return true;
  } catch (err) {
    if (!isWriteRefused(err)) throw err;
    // The timer set above is set again or cancelled by the general path, which always decides it.
    ctx.state.session = before;
    return false;
  }
}

/** The reconciler's next look after an attempt that decided nothing: 5 s, doubling, at most 10 minutes. */
export function reconcileBackoffMs(retry: number): number {
  return Math.min(5_000 * 2 ** Math.min(retry, 20), 10 * 60_000);
}

/**
 * The merchant's decision on a capture escalated for a human (audit D6). In the cart's turn, so it cannot race the
 * session's own payment (a complete with the same key, the session timer). The processor's capture (looked up on
 * the order's own rail, `orders.payment_rail`) is what is accepted or returned:
 * - accept: the order is paid with the capture, its stock sold, and the leg captured (the session COMPLETED when it
 *   was the last leg); a capture other than the total is recorded (`orders.captured_minor`) and bounds its refunds;
 * - refund: one refund record of the capture, committed APPROVED with the store's re-drive reminder, driven by the
 *   store's own refund driver (refund-flow.ts `driveRefundRows`); only once it is REFUNDED is the order canceled and
 *   its hold released, the leg rolled back and the session ended (CANCELED; FAILED when another store's leg is still
 *   unpaid, since this session could never pay the canceled order again: review R5-3). A refusal by the processor changes
 *   nothing else: the order stays pending and flagged, and the merchant retries (the same record) or accepts.
 *   x402 cannot be refunded by the service: the order is canceled with `refund_by_merchant`, as the merchant's cancel
 *   of a paid x402 order.
 * - an x402 settlement the rail reports `unresolved` (flag `settlement_unknown`): accept pays the order under the
 *   rail's reference, refund releases it; either way the rail records the merchant's decision (`recordResolution`).
 * Either way the order's flag is cleared with a `reconciliation_resolved` event.
 */
async function resolveCapture(ctx: Ctx, body: ResolveCaptureBody): Promise<ResolveCaptureView> {
  const s = ctx.state.session;
  if (!ctx.state.cart || !s || s.id !== body.sessionId) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session for this cart.", { checkout_session_id: body.sessionId });
  const slug = body.storeSlug;
  const leg = s.legs.find((l) => l.storeId === slug);
  if (!leg || s.orderIds[slug] !== body.orderId) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: body.orderId });
  if (s.status !== "SETTLEMENT_UNKNOWN" || leg.status !== "unknown") {
    throw fail("conflict", "The checkout of this order is not waiting for reconciliation.", { order_id: body.orderId, checkout_status: s.status, leg_status: leg.status });
  }
  const now = ctx.now();
  let refund: ResolveCaptureView["refund"] = null;
  let refundByMerchant = false;
  let result: LegResult;
  let captureRef: string | null;
  // The flag is cleared at the end of the turn, with what the answer says of the checkout (repeatedResolution).
  let resolved: { o: FlaggedOrder; data: Record<string, unknown> };
  const [paidWith] = await ctx.sql<{ payment_rail: string }[]>`SELECT payment_rail FROM orders WHERE id = ${body.orderId} AND store_slug = ${slug}`;
  const railName = paidWith ? railOfOrder(paidWith.payment_rail) : null;
  if (body.action === "refund" && railName === "x402") {
    // The money sits in the merchant's wallet and the service cannot pull it back (refund-flow.ts cancelPaidOrder).
    const tx = await ctx.tx();
    const o = await lockFlaggedOrder(tx, slug, body.orderId);
    // A settlement nobody could tell (no chain, expired) is released: the rail records nothing captured, as the
    // merchant found nothing (had it arrived, it is the merchant's to pay back, as any x402 refund).
    const released = o.reconciliation === "settlement_unknown";
    if (released) await railFor(ctx.sql, "x402")?.recordResolution?.(leg.intentId as string, "released");
    await cancelPendingOrderRows(tx, slug, { orderId: o.id, reason: "reconciliation_refund" }, now, heldSink(ctx, slug));
    resolved = { o, data: { refund_by_merchant: true, ...(released ? { settlement: "released" } : {}) } };
    refundByMerchant = true;
    result = { outcome: "failed" };
    captureRef = o.captureRef;
  } else {
    const rail = railName ? railFor(ctx.sql, railName) : undefined;
    if (!rail) throw fail("PAYMENT_METHOD_NOT_CONFIGURED", "The rail this order was paid with is not available.", { rail: paidWith?.payment_rail ?? null });
    // What the processor holds is what is accepted or goes back (an amount mismatch captured another amount).
    // A leg of nothing never reached the processor (chargeLeg): there is no capture to look up.
    const found: LookupResult = leg.amountMinor === 0 ? { status: "unknown", intentId: leg.intentId as string } : await rail.lookup(leg.intentId as string);
    let tx = await ctx.tx();
    const o = await lockFlaggedOrder(tx, slug, body.orderId);
    captureRef = o.captureRef;
    // No capture, and none can come (review R5-1): a leg of nothing, or an order flagged without a capture reference
    // whose intent the processor never captured. Accepting a leg of nothing pays it (nothing to capture); refunding
    // refunds nothing: the order is canceled and its hold released.
    const noCapture = leg.amountMinor === 0 || (o.captureRef === null && NEVER_CAPTURED.has(found.status));
    // A settlement whose outcome the rail can never learn (x402 without a chain, expired): the merchant's word is
    // the only evidence, so accepting it pays the order under the rail's payment reference.
    const unresolved = found.status === "unresolved" ? found : null;
    if (found.status !== "captured" && !noCapture && !unresolved) throw fail("conflict", "The processor holds no capture for this order.", { order_id: body.orderId, processor_status: found.status });
    if (body.action === "accept") {
      if (o.status !== "pending") throw fail("conflict", `A ${o.status} order cannot be accepted as paid; refund its capture.`, { order_id: o.id, status: o.status });
      if (found.status !== "captured" && leg.amountMinor !== 0 && !unresolved) {
        throw fail("conflict", "The processor holds no capture for this order, so there is nothing to accept; resolve it with refund (nothing is refunded): the order is canceled and its stock released.", {
          order_id: o.id,
          processor_status: found.status,
          next: "refund",
        });
      }
      // Never ship goods for a capture the merchant already decided to give back (review R5-4).
      await assertNoRefundDecided(tx, o);
      const paidWithRef = o.captureRef ?? unresolved?.reference;
      // The rail's record first: should this turn fail after it, the next reconcile finds the intent captured and
      // pays the order, which is what the merchant decided.
      if (unresolved) await rail.recordResolution?.(leg.intentId as string, "captured");
      const done = await settleLegRows(
        tx,
        slug,
        // The pending → paid event carries what was captured (audit A8 MED-2; recordCapturedAmount below keeps it).
        { orderId: o.id, reservationId: leg.intentId as string, outcome: "captured", intentId: leg.intentId as string, captureRef: paidWithRef, simulated: false, totalMinor: found.status === "captured" ? found.amountMinor : leg.amountMinor, currency: leg.currency },
        now,
      );
      if (done.changed.length) ctx.publish("catalog.changed", { storeSlug: slug, upserted: done.changed, removed: [] });
      if (found.status === "captured") await recordCapturedAmount(tx, slug, o, found.amountMinor);
      resolved = { o, data: unresolved ? { payment_reference: unresolved.reference } : {} };
      captureRef = paidWithRef ?? null;
      result = { outcome: "captured", captureRef: paidWithRef };
    } else if (found.status !== "captured") {
      await cancelPendingOrderRows(tx, slug, { orderId: o.id, reason: "reconciliation_refund" }, now, heldSink(ctx, slug));
      resolved = { o, data: { nothing_captured: true } };
      result = { outcome: "failed" };
    } else {
      await recordCapturedAmount(tx, slug, o, found.amountMinor);
      const opened = await openReconcileRefund(tx, slug, o, found.amountMinor, body.userId, now);
      // APPROVED and the store's re-drive reminder are durable before the processor is called.
      await ctx.checkpoint();
      const after = await driveRefundRows(ctx, slug, opened.id);
      if (after.status !== "REFUNDED") {
        await ctx.checkpoint();
        const [f] = await ctx.sql<{ failure: string | null }[]>`SELECT failure FROM order_refunds WHERE id = ${after.id}`;
        throw fail(
          "UPSTREAM_ERROR",
          "The processor refused the refund. Nothing else changed: the order is still pending and flagged; retry the refund (the same refund is retried) or accept the capture.",
          { order_id: o.id, refund_id: after.id, refund_status: after.status, reason: f?.failure ?? null },
        );
      }
      tx = await ctx.tx();
      await cancelPendingOrderRows(tx, slug, { orderId: o.id, reason: "reconciliation_refund" }, now, heldSink(ctx, slug));
      await moveOrderAfterRefund(tx, slug, o.id, after.id, Number(after.amount_minor), now);
      resolved = { o, data: { refund_id: after.id } };
      refund = { refund_id: after.id, status: "REFUNDED", amount_minor: Number(after.amount_minor), currency: after.currency };
      result = { outcome: "failed" };
    }
  }
  const settled = settleLegs(s.legs, { [slug]: result });
  let next: SessionState = { ...s, ...withApprovalDeadline(ctx, s, applyCheckoutEvent(s, settled.event, now), now), legs: settled.legs };
  // Out of SETTLEMENT_UNKNOWN the other legs' approval has the session's own expiry again.
  if (next.status !== "SETTLEMENT_UNKNOWN") next = { ...next, approvalExpiresAt: undefined };
  ctx.state.session = next;
  if (settled.event === "payment_captured") {
    ctx.state.cart = applyCartEvent(ctx.state.cart as CartRecord, "complete", now);
    await disarmSession(ctx);
  } else if (settled.event === "settlement_unknown") {
    // Other legs are still unknown: the reconciler looks at them again (an escalated one escalates again, no timer).
    await armSession(ctx, now + 5_000, { sessionId: next.id });
  } else if (next.status === "READY_FOR_PAYMENT" && (body.action === "refund" || (await unpaidOrderCanceled(await ctx.tx(), next)))) {
    // Nothing in flight any more and this store's order is canceled (or, on an accept, another store's: its merchant
    // refunded it while this leg was still unknown, review V2-2): the session ends. With another store's leg
    // still unpaid it ends too, FAILED (review R5-3): a session's order ids are its own for good (orderIdFor), so
    // every attempt would be refused by this canceled order (STATE_EXECUTION_BLOCKED) and fail the session then;
    // advertising it READY_FOR_PAYMENT meanwhile was false. The other store's unpaid order is canceled with a reason
    // naming why, its hold released, and the buyer previews again (a new session, new orders; paid legs carry over).
    const blocked = otherStoreUnpaid(next, slug);
    next = await endSessionUnpaid(ctx, next, blocked ? "state_blocked" : "cancel", blocked ? "checkout_failed_merchant_refunded" : undefined);
  } else if (next.expiresAt !== null) {
    await armSession(ctx, next.expiresAt, { sessionId: next.id });
  }
  const tx = await ctx.tx();
  // The flag cleared with the decision's event, which keeps what this answer says of the checkout: a repeat of the
  // decision answers it again (reconcile.ts repeatedResolution; helper B, B-6).
  await clearReconciliation(tx, slug, resolved.o, body.action, body.userId, { ...resolved.data, checkout_status: next.status, cart_status: (ctx.state.cart as CartRecord).status });
  const [row] = await tx<{ status: string }[]>`SELECT status FROM orders WHERE id = ${body.orderId}`;
  return {
    order_id: body.orderId,
    merchant_slug: slug,
    action: body.action,
    order_status: row?.status ?? "unknown",
    reconciliation: null,
    capture_reference: captureRef,
    refund,
    ...(refundByMerchant ? { refund_by_merchant: true as const } : {}),
    checkout_session_id: next.id,
    checkout_status: next.status,
    cart_status: (ctx.state.cart as CartRecord).status,
  };
}

/** Processor answers for an intent that holds no money and never will (an unknown intent was never charged). */
const NEVER_CAPTURED: ReadonlySet<LookupResult["status"]> = new Set(["unknown", "declined", "failed", "not_approved"]);

/** A payment whose answer was lost (or whose turn died): ask the rail by the same intent ids. */
async function reconcileSession(ctx: Ctx, sessionId: string, retry = 0): Promise<void> {
  const s = ctx.state.session;
  if (!s || s.id !== sessionId) return;
  if (s.status === "IN_PROGRESS") ctx.state.session = { ...s, ...applyCheckoutEvent(s, "settlement_unknown", ctx.now()) };
  if (ctx.state.session?.status !== "SETTLEMENT_UNKNOWN") return;
  try {
    await runPayment(ctx, "reconcile", retry);
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    // A rollback, an escalation or a still-unknown answer was committed by runPayment; the timer's job is done.
    if (decidedErrors.has(err)) return;
    // Refused before anything was decided (no rail on this host, …): the session must be looked at again, or it
    // stays SETTLEMENT_UNKNOWN with its stock held and no timer.
    await armSession(ctx, ctx.now() + reconcileBackoffMs(retry), { sessionId, retry: retry + 1 });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The actor

/** The cart statuses the retention rule deletes (never CHECKOUT or COMPLETED: a paid cart stays). */
const RETENTION_STATUSES: ReadonlySet<CartStatus> = new Set(["OPEN", "EXPIRED", "ABANDONED", "REPLACED"]);

export const cartActor = defineActor({
  kind: "cart",
  initialState: (): CartState => ({ cart: null, session: null, sessionSeq: 0 }),
  messages: CartMessages,
  // cart ids are fresh random uuids: creating one needs no read of actor_state (the insert is the fence)
  createdBy: ["create"],
  // the expiry the cart retention rule reads (infra/retention.ts DELETE_STATEMENTS.carts, migration 0096), for a cart in
  // a status the rule deletes; a cart checking out or paid reports none and its stored one is left as it was
  expiryOf: (s) => (s.cart && RETENTION_STATUSES.has(s.cart.status) && Number.isFinite(s.cart.expiresAt) ? Math.floor(s.cart.expiresAt) : undefined),
  async onActivate(ctx) {
    // A session loaded IN_PROGRESS had its turn die mid-payment (a live turn is never observed by a new
    // activation). Money may have moved: reconcile by intent id, never charge anew.
    const s = ctx.state.session;
    if (s && s.status === "IN_PROGRESS") {
      ctx.state.session = { ...s, ...applyCheckoutEvent(s, "settlement_unknown", ctx.now()) };
      await armSession(ctx, ctx.now(), { sessionId: s.id });
    }
  },
  handlers: {
    async create(ctx, body: CreateBody): Promise<CreatedCartView> {
      if (ctx.state.cart) throw fail("conflict", "A cart with this id exists.", { cart_id: ctx.id });
      const now = ctx.now();
      // One line per product/variant: repeated items add up.
      // `at`: the request index of the line's first item, which errors name (audit R3 LOW-5: not the merged index).
      const merged = new Map<string, { productId: string; variantId: string | null; quantity: number; at: number }>();
      for (const [at, it] of body.items.entries()) {
        const k = `${it.productId.toLowerCase()}:${it.variantId?.toLowerCase() ?? ""}`;
        const prev = merged.get(k);
        merged.set(k, { productId: it.productId.toLowerCase(), variantId: it.variantId?.toLowerCase() ?? null, quantity: (prev?.quantity ?? 0) + it.quantity, at: prev?.at ?? at });
      }
      // The line bound holds for the merged line too (audit R5 MED-2; a later rebuild of the cart from its lines
      // would otherwise fail the message schema).
      for (const m of merged.values()) {
        const tooLarge = mergedLineTooLarge(m.at, m.productId, m.variantId, m.quantity);
        if (tooLarge) throw tooLarge;
      }
      const catalog = await readCatalog(ctx.sql, [...merged.values()].map((m) => m.productId), body.keyId);
      const items: CartItem[] = [];
      [...merged.values()].forEach((m) => {
        const i = m.at;
        const c = catalog.get(m.productId);
        if (!c || !c.active || !c.store.eligible) {
          throw fail("PRODUCT_NOT_FOUND", "No such product, or its merchant is not available.", { product_id: m.productId, field: `items[${i}].product_id` });
        }
        if (m.variantId && !variantOf(c, m.variantId)) {
          throw fail("PRODUCT_NOT_FOUND", "No such variant of this product.", { product_id: m.productId, variant_id: m.variantId, field: `items[${i}].variant_id` });
        }
        const noVariant = variantMissing(i, { id: m.productId, title: c.title, variants: c.variants }, m.variantId);
        if (noVariant) throw noVariant;
        const available = availableFor(c, m.variantId);
        if (available !== null && available < m.quantity) {
          throw stockShortfall(i, m.productId, m.quantity, available);
        }
        const v = variantOf(c, m.variantId);
        items.push({ productId: m.productId, variantId: m.variantId, storeSlug: c.storeSlug, title: v?.title ? `${c.title} (${v.title})` : c.title, quantity: m.quantity });
      });
      const header = newCartHeader(now);
      const draft: CartRecord = { ...header, id: ctx.id, keyId: body.keyId, createdAt: now, currency: "", items, couponCode: null };
      let priced = await price(ctx, draft, null, catalog); // CURRENCY_MISMATCH here
      draft.currency = priced.totals.currency;
      let dropped: CreatedCartView["coupon_dropped"];
      if (body.carryOver) ({ priced, dropped } = await carryOver(ctx, draft, body.carryOver, catalog, priced));
      ctx.state.cart = draft;
      return { ...cartView(ctx.state, priced.totals), ...(dropped ? { coupon_dropped: dropped } : {}) };
    },

    async get(ctx, body): Promise<CartView> {
      const cart = ownCart(ctx, body.keyId);
      if (isCartExpired(cart, ctx.now(), checkoutEnded(ctx))) throw fail("CART_NOT_FOUND", "The cart has expired; create a new cart.", { cart_id: ctx.id, reason: "expired" });
      const priced = await price(ctx, cart);
      return cartView(ctx.state, priced.totals);
    },

    async getForEdit(ctx, body): Promise<CartView> {
      const cart = ownCart(ctx, body.keyId);
      assertCartWritable(ctx, cart, ctx.now());
      const priced = await price(ctx, cart);
      return cartView(ctx.state, priced.totals);
    },

    async applyCoupon(ctx, body): Promise<CouponAnswer> {
      return couponOnCart(ctx, body, "apply");
    },

    async checkCoupon(ctx, body): Promise<CouponAnswer> {
      return couponOnCart(ctx, body, "check");
    },

    async selectShipping(ctx, body): Promise<ShippingRatesView> {
      const { priced, zones } = await chooseCartShipping(ctx, body.keyId, body.shipping, body.expectedRevision);
      return shippingRatesView(ctx.state, priced, zones);
    },

    async clearShipping(ctx, body): Promise<CartView> {
      ownCart(ctx, body.keyId);
      await endDueSession(ctx);
      const cart = ownCart(ctx, body.keyId);
      assertNotReplaced(cart);
      let next = cart;
      if (cart.shipping) next = changeCartShipping(ctx, cart, null, ctx.now(), body.expectedRevision);
      else if (body.expectedRevision !== undefined && body.expectedRevision !== cart.revision) assertCartMutable(cart, ctx.now(), body.expectedRevision);
      const priced = await price(ctx, next);
      ctx.state.cart = next;
      return cartView(ctx.state, priced.totals);
    },

    async preview(ctx, body): Promise<PreviewView> {
      return (await doPreview(ctx, body.keyId, body.expectedRevision, body.shipping)).view;
    },

    async complete(ctx, body): Promise<CompleteReply> {
      ownSessionOfCart(ctx, body.keyId, body.sessionId);
      return doComplete(ctx, body, body.sessionId, null);
    },

    async precheck(ctx, body): Promise<PrecheckView> {
      return doPrecheck(ctx, body);
    },

    async checkout(ctx, body): Promise<CompleteReply> {
      const cart = ownCart(ctx, body.keyId);
      assertNotReplaced(cart);
      await endDueSession(ctx);
      const s = ctx.state.session;
      // A session that is running, waiting or done answers for itself (idempotency); otherwise the caller
      // approves the current state: preview and complete in one turn.
      if (s && (!TERMINAL_CHECKOUT_STATUSES.has(s.status) || s.status === "COMPLETED") && s.status !== "OPEN" && s.status !== "READY_FOR_PAYMENT") {
        return doComplete(ctx, body, s.id, null);
      }
      if (body.refuseAfterMerchantCancel && s?.status === "CANCELED" && s.canceledByMerchant) {
        throw fail("SESSION_INACTIVE", "The checkout session was canceled by the merchant; nothing more can be charged in it.", { checkout_session_id: s.id, status: "CANCELED", reason: "canceled_by_merchant" });
      }
      // Another key on a live session bound to one is refused before the preview (review V2-3): the preview re-bases
      // the session's approved state and is committed, so a refused call would have moved it (a price beyond the
      // blocking cut then paid by the first key without reconfirmation) while saying "nothing was done".
      if (s && (s.status === "OPEN" || s.status === "READY_FOR_PAYMENT") && s.idempotencyKey !== null && body.idempotencyKey !== undefined && body.idempotencyKey !== s.idempotencyKey) {
        decideComplete(s, body.idempotencyKey); // throws IDEMPOTENCY_KEY_CONFLICT (or the key's own 400) naming the session
      }
      assertPaymentMethodKeys(cart, body);
      assertNamedTokensBeforePreview(ctx, cart, body);
      const { priced } = await doPreview(ctx, body.keyId, undefined, body.shipping);
      // Commit the preview now: the rest of the turn reads through the pool, and a turn must not hold its
      // transaction's connection while it waits for another one (pool exhaustion under many carts at once).
      await ctx.checkpoint();
      const sessionId = (ctx.state.session as SessionState).id;
      try {
        return await doComplete(ctx, body, sessionId, priced);
      } catch (err) {
        throw namingSession(err, sessionId);
      }
    },

    async resolveCapture(ctx, body): Promise<ResolveCaptureView> {
      return resolveCapture(ctx, body);
    },

    async replace(ctx, body): Promise<{ cart_id: string; status: string; replaced_by_cart_id: string }> {
      const cart = ownCart(ctx, body.keyId);
      const now = ctx.now();
      // Only the cart the edit was built from: a cart changed since (another edit, a coupon, a preview) is refused,
      // with the refusal every write gets (a session that froze it meanwhile is named).
      assertCartWritable(ctx, cart, now, body.expectedRevision);
      const replacedBy = body.replacedBy.toLowerCase();
      ctx.state.cart = { ...applyCartEvent(cart, "replace", now, body.expectedRevision), replacedBy };
      return { cart_id: cart.id, status: ctx.state.cart.status, replaced_by_cart_id: replacedBy };
    },

    async discard(ctx, body): Promise<{ cart_id: string; status: string }> {
      const cart = ownCart(ctx, body.keyId);
      ctx.state.cart = applyCartEvent(cart, "discard", ctx.now());
      return { cart_id: cart.id, status: ctx.state.cart.status };
    },

    async cancel(ctx, body): Promise<{ checkout_session_id: string; status: string }> {
      ownSessionOfCart(ctx, body.keyId, body.sessionId);
      // A session past its expiry whose timer has not run yet is ended as the timer would end it (EXPIRED, its orders
      // canceled and checkout.abandoned sent), and that is committed: the cancel below then refuses it 409
      // SESSION_INACTIVE (details.status EXPIRED), as it does once the timer ran. It answered 200 CANCELED before the
      // timer and 409 after, so the answer (and the orders' cancel reason) depended on the reminder poll (helper D).
      const wasDue = ctx.state.session;
      await endDueSession(ctx);
      if (ctx.state.session !== wasDue) await ctx.checkpoint();
      const s = ctx.state.session as SessionState;
      if (body.storeSlug !== undefined) assertOnlyStoreLeft(s, body.storeSlug);
      // Without a store named, the session's agent cancels (its checkout, or one of its orders): the orders' cancel
      // events record canceled_by agent, so its repeated order cancel answers 200 again (review RC-3).
      const moved = await endSessionUnpaid(ctx, s, "cancel", undefined, body.storeSlug === undefined, body.storeSlug !== undefined);
      if (body.storeSlug !== undefined) ctx.state.session = { ...moved, canceledByMerchant: true };
      return { checkout_session_id: moved.id, status: moved.status };
    },
  },
  reminders: {
    /**
     * The session's one timer. While money may be moving (IN_PROGRESS, SETTLEMENT_UNKNOWN) it is the reconciler
     * (one timer instead of two saves a statement per checkout); otherwise session expiry: an unfinished session
     * past its time is EXPIRED, its holds released, `checkout.abandoned` sent.
     */
    async session(ctx, payload) {
      // The fired row is deleted with this turn unless it is armed again below (host.ts): no longer known.
      ctx.state.sessionTimer = null;
      const s = ctx.state.session;
      const id = (payload as { sessionId?: string } | null)?.sessionId;
      // Fired before the payment's own time (armSessionBy kept an earlier row, e.g. its preview's): a payment this
      // young may still be running on another host (a moved partition), so it is looked at when it is stale, not now.
      if (s && s.id === id && s.status === "IN_PROGRESS" && !isStaleInProgress(s, ctx.now())) {
        await armSession(ctx, s.updatedAt + STALE_IN_PROGRESS_MS, { sessionId: s.id });
        return;
      }
      if (s && s.id === id && (s.status === "IN_PROGRESS" || s.status === "SETTLEMENT_UNKNOWN")) return reconcileSession(ctx, s.id, (payload as { retry?: number } | null)?.retry ?? 0);
      if (!s || s.id !== id || !LIVE_WAITING.has(s.status) || s.expiresAt === null) return;
      const now = ctx.now();
      if (now < s.expiresAt) {
        await armSession(ctx, s.expiresAt, { sessionId: s.id });
        return;
      }
      await expireSession(ctx, s);
    },
    /** Timers named `reconcile` scheduled before the session timer took that job over. */
    async reconcile(ctx, payload) {
      const id = (payload as { sessionId?: string } | null)?.sessionId;
      if (id) await reconcileSession(ctx, id);
    },
  },
});

export { commerceMessages };
