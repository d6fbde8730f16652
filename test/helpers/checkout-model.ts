/**
 * A model of carts, checkout sessions, orders and refunds for the model-based test
 * (test/http/model-checkout.test.ts): fast-check commands that drive the real service over HTTP, each checking the
 * answer against what the model predicts from docs/checkout.md, and the money invariants checked after every command
 * from the API and read-only SQL on the test database.
 *
 * The model predicts only what the docs decide; where an answer depends on something the model does not hold (the
 * stock other runs left), it reads that first (read-only) and predicts from it.
 */
import { expect } from "bun:test";
import fc from "fast-check";
import { ERROR_TABLE, isErrorCode } from "../../actors/runtime/errors.ts";
import type { ManualClock } from "../../actors/runtime/clock.ts";
import { accept, connect, type Connected } from "../mcp/helpers.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "./agents.ts";
import type { Sql, TxSql } from "../../infra/db.ts";
import type { TestServer } from "./server.ts";

// ---------------------------------------------------------------------------------------------------------------
// The world: the booted service, the two tenants, the operator's session and the products the runs buy.

export interface Product {
  id: string;
  /** The variant a line of this entry names (null: the product itself). */
  variantId: string | null;
  /** A product with variants named without one: a cart refuses such a line (MISSING_REQUIRED_ARGUMENT). */
  needsVariant: boolean;
  store: string;
  /** The unit price a line pays: the variant's own price where it has one, else the product's. */
  priceMinor: number;
  tracked: boolean;
}

/** The stock level a line of a product (and variant) holds: `productId` or `productId:variantId`. */
export const stockKey = (productId: string, variantId: string | null): string => (variantId ? `${productId}:${variantId}` : productId);
const sameLine = (p: Product, productId: string, variantId: string | null) => p.id === productId && p.variantId === variantId;
/** The catalog entry of a cart line (the model's lines name products the world picked). */
const productOf = (w: World, l: { productId: string; variantId: string | null }): Product => w.products.find((p) => sameLine(p, l.productId, l.variantId))!;

/**
 * The unit price a cart line is priced at now (docs/catalog.md "negotiate"): the key's latest accepted, unused offer
 * for the product while it has not expired, for a line without a variant or a variant sold at the product's list
 * price; a variant with its own price pays it; otherwise the list price. The offers are the world's (they outlive a
 * run's model), so they are read.
 */
async function unitPrice(w: World, l: { productId: string; variantId: string | null }): Promise<number> {
  const p = productOf(w, l);
  const [row] = await w.srv.db.sql<{ price_minor: string }[]>`SELECT price_minor FROM products WHERE id = ${l.productId}`;
  if (l.variantId && p.priceMinor !== Number(row!.price_minor)) return p.priceMinor;
  const o = await latestOffer(w, l.productId);
  return o && o.live ? Math.min(o.priceMinor, p.priceMinor) : p.priceMinor;
}

/** The key's latest accepted, unused offer for a product: its price, whether it has not expired, the order holding it. */
async function latestOffer(w: World, productId: string): Promise<{ id: string; priceMinor: number; live: boolean; orderId: string | null } | null> {
  const [o] = await w.srv.db.sql<{ id: string; negotiated_price_minor: string; live: boolean; order_id: string | null }[]>`
    SELECT id, negotiated_price_minor, expires_at > ${new Date(w.clock?.now() ?? Date.now())} AS live, order_id::text FROM negotiation_offers
     WHERE agent_key_id = ${w.key.id} AND product_id = ${productId} AND status = 'accepted' AND used_at IS NULL
     ORDER BY created_at DESC LIMIT 1`;
  return o ? { id: o.id, priceMinor: Number(o.negotiated_price_minor), live: o.live, orderId: o.order_id } : null;
}

/**
 * Whether the payment of the cart's unpaid stores would meet prices other than the session previewed (an offer
 * negotiated, used or expired since), or an offer another cart's order holds (negotiated_price_used): the model then
 * follows the service, and a capture may only be lower than what was previewed (a payer never pays more unasked).
 */
async function pricesMoved(w: World, cart: MCart): Promise<boolean> {
  const s = cart.session;
  for (const l of cart.lines) {
    if (cart.paidStores.has(productOf(w, l).store)) continue;
    if (s?.previewedUnits && s.previewedUnits[stockKey(l.productId, l.variantId)] !== (await unitPrice(w, l))) return true;
    const o = await latestOffer(w, l.productId);
    if (o?.orderId) {
      const [held] = await w.srv.db.sql<{ cart_id: string | null }[]>`SELECT cart_id::text FROM orders WHERE id = ${o.orderId}`;
      if (held?.cart_id !== cart.id) return true;
    }
  }
  return false;
}

/** The product with variants the runs buy (demo store DS-0001): its two variants' stock is small, one has its own price. */
export const VARIANT_PRODUCT_EXTERNAL_ID = "DS-0001";
export const VARIANT_OWN_PRICE_MINOR = 27999;

export interface World {
  srv: TestServer;
  key: TestKey;
  other: TestKey;
  /** The operator's session token: it may act as the merchant of every store. */
  admin: string;
  /** The session token of another store's owner (cozy-paws-supply): every order and refund here is not its own. */
  stranger: string;
  products: Product[];
  /** stock_quantity + units committed (sold, not returned) per tracked product, at boot: constant for ever. */
  stockBaseline: Map<string, number>;
  /** Sessions whose payment outcome is unknown (tok_lost_response) until their next call or timer settles them. */
  unsettledSessions: Set<string>;
  /** What was sent and answered, for a failing run's report. */
  trace: string[];
  /** How often each known finding's answer was seen (KNOWN_FINDINGS). */
  known: Map<string, number>;
  /** The stores' shipping zones (read once, read-only). */
  zones?: Zone[];
  /** The MCP session on the demo store's endpoint, of the key it was opened with. */
  mcp?: { keyId: string; conn: Connected };
  /** The server's clock (a manual one: time passes only when a TimePasses command moves it). */
  clock?: ManualClock;
}

interface Zone {
  id: string;
  store: string;
  countries: string[];
  prefixes: string[];
  currency: string;
  base: number;
  perItem: number;
  freeOver: number | null;
}

async function zonesOf(w: World, store: string): Promise<Zone[]> {
  w.zones ??= (
    await w.srv.db.sql<{ id: string; store_slug: string; countries: string[]; postal_prefixes: string[]; currency: string; base_minor: string; per_item_minor: string; free_over_minor: string | null }[]>`
      SELECT id, store_slug, countries, postal_prefixes, currency, base_minor, per_item_minor, free_over_minor FROM shipping_zones`
  ).map((z) => ({ id: z.id, store: z.store_slug, countries: z.countries, prefixes: z.postal_prefixes, currency: z.currency, base: Number(z.base_minor), perItem: Number(z.per_item_minor), freeOver: z.free_over_minor === null ? null : Number(z.free_over_minor) }));
  return w.zones.filter((z) => z.store === store);
}

/**
 * The zone a store quotes for a destination (docs/checkout.md "Shipping"): without one, its only country-wide zone
 * for its own country (the seeded stores are US stores with one); with one, the zone serving it most specifically (a
 * matching postal prefix, longest, beats a country-wide zone); `unserved` when none serves it; null when the store has
 * no zones (free). Stores offering a choice of equally specific zones are not in the model.
 */
async function quoteZone(w: World, store: string, dest: Destination | null): Promise<Zone | "unserved" | null> {
  const zones = (await zonesOf(w, store)).filter((z) => z.currency === "USD");
  if (zones.length === 0) return null;
  if (!dest) {
    const domestic = zones.filter((z) => z.countries.includes("US") && z.prefixes.length === 0);
    expect({ store, domestic: domestic.length }).toEqual({ store, domestic: 1 });
    return domestic[0]!;
  }
  const postal = dest.postal_code.toUpperCase().replace(/\s+/g, "");
  const serving = zones
    .filter((z) => z.countries.includes(dest.country_code))
    .map((z) => ({ z, len: z.prefixes.length === 0 ? 0 : Math.max(-1, ...z.prefixes.filter((p) => postal.startsWith(p.toUpperCase())).map((p) => p.length)) }))
    .filter((x) => x.len >= 0);
  if (serving.length === 0) return "unserved";
  const best = Math.max(...serving.map((x) => x.len));
  const top = serving.filter((x) => x.len === best);
  expect({ store, dest, choices: top.length }).toEqual({ store, dest, choices: 1 });
  return top[0]!.z;
}

/** Reads the products the runs buy: tracked (small stock, so shortages happen) and untracked, on two stores. */
export async function pickProducts(srv: TestServer): Promise<Product[]> {
  const rows = await srv.db.sql<{ id: string; store_slug: string; price_minor: string; tracked: boolean }[]>`
    (SELECT id, store_slug, price_minor, true AS tracked FROM products
      WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity BETWEEN 6 AND 12
        AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 2)
    UNION ALL
    (SELECT id, store_slug, price_minor, false FROM products
      WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity IS NULL
        AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1)
    UNION ALL
    (SELECT id, store_slug, price_minor, true FROM products
      WHERE store_slug = 'greenleaf-living' AND active AND in_stock AND stock_quantity BETWEEN 5 AND 10
        AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1)
    UNION ALL
    (SELECT id, store_slug, price_minor, false FROM products
      WHERE store_slug = 'greenleaf-living' AND active AND in_stock AND stock_quantity IS NULL
        AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1)`;
  const out: Product[] = rows.map((r) => ({ id: r.id, variantId: null, needsVariant: false, store: r.store_slug, priceMinor: Number(r.price_minor), tracked: r.tracked }));
  // A product with two variants, set up before any cart (a fixture, as a merchant's catalog import would): variant 0
  // has 4 units at the product's price, variant 1 has 2 units at its own price; the product's stock is their sum.
  const [v] = await srv.db.sql<{ id: string; price_minor: string; a: string; b: string }[]>`
    SELECT id, price_minor, variants->0->>'id' AS a, variants->1->>'id' AS b FROM products
     WHERE store_slug = 'demo-store' AND external_id = ${VARIANT_PRODUCT_EXTERNAL_ID} AND jsonb_array_length(variants) = 2`;
  await srv.db.sql`UPDATE products SET stock_quantity = 6, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
      variants = jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(variants, '{0,stockQuantity}', '4'), '{0,inStock}', 'true'),
        '{1,stockQuantity}', '2'), '{1,inStock}', 'true'), '{1,priceMinor}', to_jsonb(${VARIANT_OWN_PRICE_MINOR}::int))
    WHERE id = ${v!.id}`;
  const base = Number(v!.price_minor);
  out.push({ id: v!.id, variantId: v!.a, needsVariant: false, store: "demo-store", priceMinor: base, tracked: true });
  out.push({ id: v!.id, variantId: v!.b, needsVariant: false, store: "demo-store", priceMinor: VARIANT_OWN_PRICE_MINOR, tracked: true });
  out.push({ id: v!.id, variantId: null, needsVariant: true, store: "demo-store", priceMinor: base, tracked: true });
  return out;
}

/** Every stock level the runs can move: each tracked product, and each tracked variant beside its product. */
function stockKeys(products: Product[]): string[] {
  const keys = new Set<string>();
  for (const p of products.filter((x) => x.tracked && !x.needsVariant)) {
    keys.add(p.id);
    if (p.variantId) keys.add(stockKey(p.id, p.variantId));
  }
  return [...keys];
}

export async function readStockBaseline(srv: TestServer, products: Product[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const key of stockKeys(products)) {
    const f = await stockFacts(srv.db.sql, key);
    out.set(key, f.stock + f.committed);
  }
  return out;
}

/**
 * A stock level (`stockKey`) as the database holds it: on hand, reserved, and the units the held and committed
 * reservations name. A variant's level is its `variants[].stockQuantity` and `variant_reserved`, its reservation units
 * the lines' `variants` objects; `inStock: false` makes it unavailable (counted as 0 on hand for availability only).
 */
async function stockFacts(sql: Sql | TxSql, key: string): Promise<{ stock: number; reserved: number; held: number; committed: number; inStock: boolean }> {
  const [productId, variantId] = key.split(":") as [string, string | undefined];
  // One statement, so one snapshot: the product row and the reservations are written together (one statement per
  // hold, release or capture), but two reads could fall on either side of a write a background turn commits meanwhile
  // (a session expiring on the reminder poll after a TimePasses) and see reserved units whose hold is already released.
  if (variantId) {
    const [p] = await sql<{ s: number; r: number | null; in_stock: boolean; held: string | null; committed: string | null }[]>`
      SELECT (v->>'stockQuantity')::int AS s, (variant_reserved->>${variantId})::int AS r, COALESCE((v->>'inStock')::boolean, true) AS in_stock, u.held, u.committed
        FROM products, jsonb_array_elements(variants) v,
             (SELECT sum((l->'variants'->>${variantId})::int) FILTER (WHERE r.status = 'held') AS held,
                     sum((l->'variants'->>${variantId})::int) FILTER (WHERE r.status = 'committed') AS committed
                FROM stock_reservations r, jsonb_array_elements(r.lines) l WHERE l->>'productId' = ${productId}) u
       WHERE id = ${productId} AND v->>'id' = ${variantId}`;
    return { stock: p!.s, reserved: p!.r ?? 0, held: Number(p!.held ?? 0), committed: Number(p!.committed ?? 0), inStock: p!.in_stock };
  }
  const [p] = await sql<{ s: number; r: number; in_stock: boolean; held: string | null; committed: string | null }[]>`
    SELECT stock_quantity AS s, reserved_quantity AS r, in_stock, u.held, u.committed
      FROM products,
           (SELECT sum((l->>'quantity')::int) FILTER (WHERE r.status = 'held') AS held,
                   sum((l->>'quantity')::int) FILTER (WHERE r.status = 'committed') AS committed
              FROM stock_reservations r, jsonb_array_elements(r.lines) l WHERE l->>'productId' = ${productId}) u
     WHERE id = ${productId}`;
  return { stock: p!.s, reserved: p!.r, held: Number(p!.held ?? 0), committed: Number(p!.committed ?? 0), inStock: p!.in_stock };
}

/**
 * Units a new hold of this product can take now (stock − held); untracked: unbounded. `ownCart`: as if that cart had
 * neither held nor sold any of it. A pair's second answer is predicted after it ran: the units it held (a new link
 * after a refusal at the old one) or sold (its capture) are its own, not units it met. Only the products of the
 * cart's unpaid stores are asked, and the first call of the pair left none of those held or sold when the second
 * goes on to a new attempt (it rolled back, or only reported the buyer's refusal), nor did any earlier call (a paid
 * store's leg is never attempted again).
 */
async function available(w: World, line: { productId: string; variantId: string | null }, ownCart?: string): Promise<number> {
  const p = productOf(w, line);
  if (!p.tracked) return Number.POSITIVE_INFINITY;
  // a variant line needs units at both levels: the product's (its roll-up) and the variant's own
  let least = Number.POSITIVE_INFINITY;
  for (const key of line.variantId ? [line.productId, stockKey(line.productId, line.variantId)] : [line.productId]) {
    const f = await stockFacts(w.srv.db.sql, key);
    let units = f.stock - f.reserved;
    if (ownCart) {
      const [own] = await w.srv.db.sql<{ units: string | null }[]>`
        SELECT sum(CASE WHEN ${key.includes(":")} THEN (l->'variants'->>${line.variantId ?? ""})::int ELSE (l->>'quantity')::int END) AS units
          FROM stock_reservations r JOIN orders o ON o.id = r.order_id, jsonb_array_elements(r.lines) l
         WHERE r.status IN ('held', 'committed') AND o.cart_id = ${ownCart} AND l->>'productId' = ${line.productId}`;
      // a held unit counts in `reserved`, a sold one left `stock`: either way the second call's own units come back
      units += Number(own?.units ?? 0);
    } else if (key.includes(":") && !f.inStock) units = 0;
    least = Math.min(least, Math.max(0, units));
  }
  return least;
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP with the envelope checked on every answer.

/** An answer as the commands read it (module-internal: the JSON fields are read where the spec names them). */
interface Answer {
  status: number;
  body: { success?: boolean; data?: Record<string, any>; error?: unknown; code?: unknown; details?: Record<string, any> };
}

/** Every error answer (and the 202 user_action_required) is the spec's envelope with a code of errors.ts at its status. */
function assertEnvelope(what: string, r: Answer): void {
  if (r.status < 400 && r.status !== 202) {
    expect({ what, success: r.body?.success }).toEqual({ what, success: true });
    return;
  }
  const code = typeof r.body?.code === "string" ? r.body.code : "";
  const envelope = {
    what,
    success: r.body?.success,
    error: typeof r.body?.error,
    known: isErrorCode(code),
    http: isErrorCode(code) ? ERROR_TABLE[code].http : undefined,
    details: r.body?.details === undefined || (typeof r.body.details === "object" && r.body.details !== null && !Array.isArray(r.body.details)),
  };
  expect(envelope).toEqual({ what, success: false, error: "string", known: true, http: r.status, details: true });
}

async function call(w: World, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const r = await w.srv.json(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const answer: Answer = { status: r.status, body: (r.body ?? {}) as Answer["body"] };
  w.trace.push(`${method} ${path} ${body === undefined ? "" : JSON.stringify(body)} -> ${r.status} ${typeof answer.body.code === "string" ? answer.body.code : ""}`);
  if (answer.body.success === false) w.trace.push(`  ! ${JSON.stringify({ error: answer.body.error, details: answer.body.details }).slice(0, 700)}`);
  assertEnvelope(`${method} ${path}`, answer);
  return answer;
}

const merchant = (w: World) => ({ authorization: `Bearer ${w.admin}` });

/** `status` and `code` of an answer, to compare with a prediction in one expect (a failure shows both). */
const outcome = (r: Answer) => ({ status: r.status, code: typeof r.body.code === "string" ? r.body.code : null });

// ---------------------------------------------------------------------------------------------------------------
// The model.

export type Token =
  | "MOCK"
  | "tok_approve"
  | "tok_decline"
  | "tok_fail"
  | "tok_not_approved"
  | "tok_needs_approval"
  | "tok_lost_response"
  | "tok_amount_mismatch"
  | "tok_finalization_fails"
  | "tok_bogus";

type SessionStatus = "READY_FOR_PAYMENT" | "PENDING_EXTERNAL_CONFIRMATION" | "SETTLEMENT_UNKNOWN" | "COMPLETED" | "FAILED" | "CANCELED" | "EXPIRED";
/** A leg as the model holds it: unpaid (with the outcome the rail last gave), waiting for the buyer, or captured. */
interface Leg {
  store: string;
  status: "unpaid" | "awaiting" | "captured";
  /** The method the store's last attempt in this session used: a call naming none repeats it (audit DZ-1). */
  lastMethod: Token | null;
  /** For an awaiting leg: the link and what the buyer decided there. */
  link: string | null;
  decision: "approve" | "reject" | null;
}

interface MSession {
  id: string;
  status: SessionStatus;
  key: string | null;
  legs: Leg[];
  /** Each store's total as the last preview of this session showed it: what its capture must be. */
  previewed?: Record<string, number>;
  /** Each line's unit price (by stockKey) as that preview priced it. */
  previewedUnits?: Record<string, number>;
  /** Prices moved since the preview when the last payment began (pricesMoved): its capture may be lower, never higher. */
  moved?: boolean;
}

/** A destination the buyer may give at preview (docs/checkout.md "Shipping"), or none (the cart's recorded one). */
export type Destination = { country_code: string; postal_code: string };
export const DESTINATIONS: Record<string, Destination> = {
  domestic: { country_code: "US", postal_code: "94107" },
  alaska: { country_code: "US", postal_code: "99501" },
  canada: { country_code: "CA", postal_code: "M5V 2T6" },
  abroad: { country_code: "GB", postal_code: "SW1A 1AA" },
  unserved: { country_code: "BR", postal_code: "01000-000" },
};

export interface MCart {
  id: string;
  lines: { productId: string; variantId: string | null; quantity: number }[];
  stores: string[];
  /** OPEN, CHECKOUT (a live session, or an ended one after some merchant was paid) or COMPLETED. */
  status: "OPEN" | "CHECKOUT" | "COMPLETED";
  session: MSession | null;
  /** Stores paid in this cart, whatever session paid them: each must have exactly one paid order. */
  paidStores: Set<string>;
  coupon: string | null;
  /** The destination recorded on the cart (null: none given; the stores' domestic quote). */
  dest: Destination | null;
}

export interface MOrder {
  id: string;
  cartId: string;
  store: string;
  status: "paid" | "fulfilled" | "shipped" | "delivered" | "canceled" | "refunded";
  capturedMinor: number;
  refundedMinor: number;
  /** Products and units the order sold (tracked or not). */
  items: { productId: string; variantId: string | null; quantity: number }[];
  /**
   * Whether the merchant's own move put the order in its status (its repeat then answers 200, docs/checkout.md "A
   * merchant's repeated decision answers the decision made"); undefined when a race's read-back moved it (read then).
   */
  byMerchant?: boolean;
  /** What the merchant's cancel of the paid order refunded (its repeat answers that refund; 0: refund null). */
  cancelRefundMinor?: number;
}

export interface MRefund {
  id: string;
  orderId: string;
  amountMinor: number;
  status: "PENDING_APPROVAL" | "REFUNDED" | "REJECTED";
  /**
   * Who rejected it: the merchant's reject (its repeat answers 200) or the merchant's cancel of the order, which
   * supersedes open requests (a reject of it stays 409: the merchant did not reject it); undefined when read back.
   */
  rejectedBy?: "merchant" | "cancel";
}

export interface Model {
  carts: MCart[];
  orders: MOrder[];
  refunds: MRefund[];
}

export const emptyModel = (): Model => ({ carts: [], orders: [], refunds: [] });

const refundableOf = (m: Model, o: MOrder) =>
  o.capturedMinor - o.refundedMinor - m.refunds.filter((r) => r.orderId === o.id && r.status === "PENDING_APPROVAL").reduce((s, r) => s + r.amountMinor, 0);
const openRefunds = (m: Model, o: MOrder) => m.refunds.filter((r) => r.orderId === o.id && r.status === "PENDING_APPROVAL").length;

type Cmd = fc.AsyncCommand<Model, World, boolean>;
const pick = <T>(xs: T[], i: number): T => xs[i % xs.length]!;

// ---------------------------------------------------------------------------------------------------------------
// Invariants, from read-only SQL over the whole test database (every run's carts): checked after every command.

export async function checkInvariants(w: World, where: string): Promise<void> {
  // One snapshot for every read (a read-only REPEATABLE READ transaction): the service's timers go on between the
  // model's commands (a previous run's session expiring on the reminder poll once a TimePasses moved the clock, a
  // refund reminder), and reads on either side of one of their commits would pair a product's reserved units with
  // holds already released, or a capture with an order not yet paid: invariants broken only between two reads.
  const problems = await w.srv.db.sql.begin("isolation level repeatable read read only", (sql) => invariantProblems(w, sql));
  expect({ where, problems }).toEqual({ where, problems: [] });
}

async function invariantProblems(w: World, sql: TxSql): Promise<string[]> {
  const problems: string[] = [];

  // no order duplicated: one order per session and store; one paid order per cart and store
  for (const r of await sql`SELECT checkout_session_id, store_slug, count(*)::int AS n FROM orders
      WHERE checkout_session_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1`) problems.push(`two orders for session ${r.checkout_session_id} at ${r.store_slug}`);
  for (const r of await sql`SELECT cart_id, store_slug, count(*)::int AS n FROM orders
      WHERE cart_id IS NOT NULL AND paid_at IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1`) problems.push(`${r.n} paid orders for cart ${r.cart_id} at ${r.store_slug}`);

  // money: every capture is one paid order's, of its amount, refunded as much as the order says; every paid order
  // (of a non-zero total) was captured; a declined/failed/not-approved intent paid nothing
  const captures = await sql<{ intent_id: string; amount_minor: string; capture_ref: string; refunded_minor: string }[]>`
    SELECT intent_id, amount_minor, capture_ref, refunded_minor FROM sandbox_ledger_intents WHERE state = 'captured'`;
  const orders = await sql<{ id: string; checkout_session_id: string | null; intent_id: string | null; status: string; capture_ref: string | null; total: string; refunded_minor: string; paid_at: Date | null; reconciliation: string | null }[]>`
    SELECT id, checkout_session_id, intent_id, status, capture_ref, COALESCE(captured_minor, total_minor) AS total, refunded_minor, paid_at, reconciliation
      FROM orders WHERE checkout_session_id IS NOT NULL`;
  const byCapture = new Map(orders.filter((o) => o.capture_ref).map((o) => [o.capture_ref!, o]));
  let ledgerNet = 0;
  let ordersNet = 0;
  for (const c of captures) {
    const o = byCapture.get(c.capture_ref) ?? orders.find((x) => x.intent_id === c.intent_id && x.reconciliation !== null);
    // a capture waiting for the merchant's decision (orders.reconciliation set): the order pending, the money held
    if (o && o.reconciliation !== null && o.status === "pending" && !o.paid_at) continue;
    // a capture the merchant's reconcile refunded: the order canceled unpaid, all of it back with the buyer
    if (o && !o.paid_at && o.status === "canceled" && Number(c.refunded_minor) === Number(c.amount_minor)) continue;
    if (!o) {
      const pendingOrder = orders.find((x) => x.intent_id === c.intent_id && x.status === "pending");
      if (pendingOrder && pendingOrder.checkout_session_id && w.unsettledSessions.has(pendingOrder.checkout_session_id)) continue;
      problems.push(`capture ${c.capture_ref} (intent ${c.intent_id}, ${c.amount_minor}) has no order`);
      continue;
    }
    ledgerNet += Number(c.amount_minor) - Number(c.refunded_minor);
    if (!o.paid_at) problems.push(`order ${o.id} holds capture ${c.capture_ref} but was never paid (${o.status})`);
    if (Number(o.total) !== Number(c.amount_minor)) problems.push(`order ${o.id} total ${o.total} ≠ captured ${c.amount_minor}`);
    if (Number(o.refunded_minor) !== Number(c.refunded_minor)) problems.push(`order ${o.id} refunded ${o.refunded_minor} ≠ processor refunded ${c.refunded_minor}`);
  }
  const captured = new Set(captures.map((c) => c.capture_ref));
  for (const o of orders.filter((x) => x.paid_at && Number(x.total) > 0)) {
    if (!o.capture_ref || !captured.has(o.capture_ref)) {
      // MOCK is captured by the sandbox too (simulated); a paid order without its capture is money never taken
      problems.push(`paid order ${o.id} (${o.status}) has no capture in the processor's ledger`);
      continue;
    }
    ordersNet += Number(o.total) - Number(o.refunded_minor);
  }
  if (ledgerNet !== ordersNet) problems.push(`processor net ${ledgerNet} ≠ paid orders net ${ordersNet}`);

  // refunds never exceed what is refundable
  for (const r of await sql`
      SELECT o.id, COALESCE(o.captured_minor, o.total_minor) AS cap, o.refunded_minor,
             COALESCE(sum(f.amount_minor) FILTER (WHERE f.status = 'REFUNDED'), 0) AS done,
             COALESCE(sum(f.amount_minor) FILTER (WHERE f.status IN ('REFUNDED', 'APPROVED', 'PENDING_APPROVAL')), 0) AS asked
        FROM orders o LEFT JOIN order_refunds f ON f.order_id = o.id
       WHERE o.checkout_session_id IS NOT NULL GROUP BY o.id
      HAVING o.refunded_minor > COALESCE(o.captured_minor, o.total_minor)
          OR COALESCE(sum(f.amount_minor) FILTER (WHERE f.status = 'REFUNDED'), 0) <> o.refunded_minor
          OR COALESCE(sum(f.amount_minor) FILTER (WHERE f.status IN ('REFUNDED', 'APPROVED', 'PENDING_APPROVAL')), 0) > COALESCE(o.captured_minor, o.total_minor)`)
    problems.push(`order ${r.id}: captured ${r.cap}, refunded_minor ${r.refunded_minor}, REFUNDED records ${r.done}, asked ${r.asked}`);

  // stock: never negative, holds as the held reservations say, stock + sold units constant; held stock only for a
  // pending order
  for (const [id, baseline] of w.stockBaseline) {
    const f = await stockFacts(sql, id);
    if (f.stock < 0 || f.reserved < 0 || f.reserved > f.stock) problems.push(`product ${id}: stock ${f.stock}, reserved ${f.reserved}`);
    if (f.reserved !== f.held) problems.push(`product ${id}: reserved ${f.reserved} ≠ held reservations ${f.held}`);
    if (f.stock + f.committed !== baseline) problems.push(`product ${id}: stock ${f.stock} + sold ${f.committed} ≠ ${baseline}`);
  }
  // a product with variants holds their roll-up: its stock is the sum of its tracked variants'
  for (const r of await sql`SELECT id, stock_quantity, (SELECT sum((v->>'stockQuantity')::int) FROM jsonb_array_elements(variants) v) AS roll
      FROM products WHERE id = ANY(${[...new Set(w.products.filter((p) => p.variantId).map((p) => p.id))]}::uuid[])`)
    if (Number(r.stock_quantity) !== Number(r.roll)) problems.push(`product ${r.id}: stock ${r.stock_quantity} ≠ its variants' ${r.roll}`);

  // an order's money adds up: its lines make its subtotal, subtotal − discount + shipping + tax its total; a line of a
  // product with variants names one, and no line is priced above its list price (the variant's own price where it has one)
  for (const r of await sql`
      SELECT o.id, o.subtotal_minor, o.discount_minor, o.shipping_minor, o.tax_minor, o.total_minor,
             (SELECT sum(i.quantity * i.unit_price_minor) FROM order_items i WHERE i.order_id = o.id) AS lines
        FROM orders o WHERE o.checkout_session_id IS NOT NULL
         AND (o.subtotal_minor IS DISTINCT FROM (SELECT sum(i.quantity * i.unit_price_minor) FROM order_items i WHERE i.order_id = o.id)
          OR o.total_minor <> o.subtotal_minor - o.discount_minor + o.shipping_minor + o.tax_minor
          OR o.discount_minor < 0 OR o.discount_minor > o.subtotal_minor OR o.shipping_minor < 0)`)
    problems.push(`order ${r.id}: lines ${r.lines}, subtotal ${r.subtotal_minor} − discount ${r.discount_minor} + shipping ${r.shipping_minor} + tax ${r.tax_minor} vs total ${r.total_minor}`);
  for (const r of await sql`
      SELECT o.id, i.product_id, i.variant_id, i.unit_price_minor, p.price_minor,
             (SELECT (v->>'priceMinor')::bigint FROM jsonb_array_elements(p.variants) v WHERE v->>'id' = i.variant_id::text) AS vprice,
             jsonb_array_length(COALESCE(p.variants, '[]'::jsonb)) AS nv
        FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p ON p.id = i.product_id
       WHERE o.checkout_session_id IS NOT NULL AND i.product_id = ANY(${w.products.map((p) => p.id)}::uuid[])`) {
    if (Number(r.nv) > 0 && !r.variant_id) problems.push(`order ${r.id}: a line of ${r.product_id} names no variant`);
    const list = r.vprice !== null ? Number(r.vprice) : Number(r.price_minor);
    if (Number(r.unit_price_minor) > list) problems.push(`order ${r.id}: ${r.product_id}/${r.variant_id} priced ${r.unit_price_minor} above its list price ${list}`);
  }

  for (const r of await sql`SELECT r.id, o.id AS order_id, o.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id
      WHERE r.status = 'held' AND o.status <> 'pending'`) problems.push(`reservation ${r.id} still holds stock for ${r.status} order ${r.order_id}`);

  // a negotiated price pays for one order (docs/catalog.md "negotiate"): an offer is marked used only with its order's
  // capture; a paid order's claimed offer is used; an unpaid canceled order holds no claim; a line priced below its
  // list price is priced by an offer its order claimed, at that offer's price; a claim is held only by an order that
  // prices a line with it
  for (const r of await sql`SELECT n.id, n.order_id, o.status, o.paid_at FROM negotiation_offers n LEFT JOIN orders o ON o.id = n.order_id
      WHERE n.status = 'accepted' AND ((n.used_at IS NOT NULL AND (o.id IS NULL OR o.paid_at IS NULL))
         OR (n.used_at IS NULL AND o.paid_at IS NOT NULL) OR (n.used_at IS NULL AND o.status = 'canceled'))`)
    problems.push(`offer ${r.id}: claimed by order ${r.order_id} (${r.status}, ${r.paid_at ? "paid" : "unpaid"}) — used and claim disagree`);
  for (const r of await sql`
      SELECT o.id, i.product_id, i.unit_price_minor, p.price_minor,
             (SELECT (v->>'priceMinor')::bigint FROM jsonb_array_elements(p.variants) v WHERE v->>'id' = i.variant_id::text) AS vprice,
             (SELECT array_agg(n.negotiated_price_minor) FROM negotiation_offers n WHERE n.order_id = o.id AND n.product_id = i.product_id) AS claimed
        FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p ON p.id = i.product_id
       WHERE o.checkout_session_id IS NOT NULL AND o.status <> 'canceled' AND o.paid_at IS NOT NULL`) {
    const list = r.vprice !== null ? Number(r.vprice) : Number(r.price_minor);
    const claimed = ((r.claimed as string[] | null) ?? []).map(Number);
    if (Number(r.unit_price_minor) < list && !claimed.includes(Number(r.unit_price_minor)))
      problems.push(`order ${r.id}: ${r.product_id} sold at ${r.unit_price_minor} < list ${list} with no offer of that price claimed (${claimed.join(",") || "none"})`);
    // a variant with its own price pays it beside the product's negotiated lines (the claim is the product's)
    const ownPrice = r.vprice !== null && Number(r.vprice) !== Number(r.price_minor);
    if (claimed.length > 0 && !ownPrice && !claimed.includes(Number(r.unit_price_minor))) problems.push(`order ${r.id}: claims offers at ${claimed.join(",")} but sells ${r.product_id} at ${r.unit_price_minor}`);
  }
  for (const r of await sql`SELECT order_id, product_id, count(*)::int AS n FROM negotiation_offers WHERE order_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1`)
    problems.push(`order ${r.order_id} holds ${r.n} offers of ${r.product_id}`);

  // a coupon's use count is its claims
  for (const r of await sql`SELECT c.code, c.used_count, (SELECT count(*)::int FROM coupon_claims k WHERE k.store_slug = c.store_slug AND k.code = c.code) AS claims
      FROM coupons c WHERE c.store_slug = 'demo-store' AND c.code IN ('WELCOME10', 'FIVEOFF')`)
    if (Number(r.used_count) !== Number(r.claims)) problems.push(`coupon ${r.code}: used_count ${r.used_count} ≠ claims ${r.claims}`);

  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// Predicting a completion. The cart actor serialises calls, so two identical calls at once answer as the same two
// calls one after the other: the test compares the pair of answers with the pair of predictions in either order.

interface Prediction {
  status: number;
  code: string | null;
  /** Another answer the docs allow (two refusals apply, their order is not specified), with its own effect. */
  alternative?: { status: number; code: string; apply?: (r: Answer) => void };
  /** Apply the call's effect to the model (given the real answer, for ids the model cannot know). */
  apply: (r: Answer) => void;
}

const ROLLBACK: Partial<Record<Token, { code: string; rank: number }>> = {
  tok_decline: { code: "PAYMENT_DECLINED", rank: 0 },
  tok_not_approved: { code: "PAYMENT_NOT_APPROVED", rank: 1 },
  tok_fail: { code: "PAYMENT_FAILED_ROLLED_BACK", rank: 2 },
};

/** The default method of a store with no previous attempt: MOCK where the store lists it (the demo store), else tok_approve. */
const defaultMethod = (store: string): Token => (store === "demo-store" ? "MOCK" : "tok_approve");

/**
 * Each store's method of the cart's last attempt, whatever session made it: a new session of the cart starts its legs
 * from it, so a call naming none repeats it there too (actors/cart/index.ts carriedCardMethods; session 20, helper B).
 */
const cartMethods = new WeakMap<MCart, Record<string, Token>>();
const rememberMethod = (cart: MCart, store: string, method: Token | null): void => {
  if (method === null) return;
  cartMethods.set(cart, { ...cartMethods.get(cart), [store]: method });
};
/** A new session's leg for a store of the cart: captured where the cart paid it, else unpaid with the carried method. */
const newSessionLeg = (cart: MCart, store: string): Leg => ({
  store,
  status: cart.paidStores.has(store) ? "captured" : "unpaid",
  lastMethod: cartMethods.get(cart)?.[store] ?? null,
  link: null,
  decision: null,
});

async function shortage(w: World, cart: MCart, stores: string[], afterTheCall: boolean): Promise<boolean> {
  for (const l of cart.lines) {
    const p = productOf(w, l);
    if (!stores.includes(p.store)) continue;
    if ((await available(w, l, afterTheCall ? cart.id : undefined)) < l.quantity) return true;
  }
  return false;
}

/**
 * What a complete with `methods` (per store; undefined: none named) and key choice answers on the model's session,
 * or null when the model cannot say (it then only checks the invariants). `afterTheCall`: the call already ran (the
 * second of a pair), so a hold the cart has now is its own and does not count against its stock.
 */
async function predictComplete(w: World, cart: MCart, key: string, methods: Record<string, Token> | undefined, afterTheCall = false): Promise<Prediction | null> {
  const s = cart.session;
  if (!s) return null;
  // an expired session is not found for every key (spec: "no such checkout session or expired"; helper B, B-5)
  if (s.status === "EXPIRED") return { status: 404, code: "CHECKOUT_SESSION_NOT_FOUND", apply: () => {} };
  if (s.key !== null && s.key !== key) return { status: 409, code: "IDEMPOTENCY_KEY_CONFLICT", apply: () => {} };
  if (s.status === "COMPLETED") return { status: 409, code: "CHECKOUT_ALREADY_IN_PROGRESS", apply: () => {} };
  if (s.status === "FAILED" || s.status === "CANCELED") return { status: 409, code: "SESSION_INACTIVE", apply: () => {} };
  if (s.status === "SETTLEMENT_UNKNOWN") return null; // settled by the call or the 5 s timer: checked by the invariants
  const unpaid = s.legs.filter((l) => l.status === "unpaid");
  const methodOf = (l: Leg): Token => methods?.[l.store] ?? l.lastMethod ?? defaultMethod(l.store);
  /** The resumed legs, all approved, captured: paid, their buyer link and decision spent. */
  const captureResumed = (resumed: Leg[]) => {
    for (const l of resumed) {
      l.status = "captured";
      l.link = null;
      l.decision = null;
      cart.paidStores.add(l.store);
    }
  };
  /**
   * A blocked state: the resumed legs were captured first; a session with nobody paid fails, else it waits. It binds
   * no key: the state check and the hold come before the binding, and a refused turn keeps nothing (a new session of
   * a partly paid cart answers a second key the same refusal, not IDEMPOTENCY_KEY_CONFLICT; a resume's key was bound).
   */
  const blockedState = (resumed: Leg[]) => {
    for (const l of resumed) {
      l.status = "captured";
      l.link = null;
      cart.paidStores.add(l.store);
    }
    if (cart.paidStores.size === 0) {
      s.status = "FAILED";
      cart.status = "OPEN";
      cart.session = null;
    } else s.status = "READY_FOR_PAYMENT";
  };
  // methods the processor does not know, and MOCK off the demo store, are refused before anything is held
  // (the docs do not order the two checks: when both apply, either answer is right)
  const bogus = unpaid.some((l) => methodOf(l) === "tok_bogus");
  const mockElsewhere = unpaid.some((l) => methodOf(l) === "MOCK" && l.store !== "demo-store");
  // The resume checks only that a named token exists before it asks the rail about the buyer's decision; a store that
  // does not take the method refuses the new attempt for its rolled-back leg, which starts only once every resumed
  // leg is captured (docs/checkout.md "The resume"): until then the 202 or the buyer's refusal is the answer.
  const waiting = s.status === "PENDING_EXTERNAL_CONFIRMATION";
  if (bogus || (mockElsewhere && !waiting)) {
    const refusal: Prediction = { status: 400, code: bogus ? "INVALID_ARGUMENT" : "PAYMENT_METHOD_NOT_CONFIGURED", apply: () => {} };
    if (bogus && mockElsewhere && !waiting) refusal.alternative = { status: 400, code: "PAYMENT_METHOD_NOT_CONFIGURED" };
    // A previewed session's state check (a shortage since the preview) runs before the methods are checked; the
    // one-call (no session named: `s.id` is empty until it answers) checks them before its own preview, and a resume
    // checks a named token's existence first. The docs order neither, so on a previewed session either refusal is right.
    else if (s.id !== "" && !waiting && (await shortage(w, cart, unpaid.map((l) => l.store), afterTheCall)))
      refusal.alternative = { status: 409, code: "STATE_EXECUTION_BLOCKED", apply: () => blockedState([]) };
    return refusal;
  }

  let resumed: Leg[] = [];
  if (s.status === "PENDING_EXTERNAL_CONFIRMATION") {
    resumed = s.legs.filter((l) => l.status === "awaiting");
    if (resumed.some((l) => l.decision === null)) {
      // each leg is resumed on its own: an approved one is captured, a refused one rolls back (its new attempt comes
      // with the resume after the last decision), and the session waits for the undecided ones (docs/checkout.md
      // "Multi-store carts": any awaiting the buyer → PENDING_EXTERNAL_CONFIRMATION)
      return {
        status: 202,
        code: "user_action_required",
        apply: () => {
          s.key = key;
          for (const l of resumed) {
            if (l.decision === null) continue;
            if (l.decision === "approve") {
              l.status = "captured";
              cart.paidStores.add(l.store);
            } else l.status = "unpaid";
            l.link = null;
            l.decision = null;
          }
        },
      };
    }
    // An unpaid leg's order canceled: its merchant refunded that leg's escalated capture while this leg kept the
    // session waiting (docs/checkout.md "{action: refund}", review V2-2). The session never goes back to
    // READY_FOR_PAYMENT with it: the resume captures the approved legs (paid, they stay paid) and ends the session
    // FAILED, the call answering 409 SESSION_INACTIVE (`checkout_failed_merchant_refunded`, with who was paid). What a
    // refused leg beside it answers the docs do not say: the model follows the service then.
    if (await unpaidOrderCanceled(w, s.id, unpaid.map((l) => l.store))) {
      if (resumed.some((l) => l.decision === "reject")) return null;
      return {
        status: 409,
        code: "SESSION_INACTIVE",
        apply: () => {
          s.key = key;
          captureResumed(resumed);
          s.status = "FAILED";
          if (cart.paidStores.size === 0) {
            cart.status = "OPEN";
            cart.session = null;
          }
        },
      };
    }
    if (resumed.some((l) => l.decision === "reject")) {
      // legs disagreeing report the most actionable first: a leg still declined from its last attempt beside the refusal
      const ranks = [ROLLBACK.tok_not_approved!.rank, ...unpaid.map((l) => (l.lastMethod && ROLLBACK[l.lastMethod] ? ROLLBACK[l.lastMethod]!.rank : 99))];
      const code = Object.values(ROLLBACK).find((r) => r!.rank === Math.min(...ranks))!.code;
      return {
        status: 402,
        code,
        apply: () => {
          s.key = key;
          for (const l of resumed) {
            if (l.decision === "approve") {
              l.status = "captured";
              cart.paidStores.add(l.store);
            } else l.status = "unpaid";
            l.link = null;
            l.decision = null;
          }
          s.status = "READY_FOR_PAYMENT";
        },
      };
    }
  }
  // a new attempt for the unpaid legs: stock first (a shortage refuses the whole attempt before anything is charged)
  const attempt = unpaid.map((l) => ({ leg: l, method: methodOf(l) }));
  if (attempt.length > 0 && (await shortage(w, cart, attempt.map((a) => a.leg.store), afterTheCall))) {
    return { status: 409, code: "STATE_EXECUTION_BLOCKED", apply: () => blockedState(resumed) };
  }
  if (mockElsewhere) {
    // only after a resume (above): the approved legs are captured, the new attempt refused before anything is held
    return {
      status: 400,
      code: "PAYMENT_METHOD_NOT_CONFIGURED",
      apply: () => {
        s.key = key;
        captureResumed(resumed);
        s.status = "READY_FOR_PAYMENT";
      },
    };
  }
  const outcomes = attempt.map((a) => ({ ...a, out: a.method }));
  // a lost answer, or a capture escalated to the merchant (amount mismatch, finalization failed): the model follows the
  // service (the invariants check the money; MerchantReconcile decides the escalation)
  if (outcomes.some((o) => o.out === "tok_lost_response" || o.out === "tok_amount_mismatch" || o.out === "tok_finalization_fails")) return null;
  const needs = outcomes.filter((o) => o.out === "tok_needs_approval");
  const failed = outcomes.filter((o) => ROLLBACK[o.out] !== undefined).sort((a, b) => ROLLBACK[a.out]!.rank - ROLLBACK[b.out]!.rank);
  const applyAttempt = (r: Answer) => {
    s.key = key;
    captureResumed(resumed);
    for (const o of outcomes) {
      o.leg.lastMethod = o.method;
      rememberMethod(cart, o.leg.store, o.method);
      if (o.out === "tok_needs_approval") {
        o.leg.status = "awaiting";
        o.leg.decision = null;
        const urls: { merchant_slug: string; url: string }[] = r.body.details?.approval_urls ?? [];
        o.leg.link = urls.find((u) => u.merchant_slug === o.leg.store)?.url ?? null;
      } else if (ROLLBACK[o.out]) o.leg.status = "unpaid";
      else {
        o.leg.status = "captured";
        cart.paidStores.add(o.leg.store);
      }
    }
  };
  if (needs.length > 0) {
    return {
      status: 202,
      code: "user_action_required",
      apply: (r) => {
        applyAttempt(r);
        s.status = "PENDING_EXTERNAL_CONFIRMATION";
      },
    };
  }
  if (failed.length > 0) {
    return {
      status: 402,
      code: ROLLBACK[failed[0]!.out]!.code,
      apply: (r) => {
        applyAttempt(r);
        s.status = "READY_FOR_PAYMENT";
      },
    };
  }
  return {
    status: 200,
    code: null,
    apply: (r) => {
      applyAttempt(r);
      s.status = "COMPLETED";
      cart.status = "COMPLETED";
    },
  };
}

/** Whether a session's order at one of `stores` is canceled (read-only): a merchant refunded its escalated capture. */
async function unpaidOrderCanceled(w: World, sessionId: string, stores: string[]): Promise<boolean> {
  if (stores.length === 0) return false;
  const [r] = await w.srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM orders WHERE checkout_session_id = ${sessionId} AND store_slug = ANY(${stores}::text[]) AND status = 'canceled'`;
  return r!.n > 0;
}

/** The cart's orders as the database holds them, checked against the model: each paid store paid once. */
async function syncOrders(w: World, m: Model, cart: MCart): Promise<void> {
  const rows = await w.srv.db.sql<{ id: string; store_slug: string; status: string; total: string; priced: string; refunded_minor: string }[]>`
    SELECT id, store_slug, status, COALESCE(captured_minor, total_minor) AS total, total_minor AS priced, refunded_minor FROM orders WHERE cart_id = ${cart.id} AND paid_at IS NOT NULL`;
  expect({ cart: cart.id, paid: rows.map((r) => r.store_slug).sort() }).toEqual({ cart: cart.id, paid: [...cart.paidStores].sort() });
  for (const r of rows) {
    if (m.orders.some((o) => o.id === r.id)) continue;
    // a leg paid on a previewed session is priced at exactly the store's previewed total unless a price moved since
    // (then never above it); the capture is that total (the invariants), or, for a capture that differed (the
    // sandbox's tok_amount_mismatch) and the merchant accepted, what was captured
    const previewed = cart.session?.previewed?.[r.store_slug];
    if (previewed !== undefined && !cart.session?.moved) expect({ order: r.id, store: r.store_slug, priced: Number(r.priced) }).toEqual({ order: r.id, store: r.store_slug, priced: previewed });
    else if (previewed !== undefined) expect({ order: r.id, store: r.store_slug, above: Number(r.priced) > previewed }).toEqual({ order: r.id, store: r.store_slug, above: false });
    // the order records how it ships, as approved: the cart's destination (none: the domestic quote), its latest
    // attempt's record standing (docs/checkout.md "The order records how it ships")
    const [ev] = await w.srv.db.sql<{ country: string | null; postal: string | null }[]>`
      SELECT data->'shipping'->>'countryCode' AS country, data->'shipping'->>'postalCode' AS postal FROM order_events
       WHERE order_id = ${r.id} AND type IN ('created', 'payment_attempt') AND data ? 'shipping' ORDER BY id DESC LIMIT 1`;
    expect({ order: r.id, ships: ev ? { country: ev.country, postal: ev.postal } : null }).toEqual({
      order: r.id,
      ships: { country: cart.dest?.country_code ?? null, postal: cart.dest?.postal_code ?? null },
    });
    m.orders.push({
      id: r.id,
      cartId: cart.id,
      store: r.store_slug,
      status: "paid",
      capturedMinor: Number(r.total),
      refundedMinor: Number(r.refunded_minor),
      items: cart.lines.filter((l) => productOf(w, l).store === r.store_slug),
      byMerchant: false,
    });
  }
}

async function expectCartStatus(w: World, cart: MCart): Promise<void> {
  const r = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
  expect(r.status).toBe(200);
  // the view hides a session that ended unpaid (a partly paid cart then shows no session until its next preview)
  const shown = cart.session && cart.session.status !== "CANCELED" && cart.session.status !== "FAILED" && cart.session.status !== "EXPIRED" ? cart.session.status : null;
  const want = { cart: cart.id, status: cart.status, checkout_status: shown };
  const got = { cart: cart.id, status: r.body.data?.status, checkout_status: r.body.data?.checkout_status ?? null };
  expect(got).toEqual(want);
}

// ---------------------------------------------------------------------------------------------------------------
// Known findings: answers the model knows to be wrong (reported, with a patch in /tmp/notes), accepted so the test
// stays green until the fix lands; each is counted in `World.known` so a run says how often it was seen. Once a
// finding's patch is applied the predicate never matches and the model's own prediction is checked again.

export const KNOWN_FINDINGS: Record<string, (cart: MCart, a: Answer) => boolean> = {
  // none open: P-1 and P-2 are fixed (test/http/model-findings.test.ts keeps their regressions)
};

function knownFinding(w: World, cart: MCart, a: Answer): boolean {
  for (const [name, matches] of Object.entries(KNOWN_FINDINGS)) {
    if (matches(cart, a)) {
      w.known.set(name, (w.known.get(name) ?? 0) + 1);
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------------
// Commands.

class CreateCart implements Cmd {
  constructor(readonly lines: { product: number; quantity: number }[]) {}
  check = () => true;
  async run(m: Model, w: World): Promise<void> {
    // repeated items of one product and variant merge into one line, in the order of their first item
    const merged = new Map<string, { p: Product; quantity: number }>();
    for (const l of this.lines) {
      const p = pick(w.products, l.product);
      const k = stockKey(p.id, p.variantId);
      merged.set(k, { p, quantity: (merged.get(k)?.quantity ?? 0) + l.quantity });
    }
    const items = [...merged.values()].map(({ p, quantity }) => ({ product_id: p.id, ...(p.variantId ? { variant_id: p.variantId } : {}), quantity }));
    // the lines are checked in order: the first line that names no variant of a product with variants, or that wants
    // more than the stock not held (at the product's or the variant's level), refuses the cart
    let refusal: { status: number; code: string } | null = null;
    for (const { p, quantity } of merged.values()) {
      if (p.needsVariant) refusal = { status: 400, code: "MISSING_REQUIRED_ARGUMENT" };
      else if ((await available(w, { productId: p.id, variantId: p.variantId })) < quantity) refusal = { status: 400, code: "INVALID_ARGUMENT" };
      if (refusal) break;
    }
    const r = await call(w, "POST", "/api/v1/agent/cart", w.key.headers, { items });
    // a cart never takes more than the stock not held (the hold re-checks at payment)
    expect(outcome(r)).toEqual(refusal ?? { status: 201, code: null });
    if (refusal) return;
    const stores = [...new Set([...merged.values()].map(({ p }) => p.store))].sort();
    m.carts.push({
      id: String(r.body.data!.id),
      lines: [...merged.values()].map(({ p, quantity }) => ({ productId: p.id, variantId: p.variantId, quantity })),
      stores,
      status: "OPEN",
      session: null,
      paidStores: new Set(),
      coupon: null,
      dest: null,
    });
  }
  toString = () => `CreateCart(${JSON.stringify(this.lines)})`;
}

class ApplyCoupon implements Cmd {
  constructor(readonly cart: number, readonly code: "WELCOME10" | "FIVEOFF" | "EXPIRED15" | "LIMITED50") {}
  check = (m: Readonly<Model>) => m.carts.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts, this.cart);
    const r = await call(w, "POST", "/api/v1/agent/cart/apply-coupon", w.key.headers, { cartId: cart.id, code: this.code });
    if (cart.status !== "OPEN") {
      expect(outcome(r)).toEqual({ status: 409, code: "CART_NOT_MUTABLE" });
      return;
    }
    let demoSubtotal = 0;
    for (const l of cart.lines.filter((x) => productOf(w, x).store === "demo-store")) demoSubtotal += l.quantity * (await unitPrice(w, l));
    const reason =
      demoSubtotal === 0 ? "invalid" : this.code === "EXPIRED15" ? "expired" : this.code === "LIMITED50" ? "exhausted" : this.code === "FIVEOFF" && demoSubtotal < 2500 ? "below_minimum" : null;
    expect({ ...outcome(r), applied: r.body.data?.applied, reason: r.body.data?.reason ?? null }).toEqual({ status: 200, code: null, applied: reason === null, reason });
    if (reason === null) cart.coupon = this.code;
  }
  toString = () => `ApplyCoupon(${this.cart}, ${this.code})`;
}

class Preview implements Cmd {
  constructor(
    readonly cart: number,
    readonly dest: keyof typeof DESTINATIONS | null = null,
    /** REST, or MCP preview_checkout on the demo store's endpoint (a cart with a demo-store line, no destination given). */
    readonly via: "rest" | "mcp" = "rest",
  ) {}
  check = (m: Readonly<Model>) => m.carts.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts, this.cart);
    const dest = this.dest ? DESTINATIONS[this.dest]! : null;
    const viaMcp = this.via === "mcp" && dest === null && cart.stores.includes("demo-store");
    const r = viaMcp
      ? await mcpCall(w, "preview_checkout", { cart_id: cart.id })
      : await call(w, "POST", "/api/v1/agent/checkout/preview", w.key.headers, dest ? { cartId: cart.id, shipping: dest } : { cartId: cart.id });
    const s = cart.session;
    if (cart.status === "COMPLETED") {
      expect(r.status).toBe(409);
      return;
    }
    if (s && (s.status === "PENDING_EXTERNAL_CONFIRMATION" || s.status === "SETTLEMENT_UNKNOWN")) {
      expect(outcome(r)).toEqual({ status: 409, code: "CHECKOUT_STATUS_INVALID" });
      return;
    }
    // a new destination once a merchant of the cart is paid: refused (the paid order ships on the approved one)
    const changes = dest !== null && (cart.dest?.country_code !== dest.country_code || cart.dest?.postal_code !== dest.postal_code);
    if (changes && cart.paidStores.size > 0) {
      expect({ ...outcome(r), reason: r.body.details?.reason }).toEqual({ status: 409, code: "CHECKOUT_STATUS_INVALID", reason: "merchant_already_paid" });
      return;
    }
    const to = dest ?? cart.dest;
    const quotes = new Map<string, Zone | "unserved" | null>();
    for (const store of cart.stores) quotes.set(store, await quoteZone(w, store, to));
    const unserved = cart.stores.filter((st) => quotes.get(st) === "unserved");
    if (unserved.length > 0) {
      expect({ ...outcome(r), reason: r.body.details?.reason, slugs: [...((r.body.details?.merchant_slugs as string[] | undefined) ?? [])].sort() }).toEqual({ status: 403, code: "NOT_ELIGIBLE", reason: "destination_not_served", slugs: unserved });
      // whether the refused preview kept the destination the docs do not say: the cart's view does
      const c = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
      const shown = c.body.data?.shipping as Destination | null;
      cart.dest = shown ? { country_code: shown.country_code, postal_code: shown.postal_code } : null;
      return;
    }
    expect(outcome(r)).toEqual({ status: 200, code: null });
    if (dest) cart.dest = dest;
    const id = String(r.body.data!.checkout_session_id);
    if (!s || s.id !== id || s.status !== "READY_FOR_PAYMENT") {
      // a new session: the paid legs carry over, the others start unpaid with no previous method
      cart.session = {
        id,
        status: "READY_FOR_PAYMENT",
        key: s && s.id === id ? s.key : null,
        legs: cart.stores.map((store) => newSessionLeg(cart, store)),
      };
    }
    cart.status = "CHECKOUT";
    expect(r.body.data!.status).toBe("READY_FOR_PAYMENT");
    // each merchant's totals: its lines at their prices, the zone's shipping for the destination (free at or above the
    // zone's threshold after discount), and a total that adds up; the capture of its leg must be this total
    const merchants: { merchant_slug: string; subtotal_minor: number; discount_minor: number; shipping_minor: number; tax_minor: number; total_minor: number; shipping_option: { option_id: string } | null }[] = r.body.data!.merchants ?? [];
    const previewed: Record<string, number> = {};
    for (const store of cart.stores) {
      const got = merchants.find((x) => x.merchant_slug === store);
      const lines = cart.lines.filter((l) => productOf(w, l).store === store);
      let subtotal = 0;
      for (const l of lines) subtotal += l.quantity * (await unitPrice(w, l));
      const units = lines.reduce((t, l) => t + l.quantity, 0);
      const zone = quotes.get(store) as Zone | null;
      const discount = got?.discount_minor ?? 0;
      const shipping = zone === null || (zone.freeOver !== null && subtotal - discount >= zone.freeOver) ? 0 : zone.base + zone.perItem * units;
      const want = { store, subtotal, shipping, option: to && zone ? zone.id : null, total: subtotal - discount + shipping + (got?.tax_minor ?? 0) };
      expect({ store, subtotal: got?.subtotal_minor, shipping: got?.shipping_minor, option: got?.shipping_option?.option_id ?? null, total: got?.total_minor }).toEqual(want);
      previewed[store] = want.total;
    }
    cart.session!.previewed = previewed;
    const units: Record<string, number> = {};
    for (const l of cart.lines) units[stockKey(l.productId, l.variantId)] = await unitPrice(w, l);
    cart.session!.previewedUnits = units;
    cart.session!.moved = false;
    await expectCartStatus(w, cart);
  }
  toString = () => `Preview(${this.cart}${this.dest ? `, ${this.dest}` : ""}${this.via === "mcp" ? ", mcp" : ""})`;
}

/** The run's MCP session on the demo store's endpoint, as the run's key (connected on first use). */
async function mcpOf(w: World): Promise<Connected> {
  if (w.mcp && w.mcp.keyId === w.key.id) return w.mcp.conn;
  await w.mcp?.conn.close().catch(() => {});
  const conn = await connect(w.srv, { headers: w.key.headers, elicit: accept });
  w.mcp = { keyId: w.key.id, conn };
  return conn;
}

/**
 * complete_checkout over MCP, answered as REST would answer it: an error result is its code's status with the same
 * envelope fields, a payment waiting for the buyer 202 user_action_required, a completed one 200.
 */
async function mcpComplete(w: World, args: { checkout_session_id: string; idempotency_key: string; payment_method: string }): Promise<Answer> {
  return mcpCall(w, "complete_checkout", args);
}

/** A checkout tool over MCP, answered as REST would answer it (see mcpComplete). */
async function mcpCall(w: World, tool: string, args: Record<string, unknown>): Promise<Answer> {
  const res = await (await mcpOf(w)).call(tool, args);
  const sc = (res.structuredContent ?? {}) as Record<string, any>;
  let answer: Answer;
  if (res.isError) {
    const e = (sc.error ?? {}) as { code?: string; message?: string; details?: Record<string, any> };
    const code = e.code ?? "";
    answer = { status: isErrorCode(code) ? ERROR_TABLE[code].http : 500, body: { success: false, error: e.message, code, details: e.details ?? {} } };
  } else if (sc.status === "PENDING_EXTERNAL_CONFIRMATION") answer = { status: 202, body: { success: false, error: "waiting for the buyer", code: "user_action_required", details: sc } };
  else answer = { status: 200, body: { success: true, data: sc } };
  w.trace.push(`MCP ${tool} ${JSON.stringify(args)} -> ${answer.status} ${typeof answer.body.code === "string" ? answer.body.code : ""}`);
  if (answer.body.success === false) w.trace.push(`  ! ${JSON.stringify({ error: answer.body.error, details: answer.body.details }).slice(0, 700)}`);
  assertEnvelope(`MCP ${tool}`, answer);
  return answer;
}

/** The approval links of the session's legs waiting for the buyer, as the processor holds them (an MCP answer names one). */
async function learnLinks(w: World, cart: MCart): Promise<void> {
  const s = cart.session;
  if (!s) return;
  for (const leg of s.legs.filter((l) => l.status === "awaiting" && !l.link)) {
    const [o] = await w.srv.db.sql<{ intent_id: string | null }[]>`SELECT intent_id FROM orders WHERE checkout_session_id = ${s.id} AND store_slug = ${leg.store}`;
    if (!o?.intent_id) continue;
    const [i] = await w.srv.db.sql<{ approval_token: string | null }[]>`SELECT approval_token FROM sandbox_ledger_intents WHERE intent_id = ${o.intent_id}`;
    leg.link = i?.approval_token ? `${w.srv.url}/api/v1/sandbox/payments/${o.intent_id}/${i.approval_token}` : null;
  }
}

class Complete implements Cmd {
  constructor(
    readonly cart: number,
    readonly methods: (Token | null)[] | null,
    readonly keyChoice: "bound" | "fresh",
    readonly concurrent: boolean,
    /** REST, or MCP complete_checkout on the demo store's endpoint (a previewed session with a demo-store line). */
    readonly via: "rest" | "mcp" = "rest",
  ) {}
  check = (m: Readonly<Model>) => m.carts.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts, this.cart);
    if (cart.status === "COMPLETED" && !cart.session) return;
    // no session yet: the one-call checkout previews and pays in one turn, as a new session would be paid
    const oneCall = cart.session === null;
    // MCP pays a previewed session with one payment_method for every store, the human asked (and approving) first
    const viaMcp = this.via === "mcp" && !oneCall && !this.concurrent && cart.stores.includes("demo-store");
    if (oneCall) {
      cart.session = { id: "", status: "READY_FOR_PAYMENT", key: null, legs: cart.stores.map((store) => newSessionLeg(cart, store)) };
      cart.status = "CHECKOUT";
    }
    const s = cart.session!;
    const key = this.keyChoice === "bound" && s.key ? s.key : this.keyChoice === "bound" ? crypto.randomUUID() : crypto.randomUUID();
    let methods: Record<string, Token> | undefined;
    if (viaMcp) {
      const t = this.methods?.find((x) => x !== null) ?? "MOCK";
      methods = Object.fromEntries(cart.stores.map((store) => [store, t]));
    } else if (this.methods) {
      methods = {};
      cart.stores.forEach((store, i) => {
        const t = this.methods![i % this.methods!.length];
        if (t) methods![store] = t;
      });
      if (Object.keys(methods).length === 0) methods = undefined;
    }
    const body: Record<string, unknown> = oneCall ? { cartId: cart.id, idempotency_key: key } : { cartId: cart.id, checkout_session_id: s.id, idempotency_key: key };
    if (methods) {
      const distinct = new Set(Object.values(methods));
      if (distinct.size === 1 && Object.keys(methods).length === cart.stores.length) body.payment_method = [...distinct][0];
      else body.payment_methods = methods;
    }
    // a price that moved since the preview (an offer used, expired or newly negotiated) or an offer another order holds:
    // the model follows the service (reconfirmation and negotiated_price_used are not predicted), the invariants decide
    const moved = await pricesMoved(w, cart);
    s.moved = moved;
    // the one-call previews as it pays: the session it opens is priced at the prices of now
    const unitsNow: Record<string, number> = {};
    if (oneCall) for (const l of cart.lines) unitsNow[stockKey(l.productId, l.variantId)] = await unitPrice(w, l);
    const first = moved ? null : await predictComplete(w, cart, key, methods);
    const answers = viaMcp
      ? [await mcpComplete(w, { checkout_session_id: s.id, idempotency_key: key, payment_method: Object.values(methods!)[0]! })]
      : this.concurrent
      ? await Promise.all([call(w, "POST", "/api/v1/agent/checkout", w.key.headers, body), call(w, "POST", "/api/v1/agent/checkout", w.key.headers, body)])
      : [await call(w, "POST", "/api/v1/agent/checkout", w.key.headers, body)];
    if (oneCall) {
      const id = answers.map((a) => a.body.data?.checkout_session_id ?? a.body.details?.checkout_session_id).find((x) => typeof x === "string");
      s.id = typeof id === "string" ? id : "";
      s.previewedUnits = unitsNow;
      if (!s.id) {
        // a refusal that does not name the session (a bad method, after the one-call preview made it): the cart says
        const c = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
        s.id = typeof c.body.data?.checkout_session_id === "string" ? c.body.data.checkout_session_id : "";
        if (!s.id) {
          cart.session = null;
          cart.status = "OPEN";
        }
      }
    }
    if (answers.some((a) => a.status === 503)) {
      for (const a of answers) if (a.status === 503) expect({ code: a.body.code, status: a.body.details?.status }).toEqual({ code: "UPSTREAM_UNAVAILABLE", status: "SETTLEMENT_UNKNOWN" });
    }
    if (first === null) {
      if (!this.concurrent && answers[0]!.body.code === "STATE_RECONFIRMATION_REQUIRED") await this.reconfirm(w, cart, answers[0]!, viaMcp ? { checkout_session_id: s.id, idempotency_key: key, payment_method: Object.values(methods!)[0]! } : body, viaMcp);
      // the model cannot say (a lost answer, a settling session): learn the session's state from the cart
      await this.learn(m, w, cart, key, answers);
      return;
    }
    if (answers.some((a) => knownFinding(w, cart, a))) {
      // a known finding's answer (KNOWN_FINDINGS): recorded, and the model follows the service from here
      await this.learn(m, w, cart, key, answers);
      return;
    }
    // the other allowed answer, when the service gave it (for a pair: the first of the two in time)
    const alt = first.alternative;
    if (alt && answers.some((a) => a.status === alt.status && a.body.code === alt.code)) {
      first.status = alt.status;
      first.code = alt.code;
      if (alt.apply) first.apply = alt.apply;
    }
    if (!this.concurrent) {
      expect(outcome(answers[0]!)).toEqual({ status: first.status, code: first.code });
      first.apply(answers[0]!);
    } else {
      // serialised by the cart: one answer is the first call's, the other the same call's after it
      const a = answers.find((x) => x.status === first.status && (typeof x.body.code === "string" ? x.body.code : null) === first.code);
      expect({ pair: answers.map(outcome), first: { status: first.status, code: first.code } }).toEqual({
        pair: answers.map(outcome),
        first: a ? { status: first.status, code: first.code } : { status: -1, code: "none of the pair" },
      });
      first.apply(a!);
      const second = await predictComplete(w, cart, key, methods, true);
      const b = answers[answers.indexOf(a!) === 0 ? 1 : 0]!;
      if (second) {
        // a second attempt holds stock the first left only after the first released it, so shortage predictions
        // read now are exact for a rollback (released) and for a capture (sold), once the units the second call held
        // or sold itself (a new link, or a capture, after a refusal at the old link) are not counted against it
        expect(outcome(b)).toEqual({ status: second.status, code: second.code });
        second.apply(b);
      } else {
        // the second call's outcome is one the model cannot say (a lost answer): follow the service
        await this.learn(m, w, cart, key, answers);
        return;
      }
    }
    if (answers.some((x) => x.status === 200)) {
      const a = answers.find((x) => x.status === 200)!;
      const orders: { total_minor: number }[] = a.body.data?.orders ?? [];
      expect(orders.reduce((t, o) => t + o.total_minor, 0)).toBe(a.body.data?.total_minor);
    }
    if (answers.some((x) => x.body.code === "CHECKOUT_ALREADY_IN_PROGRESS" && x.body.details?.order_ids)) {
      // the receipt names every paid order of the cart: a paid leg carried over from an ended session keeps its order
      const rows = await w.srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cart.id} AND paid_at IS NOT NULL ORDER BY id`;
      for (const x of answers.filter((y) => y.body.code === "CHECKOUT_ALREADY_IN_PROGRESS" && y.body.details?.order_ids))
        expect([...(x.body.details!.order_ids as string[])].sort()).toEqual(rows.map((r) => r.id).sort());
    }
    if (viaMcp) await learnLinks(w, cart);
    await syncOrders(w, m, cart);
    await expectCartStatus(w, cart);
  }

  /**
   * The buyer confirms the moved state: the same call again with `reconfirmed_state_hash` (docs/checkout.md "State
   * hash"). Paid, the merchants it paid are priced at exactly the total the refusal named (`current_total_minor`),
   * which from then on stands for the session's preview.
   */
  private async reconfirm(w: World, cart: MCart, refusal: Answer, body: Record<string, unknown>, viaMcp: boolean): Promise<void> {
    const hash = refusal.body.details?.reconfirm_state_hash;
    const reasons: { code?: string; current_total_minor?: number }[] = refusal.body.details?.reasons ?? [];
    const current = reasons.find((r) => typeof r.current_total_minor === "number")?.current_total_minor;
    if (typeof hash !== "string") return;
    const paidBefore = new Set((await w.srv.db.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE cart_id = ${cart.id} AND paid_at IS NOT NULL`).map((r) => r.store_slug));
    const again = viaMcp
      ? await mcpCall(w, "complete_checkout", { ...body, reconfirmed_state_hash: hash })
      : await call(w, "POST", "/api/v1/agent/checkout", w.key.headers, { ...body, reconfirmed_state_hash: hash });
    if (cart.session) cart.session.previewed = undefined; // the reconfirmed state replaces the preview's
    if (again.status !== 200 || current === undefined) return;
    const rows = await w.srv.db.sql<{ store_slug: string; total_minor: string }[]>`SELECT store_slug, total_minor FROM orders WHERE cart_id = ${cart.id} AND paid_at IS NOT NULL`;
    const newly = rows.filter((r) => !paidBefore.has(r.store_slug)).reduce((t, r) => t + Number(r.total_minor), 0);
    expect({ cart: cart.id, reconfirmed: current, paid: newly }).toEqual({ cart: cart.id, reconfirmed: current, paid: current });
  }

  /**
   * After a lost answer: the cart says where the session is; the model follows it (captured legs from the orders).
   * The call's key is bound only when an answer reached it (`reachedKey`): a refusal that comes first (an unknown
   * card token, an ended session) keeps nothing, so the session's next complete may still bring any key.
   */
  private async learn(m: Model, w: World, cart: MCart, key: string, answers: Answer[]): Promise<void> {
    const before = cart.session;
    await resyncCart(w, m, cart);
    if (cart.session && before && cart.session.id === before.id) cart.session.key = before.key ?? (answers.some(reachedKey) ? key : null);
  }
  toString = () => `Complete(${this.cart}, ${JSON.stringify(this.methods)}, ${this.keyChoice}${this.concurrent ? ", concurrent" : ""}${this.via === "mcp" ? ", mcp" : ""})`;
}

class Decide implements Cmd {
  constructor(readonly cart: number, readonly decisions: ("approve" | "reject")[]) {}
  check = (m: Readonly<Model>) => m.carts.some((c) => c.session?.legs.some((l) => l.status === "awaiting" && l.decision === null && l.link));
  async run(m: Model, w: World): Promise<void> {
    const waiting = m.carts.filter((c) => c.session?.legs.some((l) => l.status === "awaiting" && l.decision === null && l.link));
    const cart = pick(waiting, this.cart);
    const legs = cart.session!.legs.filter((l) => l.status === "awaiting" && l.decision === null && l.link);
    // a session that ended unpaid withdrew its waiting legs at the rail: their links refuse (helper B, B-4)
    const ended = ["CANCELED", "EXPIRED", "FAILED"].includes(cart.session!.status);
    for (const [i, leg] of legs.entries()) {
      const decision = pick(this.decisions, i);
      const r = await call(w, "POST", `${new URL(leg.link!).pathname}/${decision}`, {}, {});
      if (ended) {
        expect({ ...outcome(r), reason: r.body.details?.reason }).toEqual({ status: 409, code: "conflict", reason: "checkout_ended" });
        leg.link = null;
        continue;
      }
      expect({ ...outcome(r), status_after: r.body.data?.status }).toEqual({ status: 200, code: null, status_after: decision === "approve" ? "approved" : "not_approved" });
      leg.decision = decision;
    }
  }
  toString = () => `Decide(${this.cart}, ${JSON.stringify(this.decisions)})`;
}

class CancelSession implements Cmd {
  constructor(readonly cart: number) {}
  check = (m: Readonly<Model>) => m.carts.some((c) => c.session !== null);
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts.filter((c) => c.session !== null), this.cart);
    if (cart.session!.status === "SETTLEMENT_UNKNOWN") {
      // a lost answer settles on its own (the session's timer): where it stands now is read back first
      await resyncCart(w, m, cart);
      if (!cart.session) return;
    }
    const s = cart.session!;
    // another key cannot tell the session exists
    const foreign = await call(w, "POST", `/api/v1/agent/checkout/${s.id}/cancel`, w.other.headers);
    expect(outcome(foreign)).toEqual({ status: 404, code: "CHECKOUT_SESSION_NOT_FOUND" });
    const r = await call(w, "POST", `/api/v1/agent/checkout/${s.id}/cancel`, w.key.headers);
    if (s.status === "SETTLEMENT_UNKNOWN") {
      expect(r.status).toBe(409);
      return;
    }
    if (s.status === "COMPLETED" || s.status === "FAILED" || s.status === "CANCELED" || s.status === "EXPIRED") {
      expect(outcome(r)).toEqual({ status: 409, code: "SESSION_INACTIVE" });
      return;
    }
    expect(outcome(r)).toEqual({ status: 200, code: null });
    s.status = "CANCELED";
    if (cart.paidStores.size === 0) {
      cart.status = "OPEN";
      cart.session = null;
    }
    // a cart partly paid stays CHECKOUT with the ended session: a new preview pays the rest
    await syncOrders(w, m, cart);
    if (cart.session) {
      const c = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
      expect({ status: c.body.data?.status }).toEqual({ status: "CHECKOUT" });
    } else await expectCartStatus(w, cart);
  }
  toString = () => `CancelSession(${this.cart})`;
}

class ReadAsOwnerAndStranger implements Cmd {
  constructor(readonly cart: number, readonly order: number) {}
  check = (m: Readonly<Model>) => m.carts.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts, this.cart);
    const mine = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
    expect(mine.status).toBe(200);
    const theirs = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.other.headers);
    expect(outcome(theirs)).toEqual({ status: 404, code: "CART_NOT_FOUND" });
    if (m.orders.length === 0) return;
    const o = pick(m.orders, this.order);
    const r = await call(w, "GET", `/api/v1/agent/orders/${o.id}`, w.key.headers);
    expect({ ...outcome(r), status_: r.body.data?.status, refunded: r.body.data?.refunded_minor, total: r.body.data?.total_minor }).toEqual({
      status: 200,
      code: null,
      status_: o.status,
      refunded: o.refundedMinor,
      total: o.capturedMinor,
    });
    const t = await call(w, "GET", `/api/v1/agent/orders/${o.id}`, w.other.headers);
    expect(outcome(t)).toEqual({ status: 404, code: "ORDER_NOT_FOUND" });
    const tr = await call(w, "POST", `/api/v1/agent/orders/${o.id}/refund`, w.other.headers, { amount: 1 });
    expect(tr.status).toBe(404);
  }
  toString = () => `Read(${this.cart}, ${this.order})`;
}

type AmountChoice = "omitted" | "zero" | "one" | "half" | "exact" | "over";

class RequestRefund implements Cmd {
  constructor(readonly order: number, readonly amount: AmountChoice) {}
  check = (m: Readonly<Model>) => m.orders.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const o = pick(m.orders, this.order);
    const refundable = refundableOf(m, o);
    const amount =
      this.amount === "omitted" ? undefined : this.amount === "zero" ? 0 : this.amount === "one" ? 1 : this.amount === "half" ? Math.max(1, Math.floor(refundable / 2)) : this.amount === "exact" ? Math.max(1, refundable) : refundable + 1;
    const r = await call(w, "POST", `/api/v1/agent/orders/${o.id}/refund`, w.key.headers, amount === undefined ? {} : { amount });
    if (amount === 0) {
      expect(outcome(r)).toEqual({ status: 400, code: "validation_error" });
      return;
    }
    const refundableStatus = ["paid", "fulfilled", "shipped", "delivered"].includes(o.status);
    const asked = amount ?? refundable;
    // every refusal that applies is an acceptable answer: the docs do not order status, nothing left, the open cap and the bound
    const refusals: { status: number; code: string }[] = [];
    if (!refundableStatus) refusals.push({ status: 409, code: "conflict" });
    if (refundable <= 0) refusals.push({ status: 409, code: "conflict" });
    if (openRefunds(m, o) >= 5) refusals.push({ status: 409, code: "conflict" });
    if (refundable > 0 && asked > refundable) refusals.push({ status: 400, code: "INVALID_ARGUMENT" });
    if (refusals.length > 0) {
      expect(refusals).toContainEqual(outcome(r) as { status: number; code: string });
      return;
    }
    expect({ ...outcome(r), amount: r.body.data?.amount_minor, st: r.body.data?.status }).toEqual({ status: 201, code: null, amount: asked, st: "PENDING_APPROVAL" });
    m.refunds.push({ id: String(r.body.data!.refund_id), orderId: o.id, amountMinor: asked, status: "PENDING_APPROVAL" });
  }
  toString = () => `RequestRefund(${this.order}, ${this.amount})`;
}

class DecideRefund implements Cmd {
  constructor(readonly refund: number, readonly decision: "approve" | "reject") {}
  check = (m: Readonly<Model>) => m.refunds.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const f = pick(m.refunds, this.refund);
    const o = m.orders.find((x) => x.id === f.orderId)!;
    const foreign = await call(w, "POST", `/api/v1/merchant/stores/${o.store}/refunds/${f.id}/${this.decision}`, { authorization: `Bearer ${w.stranger}` });
    expect(foreign.status).toBe(404);
    const r = await call(w, "POST", `/api/v1/merchant/stores/${o.store}/refunds/${f.id}/${this.decision}`, merchant(w));
    if (f.status !== "PENDING_APPROVAL") {
      // a merchant's repeated decision answers the decision made (docs/checkout.md, audit D-1): an approve of a
      // REFUNDED refund, a reject of one the merchant rejected; any other decision (approve of a REJECTED one, reject
      // of a REFUNDED one or of a request the merchant's cancel superseded) is 409
      const same = (this.decision === "approve" && f.status === "REFUNDED") || (this.decision === "reject" && f.status === "REJECTED" && (await rejectedBy(w, f)) === "merchant");
      if (same) expect({ ...outcome(r), st: r.body.data?.status, amount: r.body.data?.amount_minor }).toEqual({ status: 200, code: null, st: f.status, amount: f.amountMinor });
      else expect(outcome(r)).toEqual({ status: 409, code: "conflict" });
      return;
    }
    const want = this.decision === "approve" ? "REFUNDED" : "REJECTED";
    expect({ ...outcome(r), st: r.body.data?.status }).toEqual({ status: 200, code: null, st: want });
    f.status = want;
    if (want === "REJECTED") f.rejectedBy = "merchant";
    if (want === "REFUNDED") {
      o.refundedMinor += f.amountMinor;
      if (o.refundedMinor === o.capturedMinor && o.status !== "canceled") {
        o.status = "refunded";
        o.byMerchant = false; // no move: the refunds took it all
      }
    }
  }
  toString = () => `DecideRefund(${this.refund}, ${this.decision})`;
}

/**
 * Who rejected a refund the model holds as REJECTED; one a race's read-back found is read from its `refund_rejected`
 * event (read-only): `actor: system` is the merchant's cancel superseding it, a merchant's reject says `merchant`.
 */
async function rejectedBy(w: World, f: MRefund): Promise<"merchant" | "cancel"> {
  if (f.rejectedBy) return f.rejectedBy;
  const [e] = await w.srv.db.sql<{ actor: string | null }[]>`
    SELECT data->>'actor' AS actor FROM order_events WHERE order_id = ${f.orderId} AND type = 'refund_rejected' AND data->>'refund_id' = ${f.id}
     ORDER BY id DESC LIMIT 1`;
  return e?.actor === "system" ? "cancel" : "merchant";
}

/**
 * Whether the merchant's own move put an order in its status; for one a race's read-back moved, read from the
 * latest history event of that move (read-only): `actor: merchant`, or a pending cancel the cart wrote for the
 * merchant (`canceled_by: merchant`).
 */
async function movedByMerchant(w: World, o: MOrder): Promise<boolean> {
  if (o.byMerchant !== undefined) return o.byMerchant;
  const event = { fulfilled: "fulfill", shipped: "ship", delivered: "deliver", canceled: "cancel" }[o.status as string];
  if (!event) return false;
  const [e] = await w.srv.db.sql<{ actor: string | null; by: string | null }[]>`
    SELECT data->>'actor' AS actor, data->>'canceled_by' AS by FROM order_events WHERE order_id = ${o.id} AND type = ${event} AND to_status = ${o.status}
     ORDER BY id DESC LIMIT 1`;
  return e?.actor === "merchant" || e?.by === "merchant";
}

const MOVES: Record<string, Partial<Record<string, MOrder["status"]>>> = {
  paid: { fulfilled: "fulfilled", shipped: "shipped", canceled: "canceled" },
  fulfilled: { shipped: "shipped", canceled: "canceled" },
  shipped: { delivered: "delivered" },
  delivered: {},
  canceled: {},
  refunded: {},
};

class MerchantMove implements Cmd {
  constructor(readonly order: number, readonly to: "fulfilled" | "shipped" | "delivered" | "canceled") {}
  check = (m: Readonly<Model>) => m.orders.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const o = pick(m.orders, this.order);
    // another store's owner can neither move the order under its store's path nor under its own
    for (const path of [`/api/v1/merchant/stores/${o.store}/orders/${o.id}/status`, `/api/v1/merchant/stores/cozy-paws-supply/orders/${o.id}/status`]) {
      const foreign = await call(w, "POST", path, { authorization: `Bearer ${w.stranger}` }, { status: this.to });
      expect({ path, status: foreign.status }).toEqual({ path, status: 404 });
    }
    const r = await call(w, "POST", `/api/v1/merchant/stores/${o.store}/orders/${o.id}/status`, merchant(w), { status: this.to });
    if (o.status === this.to && (await movedByMerchant(w, o))) {
      // the merchant's repeat of its own move answers as the first call did, moving nothing (docs/checkout.md "A
      // merchant's repeated decision answers the decision made"): a cancel with the refund it made (null: none left)
      expect({ ...outcome(r), st: r.body.data?.status }).toEqual({ status: 200, code: null, st: o.status });
      if (o.status === "canceled" && o.cancelRefundMinor !== undefined) {
        const want = o.cancelRefundMinor > 0 ? { refund: o.cancelRefundMinor, st: "REFUNDED" } : { refund: 0, st: null };
        expect({ refund: r.body.data?.refund?.amount_minor ?? 0, st: r.body.data?.refund?.status ?? null }).toEqual(want);
      }
      return;
    }
    const next = MOVES[o.status]![this.to];
    if (!next) {
      expect(r.status).toBe(409);
      expect(["conflict", "ORDER_NOT_CANCELLABLE"]).toContain(String(r.body.code));
      return;
    }
    expect({ ...outcome(r), st: r.body.data?.status }).toEqual({ status: 200, code: null, st: next });
    if (next === "canceled") {
      // open requests superseded, the rest of the capture refunded at once
      for (const f of m.refunds) {
        if (f.orderId === o.id && f.status === "PENDING_APPROVAL") {
          f.status = "REJECTED";
          f.rejectedBy = "cancel";
        }
      }
      const rest = o.capturedMinor - o.refundedMinor;
      expect({ refund: r.body.data?.refund?.amount_minor ?? 0, st: r.body.data?.refund?.status ?? null }).toEqual({ refund: rest, st: rest > 0 ? "REFUNDED" : null });
      o.refundedMinor = o.capturedMinor;
      o.cancelRefundMinor = rest;
    }
    o.status = next;
    o.byMerchant = true;
  }
  toString = () => `MerchantMove(${this.order}, ${this.to})`;
}

class AgentCancelOrder implements Cmd {
  constructor(readonly order: number) {}
  check = (m: Readonly<Model>) => m.orders.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const o = pick(m.orders, this.order);
    const r = await call(w, "POST", `/api/v1/agent/orders/${o.id}/cancel`, w.key.headers);
    // every order the model holds was paid: an agent cancels only pending orders
    expect({ ...outcome(r), st: r.body.details?.status }).toEqual({ status: 409, code: "ORDER_NOT_CANCELLABLE", st: o.status });
    const t = await call(w, "POST", `/api/v1/agent/orders/${o.id}/cancel`, w.other.headers);
    expect(t.status).toBe(404);
  }
  toString = () => `AgentCancelOrder(${this.order})`;
}

// ---------------------------------------------------------------------------------------------------------------
// Races: two different calls at once. The model cannot say which one the service took first, so each race checks
// what holds in either order, then the model is read back from the service (resync) and the invariants decide.

/**
 * Whether a complete's answer means the call reached the session's key (so a key the session had none of is bound
 * now): not a refusal that comes first — an ended session (SESSION_INACTIVE: docs/checkout.md's table answers every
 * key the same while none is bound), no preview (PRECONDITION_NOT_MET), an unknown or unconfigured method (400), or
 * a session that does not exist (404).
 */
const reachedKey = (a: Answer): boolean =>
  a.status !== 404 && a.status !== 400 && a.body.code !== "SESSION_INACTIVE" && a.body.code !== "PRECONDITION_NOT_MET";

/** The cart, its live session and its legs as the service holds them (read-only). */
async function resyncCart(w: World, m: Model, cart: MCart): Promise<void> {
  const r = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
  expect(r.status).toBe(200);
  cart.status = r.body.data!.status as MCart["status"];
  const sid = r.body.data!.checkout_session_id as string | null;
  const st = r.body.data!.checkout_status as SessionStatus | "IN_PROGRESS" | null;
  const paid = await w.srv.db.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE cart_id = ${cart.id} AND paid_at IS NOT NULL`;
  cart.paidStores = new Set(paid.map((p) => p.store_slug));
  if (!sid || !st) {
    cart.session = cart.session && cart.session.id && cart.status === "CHECKOUT" && cart.session.status !== "READY_FOR_PAYMENT" ? cart.session : null;
    if (cart.session && cart.status === "CHECKOUT") {
      // an ended session of a partly paid cart: the view hides it; the model keeps it ended
      if (!["COMPLETED", "FAILED", "CANCELED", "EXPIRED"].includes(cart.session.status)) cart.session.status = "CANCELED";
    }
    await syncOrders(w, m, cart);
    return;
  }
  const key = cart.session?.id === sid ? cart.session.key : null;
  const [held] = await w.srv.db.sql<{ tokens: Record<string, string> | null }[]>`SELECT state->'session'->'tokens' AS tokens FROM actor_state WHERE kind = 'cart' AND id = ${cart.id}`;
  const carried = held?.tokens ?? {};
  const legs: Leg[] = [];
  for (const store of cart.stores) {
    const [o] = await w.srv.db.sql<{ paid_at: Date | null; intent_id: string | null; payment_method: string | null }[]>`
      SELECT paid_at, intent_id, payment_method FROM orders WHERE checkout_session_id = ${sid} AND store_slug = ${store}`;
    // the leg's method: its order's in this session, else the one the session carried from the cart's previous one
    const leg: Leg = { store, status: "unpaid", lastMethod: (o?.payment_method as Token | null) ?? (carried[store] as Token | undefined) ?? null, link: null, decision: null };
    rememberMethod(cart, store, leg.lastMethod);
    if (cart.paidStores.has(store)) leg.status = "captured";
    else if (o?.intent_id && st === "PENDING_EXTERNAL_CONFIRMATION") {
      const [i] = await w.srv.db.sql<{ state: string; approval_token: string | null }[]>`SELECT state, approval_token FROM sandbox_ledger_intents WHERE intent_id = ${o.intent_id}`;
      if (i && ["awaiting_approval", "approved", "rejected"].includes(i.state)) {
        leg.status = "awaiting";
        leg.link = i.approval_token ? `${w.srv.url}/api/v1/sandbox/payments/${o.intent_id}/${i.approval_token}` : null;
        leg.decision = i.state === "approved" ? "approve" : i.state === "rejected" ? "reject" : null;
      }
    }
    legs.push(leg);
  }
  const status: SessionStatus = st === "IN_PROGRESS" ? "SETTLEMENT_UNKNOWN" : st;
  if (status === "SETTLEMENT_UNKNOWN") w.unsettledSessions.add(sid);
  else w.unsettledSessions.delete(sid);
  // what the session's preview priced stays the model's (the service does not show it again)
  const prev = cart.session?.id === sid ? cart.session : null;
  cart.session = { id: sid, status, key, legs, previewed: prev?.previewed, previewedUnits: prev?.previewedUnits, moved: prev?.moved };
  await syncOrders(w, m, cart);
}

/** The model's orders and refunds as the service holds them now (read-only); refunds made in a race are added. */
async function resyncOrders(w: World, m: Model): Promise<void> {
  for (const o of m.orders) {
    const [r] = await w.srv.db.sql<{ status: string; refunded_minor: string }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${o.id}`;
    // moved in the race: who moved it (and what a cancel refunded) is read when a repeat asks
    if (o.status !== r!.status) {
      o.byMerchant = undefined;
      o.cancelRefundMinor = undefined;
    }
    o.status = r!.status as MOrder["status"];
    o.refundedMinor = Number(r!.refunded_minor);
    const refunds = await w.srv.db.sql<{ id: string; status: string; amount_minor: string }[]>`SELECT id, status, amount_minor FROM order_refunds WHERE order_id = ${o.id}`;
    for (const f of refunds) {
      const known = m.refunds.find((x) => x.id === f.id);
      // the model's refunds are agent requests and their decisions; an APPROVED one is being driven (a race's)
      const status = f.status === "APPROVED" || f.status === "FAILED" ? "PENDING_APPROVAL" : (f.status as MRefund["status"]);
      if (known && known.status !== status) known.rejectedBy = undefined; // decided in the race: read when asked
      if (known) known.status = status;
      else m.refunds.push({ id: f.id, orderId: o.id, amountMinor: Number(f.amount_minor), status });
    }
  }
}

type RaceKind = "two_carts_complete" | "decide_vs_cancel" | "reconcile_vs_complete" | "reconcile_vs_cancel" | "pending_cancel_vs_complete" | "merchant_cancel_vs_complete" | "refund_vs_approve" | "complete_vs_cancel" | "complete_vs_complete" | "decide_vs_complete" | "refund_vs_refund" | "approve_vs_approve" | "approve_vs_reject" | "approve_vs_cancel" | "cancel_vs_ship" | "refund_vs_cancel";

class Race implements Cmd {
  constructor(readonly kind: RaceKind, readonly target: number, readonly token: Token) {}
  check = (m: Readonly<Model>) =>
    this.kind.startsWith("complete") || this.kind.startsWith("decide") || this.kind === "two_carts_complete" || this.kind.startsWith("reconcile") || this.kind.endsWith("cancel_vs_complete")
      ? m.carts.some((c) => c.session !== null)
      : this.kind.startsWith("approve") || this.kind === "refund_vs_approve"
        ? m.refunds.length > 0
        : m.orders.length > 0;
  async run(m: Model, w: World): Promise<void> {
    const post = (path: string, headers: Record<string, string>, body?: unknown) => call(w, "POST", path, headers, body);
    if (this.kind === "two_carts_complete") {
      // two carts (often sharing a tracked product) paid at once: the holds decide who gets the last units
      const open = m.carts.filter((c) => c.status !== "COMPLETED" && (c.session === null || c.session.status === "READY_FOR_PAYMENT"));
      if (open.length < 2) return;
      const a = pick(open, this.target);
      const b = pick(open.filter((c) => c !== a), this.target + 1);
      const keys = new Map<MCart, string>();
      const pay = (c: MCart) => {
        const key = c.session?.key ?? crypto.randomUUID();
        keys.set(c, key);
        return post("/api/v1/agent/checkout", w.key.headers, { cartId: c.id, idempotency_key: key, ...(c.session ? { checkout_session_id: c.session.id } : {}), payment_method: "tok_approve" });
      };
      const answers = await Promise.all([pay(a), pay(b)]);
      for (const x of answers) expect(x.status).toBeLessThan(500);
      for (const [i, c] of [a, b].entries()) {
        await resyncCart(w, m, c);
        // the key the call bound (tok_approve is never refused before the key binds)
        if (c.session && c.session.key === null && answers[i]!.status !== 400 && answers[i]!.status !== 404) c.session.key = keys.get(c)!;
      }
      return;
    }
    if (this.kind === "decide_vs_cancel" || this.kind === "reconcile_vs_complete" || this.kind === "reconcile_vs_cancel") {
      const cart = pick(m.carts.filter((c) => c.session !== null), this.target);
      const s = cart.session!;
      let first: Promise<Answer>;
      if (this.kind === "decide_vs_cancel") {
        const link = s.legs.find((l) => l.status === "awaiting" && l.link)?.link;
        if (!link) return;
        first = post(`${new URL(link).pathname}/approve`, {}, {});
      } else {
        const [o] = await w.srv.db.sql<{ id: string; store_slug: string }[]>`
          SELECT id, store_slug FROM orders WHERE cart_id = ${cart.id} AND status = 'pending' AND reconciliation IS NOT NULL ORDER BY store_slug LIMIT 1`;
        if (!o) return;
        first = post(`/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/reconcile`, merchant(w), { action: this.token === "tok_approve" ? "accept" : "refund" });
      }
      const second =
        this.kind === "reconcile_vs_complete"
          ? post("/api/v1/agent/checkout", w.key.headers, { cartId: cart.id, checkout_session_id: s.id, idempotency_key: s.key ?? crypto.randomUUID() })
          : post(`/api/v1/agent/checkout/${s.id}/cancel`, w.key.headers);
      const answers = await Promise.all([first, second]);
      for (const a of answers) if (a.status >= 500) expect(outcome(a)).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE" });
      await resyncCart(w, m, cart);
      await resyncOrders(w, m);
      return;
    }
    if (this.kind === "pending_cancel_vs_complete" || this.kind === "merchant_cancel_vs_complete") {
      // the cancel of a pending order of the session against the payment of that session
      const cart = pick(m.carts.filter((c) => c.session !== null), this.target);
      const s = cart.session!;
      const [o] = await w.srv.db.sql<{ id: string; store_slug: string }[]>`SELECT id, store_slug FROM orders WHERE checkout_session_id = ${s.id} AND status = 'pending' ORDER BY store_slug LIMIT 1`;
      if (!o) return;
      const key = s.key ?? crypto.randomUUID();
      const cancel =
        this.kind === "pending_cancel_vs_complete"
          ? post(`/api/v1/agent/orders/${o.id}/cancel`, w.key.headers)
          : post(`/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/status`, merchant(w), { status: "canceled" });
      const answers = await Promise.all([cancel, post("/api/v1/agent/checkout", w.key.headers, { cartId: cart.id, checkout_session_id: s.id, idempotency_key: key, payment_method: this.token })]);
      for (const a of answers) if (a.status >= 500) expect(outcome(a)).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE" });
      // an order canceled by the agent's cancel was never charged (200 canceled means nothing was captured for it)
      if (this.kind === "pending_cancel_vs_complete" && answers[0]!.status === 200) {
        const [after] = await w.srv.db.sql<{ status: string; paid_at: Date | null; capture_ref: string | null }[]>`SELECT status, paid_at, capture_ref FROM orders WHERE id = ${o.id}`;
        expect({ status: after!.status, paid: after!.paid_at !== null || after!.capture_ref !== null }).toEqual({ status: "canceled", paid: false });
      }
      await resyncCart(w, m, cart);
      if (cart.session && cart.session.id === s.id && cart.session.key === null && reachedKey(answers[1]!)) cart.session.key = key;
      await resyncOrders(w, m);
      return;
    }
    if (this.kind === "refund_vs_approve") {
      const f = pick(m.refunds, this.target);
      const o = m.orders.find((x) => x.id === f.orderId)!;
      const answers = await Promise.all([
        post(`/api/v1/merchant/stores/${o.store}/refunds/${f.id}/approve`, merchant(w)),
        post(`/api/v1/agent/orders/${o.id}/refund`, w.key.headers, {}),
      ]);
      for (const a of answers) expect(a.status).toBeLessThan(500);
      await resyncOrders(w, m);
      return;
    }
    if (this.kind === "complete_vs_cancel" || this.kind === "complete_vs_complete" || this.kind === "decide_vs_complete") {
      const cart = pick(m.carts.filter((c) => c.session !== null), this.target);
      const s = cart.session!;
      const key = s.key ?? crypto.randomUUID();
      const complete = (method?: Token) => post("/api/v1/agent/checkout", w.key.headers, { cartId: cart.id, checkout_session_id: s.id, idempotency_key: key, ...(method ? { payment_method: method } : {}) });
      let answers: Answer[];
      // the answers of the complete calls (a cancel's or a decision's own answer binds no key)
      let completes: Answer[];
      if (this.kind === "complete_vs_cancel") {
        answers = await Promise.all([complete(this.token), post(`/api/v1/agent/checkout/${s.id}/cancel`, w.key.headers)]);
        completes = [answers[0]!];
        // one of them ended the session: a completed payment cannot also be canceled
        expect({ both: answers[0]!.status === 200 && answers[1]!.status === 200 }).toEqual({ both: false });
      } else if (this.kind === "complete_vs_complete") {
        answers = await Promise.all([complete(this.token), complete("tok_approve")]);
        completes = answers;
        expect({ twice: answers.filter((a) => a.status === 200).length }).toEqual({ twice: Math.min(1, answers.filter((a) => a.status === 200).length) });
      } else {
        const link = s.legs.find((l) => l.status === "awaiting" && l.decision === null && l.link)?.link;
        answers = await Promise.all([link ? post(`${new URL(link).pathname}/approve`, {}, {}) : complete(), complete()]);
        completes = link ? [answers[1]!] : answers;
      }
      // a lost processor answer (tok_lost_response) is the one 5xx a payment may give: 503 with the session unknown
      for (const a of answers) if (a.status >= 500) expect(outcome(a)).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE" });
      await resyncCart(w, m, cart);
      if (cart.session && cart.session.id === s.id && cart.session.key === null && completes.some(reachedKey)) cart.session.key = key;
      return;
    }
    if (this.kind.startsWith("approve")) {
      const f = pick(m.refunds, this.target);
      const o = m.orders.find((x) => x.id === f.orderId)!;
      const decide = (d: string) => post(`/api/v1/merchant/stores/${o.store}/refunds/${f.id}/${d}`, merchant(w));
      const answers =
        this.kind === "approve_vs_approve"
          ? await Promise.all([decide("approve"), decide("approve")])
          : this.kind === "approve_vs_reject"
            ? await Promise.all([decide("approve"), decide("reject")])
            : await Promise.all([decide("approve"), post(`/api/v1/merchant/stores/${o.store}/orders/${o.id}/status`, merchant(w), { status: "canceled" })]);
      for (const a of answers) expect(a.status).toBeLessThan(500);
      if (this.kind === "approve_vs_reject") expect({ both: answers.every((a) => a.status === 200) }).toEqual({ both: false });
      await resyncOrders(w, m);
      return;
    }
    const o = pick(m.orders, this.target);
    const refund = (amount?: number) => post(`/api/v1/agent/orders/${o.id}/refund`, w.key.headers, amount === undefined ? {} : { amount });
    const move = (status: string) => post(`/api/v1/merchant/stores/${o.store}/orders/${o.id}/status`, merchant(w), { status });
    let answers: Answer[];
    if (this.kind === "refund_vs_refund") {
      const all = refundableOf(m, o);
      answers = await Promise.all([refund(), refund(Math.max(1, all))]);
      // both ask for everything left: only one may be granted
      expect({ both: answers.every((a) => a.status === 201) && all > 0 }).toEqual({ both: false });
    } else if (this.kind === "cancel_vs_ship") answers = await Promise.all([move("canceled"), move("shipped")]);
    else answers = await Promise.all([refund(), move("canceled")]);
    for (const a of answers) expect(a.status).toBeLessThan(500);
    await resyncOrders(w, m);
  }
  toString = () => `Race(${this.kind}, ${this.target}, ${this.token})`;
}

/**
 * The cancel of an order left pending by a rolled-back or waiting leg: the agent's cancels the whole session; the
 * merchant's is refused while another store's leg of the session is unpaid (shared_checkout), else ends the session.
 */
class CancelPendingOrder implements Cmd {
  constructor(readonly cart: number, readonly who: "agent" | "merchant") {}
  check = (m: Readonly<Model>) => m.carts.some((c) => c.session !== null && (c.session.status === "READY_FOR_PAYMENT" || c.session.status === "PENDING_EXTERNAL_CONFIRMATION"));
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts.filter((c) => c.session !== null && (c.session.status === "READY_FOR_PAYMENT" || c.session.status === "PENDING_EXTERNAL_CONFIRMATION")), this.cart);
    const s = cart.session!;
    const pending = await w.srv.db.sql<{ id: string; store_slug: string }[]>`SELECT id, store_slug FROM orders WHERE checkout_session_id = ${s.id} AND status = 'pending' ORDER BY store_slug`;
    if (pending.length === 0) return;
    const o = pending[0]!;
    const r =
      this.who === "agent"
        ? await call(w, "POST", `/api/v1/agent/orders/${o.id}/cancel`, w.key.headers)
        : await call(w, "POST", `/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/status`, merchant(w), { status: "canceled" });
    const othersUnpaid = s.legs.some((l) => l.store !== o.store_slug && l.status !== "captured");
    if (this.who === "merchant" && othersUnpaid) {
      expect({ ...outcome(r), reason: r.body.details?.reason }).toEqual({ status: 409, code: "ORDER_NOT_CANCELLABLE", reason: "shared_checkout" });
      return;
    }
    expect({ ...outcome(r), st: r.body.data?.status }).toEqual({ status: 200, code: null, st: "canceled" });
    const [after] = await w.srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${o.id}`;
    expect(after!.status).toBe("canceled");
    // the session ended: nothing of it can be paid any more; a cart with nothing paid is open again
    const ended = cart.session;
    await resyncCart(w, m, cart);
    if (cart.paidStores.size === 0) expect({ cart: cart.status, session: cart.session?.id ?? null }).toEqual({ cart: "OPEN", session: null });
    if (ended && !cart.session) {
      // keep the ended session in the model when the cart stays partly paid, so its key is answered SESSION_INACTIVE
      if (cart.status === "CHECKOUT") cart.session = { ...ended, status: "CANCELED" };
    }
  }
  toString = () => `CancelPendingOrder(${this.cart}, ${this.who})`;
}

/** A refund request with an idempotency key, repeated: the same request answers the first record, another amount 409. */
class RefundWithKey implements Cmd {
  constructor(readonly order: number, readonly repeat: "same" | "other_amount") {}
  check = (m: Readonly<Model>) => m.orders.some((o) => ["paid", "fulfilled", "shipped", "delivered"].includes(o.status) && refundableOf(m as Model, o) > 1 && openRefunds(m as Model, o) < 4);
  async run(m: Model, w: World): Promise<void> {
    const o = pick(m.orders.filter((x) => ["paid", "fulfilled", "shipped", "delivered"].includes(x.status) && refundableOf(m, x) > 1 && openRefunds(m, x) < 4), this.order);
    const key = crypto.randomUUID();
    const amount = Math.max(1, Math.floor(refundableOf(m, o) / 3));
    const first = await call(w, "POST", `/api/v1/agent/orders/${o.id}/refund`, { ...w.key.headers, "idempotency-key": key }, { amount });
    expect(outcome(first)).toEqual({ status: 201, code: null });
    m.refunds.push({ id: String(first.body.data!.refund_id), orderId: o.id, amountMinor: amount, status: "PENDING_APPROVAL" });
    const again = await call(w, "POST", `/api/v1/agent/orders/${o.id}/refund`, { ...w.key.headers, "idempotency-key": key }, { amount: this.repeat === "same" ? amount : amount + 1 });
    if (this.repeat === "same") expect({ ...outcome(again), id: again.body.data?.refund_id }).toEqual({ status: 201, code: null, id: first.body.data!.refund_id });
    else expect({ ...outcome(again), id: again.body.details?.refund_id }).toEqual({ status: 409, code: "IDEMPOTENCY_KEY_CONFLICT", id: first.body.data!.refund_id });
  }
  toString = () => `RefundWithKey(${this.order}, ${this.repeat})`;
}

/** The merchant decides a capture escalated to it (amount mismatch, finalization failed): accept or refund. */
class MerchantReconcile implements Cmd {
  constructor(readonly cart: number, readonly action: "accept" | "refund") {}
  check = (m: Readonly<Model>) => m.carts.some((c) => c.session?.status === "SETTLEMENT_UNKNOWN");
  async run(m: Model, w: World): Promise<void> {
    const cart = pick(m.carts.filter((c) => c.session?.status === "SETTLEMENT_UNKNOWN"), this.cart);
    const flagged = await w.srv.db.sql<{ id: string; store_slug: string }[]>`
      SELECT id, store_slug FROM orders WHERE cart_id = ${cart.id} AND status = 'pending' AND reconciliation IS NOT NULL ORDER BY store_slug`;
    if (flagged.length === 0) return;
    const o = flagged[0]!;
    const r = await call(w, "POST", `/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/reconcile`, merchant(w), { action: this.action });
    expect(outcome(r)).toEqual({ status: 200, code: null });
    const [after] = await w.srv.db.sql<{ status: string; reconciliation: string | null }[]>`SELECT status, reconciliation FROM orders WHERE id = ${o.id}`;
    expect({ ...after }).toEqual({ status: this.action === "accept" ? "paid" : "canceled", reconciliation: null });
    await resyncCart(w, m, cart);
    // the same decision again (a retry after a lost answer) answers it again; the other decision is refused (helper B, B-6)
    const again = await call(w, "POST", `/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/reconcile`, merchant(w), { action: this.action });
    expect({ ...outcome(again), data: again.body.data }).toEqual({ status: 200, code: null, data: r.body.data });
    const other = await call(w, "POST", `/api/v1/merchant/stores/${o.store_slug}/orders/${o.id}/reconcile`, merchant(w), { action: this.action === "accept" ? "refund" : "accept" });
    expect(outcome(other)).toEqual({ status: 409, code: "conflict" });
  }
  toString = () => `MerchantReconcile(${this.cart}, ${this.action})`;
}

/**
 * The agent bids on a product (POST /agent/negotiate): at 98 % of the list price (accepted by the demo store's rules,
 * auto-accept 95 %), 90 % (countered at the midpoint, never below the auto-accept price) or 70 % (below the 80 % floor:
 * rejected); greenleaf-living does not negotiate; at most 3 bids per key and product.
 */
class Negotiate implements Cmd {
  constructor(readonly product: number, readonly percent: 98 | 90 | 70) {}
  check = () => true;
  async run(_m: Model, w: World): Promise<void> {
    const p = pick(w.products.filter((x) => !x.needsVariant), this.product);
    const [row] = await w.srv.db.sql<{ price_minor: string; rounds: number }[]>`
      SELECT price_minor, (SELECT count(*)::int FROM negotiation_offers WHERE agent_key_id = ${w.key.id} AND product_id = ${p.id}) AS rounds FROM products WHERE id = ${p.id}`;
    const list = Number(row!.price_minor);
    const bid = Math.ceil((list * this.percent) / 100);
    const r = await call(w, "POST", "/api/v1/agent/negotiate", w.key.headers, { productId: p.id, merchantSlug: p.store, bidPrice: bid / 100, currency: "USD" });
    const autoAccept = Math.ceil((list * 95) / 100);
    const want =
      p.store !== "demo-store"
        ? { status: "rejected", reason: "negotiation_not_enabled", price: null }
        : row!.rounds >= 3
          ? { status: "rejected", reason: "max_rounds_reached", price: null }
          : this.percent === 98
            ? { status: "accepted", reason: null, price: Math.min(bid, list) / 100 }
            : this.percent === 90
              ? { status: "countered", reason: null, price: null }
              : { status: "rejected", reason: "below_floor", price: null };
    expect({ ...outcome(r), st: r.body.data?.status, reason: r.body.data?.reason ?? null, price: r.body.data?.negotiatedPrice ?? null }).toEqual({ status: 200, code: null, st: want.status, reason: want.reason, price: want.price });
    if (want.status === "countered") expect(Math.round(Number(r.body.data?.counterPrice) * 100)).toBe(Math.min(list, Math.max(autoAccept, Math.round((bid + list) / 2))));
  }
  toString = () => `Negotiate(${this.product}, ${this.percent}%)`;
}

/**
 * Time passes for an offer: the key's latest accepted, unused offer of a product reaches its expiry (its expires_at is
 * moved to the past, the one row a clock would change; the service reads it as any expired offer). A cart then prices
 * the list price; a session previewed with the offer meets the moved price at payment.
 */
class ExpireOffer implements Cmd {
  constructor(readonly product: number) {}
  check = () => true;
  async run(_m: Model, w: World): Promise<void> {
    const p = pick(w.products.filter((x) => !x.needsVariant && x.store === "demo-store"), this.product);
    const o = await latestOffer(w, p.id);
    if (!o || !o.live) return;
    await w.srv.db.sql`UPDATE negotiation_offers SET expires_at = ${new Date((w.clock?.now() ?? Date.now()) - 1000)} WHERE id = ${o.id}`;
    w.trace.push(`  (offer ${o.id} of ${p.id} expired)`);
  }
  toString = () => `ExpireOffer(${this.product})`;
}

/**
 * Time passes (the server's manual clock moves on): 16 min (every negotiated offer lapses: 15 min), 31 min (every
 * session READY_FOR_PAYMENT expires: 30 min after entering the status) or 61 min (every session waiting for the buyer
 * expires too: 1 h). The clock stands still between these commands, so every session has been in its status at least
 * as long as the advance. An expired session ends as a cancel does: nothing of it is paid any more, its holds are
 * released, a cart with nothing paid is OPEN again, a partly paid one stays CHECKOUT (docs/checkout.md "Expiry").
 * A session in a status the advance does not decide (READY after 16 min, waiting after 31) is read back.
 */
class TimePasses implements Cmd {
  constructor(readonly minutes: 16 | 31 | 61) {}
  check = () => true;
  async run(m: Model, w: World): Promise<void> {
    if (!w.clock) return;
    const live = m.carts.filter((c) => c.session && ["READY_FOR_PAYMENT", "PENDING_EXTERNAL_CONFIRMATION"].includes(c.session.status));
    const expires = (c: MCart) =>
      (c.session!.status === "READY_FOR_PAYMENT" && this.minutes >= 31) || (c.session!.status === "PENDING_EXTERNAL_CONFIRMATION" && this.minutes >= 61);
    const predicted = live.filter(expires);
    w.clock.advance(this.minutes * 60_000);
    // the sessions' timers run on the server's reminder poll: wait until every predicted expiry is visible (read-only)
    for (const cart of predicted) {
      for (let i = 0; i < 80; i++) {
        const r = await w.srv.json(`/api/v1/agent/cart/${cart.id}`, { headers: w.key.headers });
        const st = (r.body as { data?: { checkout_status?: string | null } })?.data?.checkout_status ?? null;
        if (st !== "READY_FOR_PAYMENT" && st !== "PENDING_EXTERNAL_CONFIRMATION") break;
        await Bun.sleep(100);
      }
    }
    // the undecided ones are read back after the reminder poll had its turn
    // so are the sessions whose answer was lost: their timer settles them once time has passed
    const settling = m.carts.filter((c) => c.session?.status === "SETTLEMENT_UNKNOWN");
    if (live.length > predicted.length || settling.length > 0) await Bun.sleep(500);
    for (const cart of settling) await resyncCart(w, m, cart);
    // the operator's and the stranger's log-ins and the other tenant's key are renewed, as their owners would
    w.admin = await login(w.srv);
    w.stranger = await login(w.srv, merchantLogin("cozy-paws-supply"));
    w.other = await createKey(w.srv, { scopes: ALL_SCOPES });
    for (const cart of live) {
      const before = cart.session!;
      if (expires(cart)) {
        before.status = "EXPIRED"; // ended unpaid: its complete answers 404 CHECKOUT_SESSION_NOT_FOUND, its cancel SESSION_INACTIVE
        if (cart.paidStores.size === 0) {
          cart.status = "OPEN";
          cart.session = null;
        }
        await expectCartStatus(w, cart);
        const pending = await w.srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE checkout_session_id = ${before.id} AND status = 'pending'`;
        expect({ session: before.id, pending: pending.map((o) => o.id) }).toEqual({ session: before.id, pending: [] });
        await syncOrders(w, m, cart);
      } else {
        await resyncCart(w, m, cart);
        if (!cart.session && before.key && cart.status === "CHECKOUT") cart.session = { ...before, status: "EXPIRED" };

      }
    }
  }
  toString = () => `TimePasses(${this.minutes} min)`;
}

/** Runs a command, then checks every invariant. */
class Checked implements Cmd {
  constructor(readonly inner: Cmd) {}
  check = (m: Readonly<Model>) => this.inner.check(m);
  async run(m: Model, w: World): Promise<void> {
    w.trace.push(`# ${this.inner.toString()}`);
    await this.inner.run(m, w);
    await checkInvariants(w, this.inner.toString());
  }
  toString = () => this.inner.toString();
}

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries.

const TOKENS: Token[] = ["MOCK", "tok_approve", "tok_decline", "tok_fail", "tok_not_approved", "tok_needs_approval", "tok_lost_response", "tok_amount_mismatch", "tok_finalization_fails", "tok_bogus"];

export interface CommandOptions {
  /** Tokens the completes may name (a known finding's token can be left out). */
  tokens?: Token[];
  /** Whether completes may run as two identical concurrent calls. */
  concurrent?: boolean;
  /** Whether two different calls may race (the model is then read back from the service). */
  races?: boolean;
}

export function commandArbitraries(opts: CommandOptions = {}): fc.Arbitrary<Cmd>[] {
  const tokens = opts.tokens ?? TOKENS;
  const idx = fc.nat({ max: 7 });
  // the buyer's approval is the path with the most steps (link, decision, resume): weighted up
  const token = fc.oneof(...tokens.map((t) => ({ arbitrary: fc.constant(t), weight: t === "tok_needs_approval" ? 4 : t === "tok_approve" ? 2 : 1 })));
  const wrap = <T extends Cmd>(a: fc.Arbitrary<T>) => a.map((c) => new Checked(c) as Cmd);
  // the last catalog entry is the product with variants named without one (always refused): picked rarely
  const product = fc.oneof({ arbitrary: fc.nat({ max: 6 }), weight: 20 }, { arbitrary: fc.constant(7), weight: 1 });
  const createCart = wrap(fc.array(fc.record({ product, quantity: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3 }).map((l) => new CreateCart(l)));
  const methods = fc.option(fc.array(fc.option(token, { nil: null }), { minLength: 1, maxLength: 2 }), { nil: null });
  const complete = wrap(
    fc
      .tuple(idx, methods, fc.constantFrom("bound", "bound", "bound", "fresh") as fc.Arbitrary<"bound" | "fresh">, opts.concurrent === false ? fc.constant(false) : fc.boolean())
      .map(([c, m, k, conc]) => new Complete(c, m, k, conc)),
  );
  const mcpComplete = wrap(fc.tuple(idx, methods, fc.constantFrom("bound", "bound", "bound", "fresh") as fc.Arbitrary<"bound" | "fresh">).map(([c, m, k]) => new Complete(c, m, k, false, "mcp")));
  const destination = fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.constantFrom(...(Object.keys(DESTINATIONS) as (keyof typeof DESTINATIONS)[])), weight: 3 });
  const preview = wrap(fc.tuple(idx, destination).map(([c, d]) => new Preview(c, d)));
  const mcpPreview = wrap(idx.map((c) => new Preview(c, null, "mcp")));
  const decide = wrap(fc.tuple(idx, fc.array(fc.constantFrom("approve", "approve", "reject") as fc.Arbitrary<"approve" | "reject">, { minLength: 1, maxLength: 2 })).map(([c, d]) => new Decide(c, d)));
  const requestRefund = wrap(fc.tuple(idx, fc.constantFrom("omitted", "zero", "one", "half", "exact", "over") as fc.Arbitrary<AmountChoice>).map(([o, a]) => new RequestRefund(o, a)));
  const decideRefund = wrap(fc.tuple(idx, fc.constantFrom("approve", "approve", "reject") as fc.Arbitrary<"approve" | "reject">).map(([f, d]) => new DecideRefund(f, d)));
  const move = wrap(fc.tuple(idx, fc.constantFrom("fulfilled", "shipped", "delivered", "canceled") as fc.Arbitrary<"fulfilled" | "shipped" | "delivered" | "canceled">).map(([o, s]) => new MerchantMove(o, s)));
  // a run starts with no cart: the steps towards an order are weighted so most commands find something to act on
  return [
    createCart,
    createCart,
    createCart,
    wrap(fc.tuple(idx, fc.constantFrom("WELCOME10", "FIVEOFF", "EXPIRED15", "LIMITED50") as fc.Arbitrary<"WELCOME10" | "FIVEOFF" | "EXPIRED15" | "LIMITED50">).map(([c, code]) => new ApplyCoupon(c, code))),
    preview,
    preview,
    mcpPreview,
    complete,
    complete,
    complete,
    mcpComplete,
    mcpComplete,
    decide,
    decide,
    wrap(idx.map((c) => new CancelSession(c))),
    wrap(fc.tuple(idx, idx).map(([c, o]) => new ReadAsOwnerAndStranger(c, o))),
    requestRefund,
    requestRefund,
    requestRefund,
    decideRefund,
    decideRefund,
    move,
    move,
    wrap(idx.map((o) => new AgentCancelOrder(o))),
    wrap(fc.tuple(idx, fc.constantFrom("accept", "refund") as fc.Arbitrary<"accept" | "refund">).map(([c, a]) => new MerchantReconcile(c, a))),
    wrap(fc.tuple(idx, fc.constantFrom("accept", "refund") as fc.Arbitrary<"accept" | "refund">).map(([c, a]) => new MerchantReconcile(c, a))),
    wrap(fc.tuple(idx, fc.constantFrom("agent", "merchant") as fc.Arbitrary<"agent" | "merchant">).map(([c, who]) => new CancelPendingOrder(c, who))),
    wrap(fc.tuple(idx, fc.constantFrom("same", "other_amount") as fc.Arbitrary<"same" | "other_amount">).map(([o, r]) => new RefundWithKey(o, r))),
    wrap(fc.tuple(fc.nat({ max: 6 }), fc.constantFrom(98, 98, 98, 90, 70) as fc.Arbitrary<98 | 90 | 70>).map(([p, pct]) => new Negotiate(p, pct))),
    wrap(fc.tuple(fc.nat({ max: 6 }), fc.constantFrom(98, 98, 90) as fc.Arbitrary<98 | 90 | 70>).map(([p, pct]) => new Negotiate(p, pct))),
    wrap(fc.nat({ max: 4 }).map((p) => new ExpireOffer(p))),
    wrap((fc.constantFrom(16, 31, 61) as fc.Arbitrary<16 | 31 | 61>).map((t) => new TimePasses(t))),
    ...(opts.races === false
      ? []
      : [
          wrap(
            fc
              .tuple(
                fc.constantFrom(
                  "two_carts_complete",
                  "two_carts_complete",
                  "decide_vs_cancel",
                  "reconcile_vs_complete",
                  "reconcile_vs_cancel",
                  "pending_cancel_vs_complete",
                  "merchant_cancel_vs_complete",
                  "refund_vs_approve",
                  "complete_vs_cancel",
                  "complete_vs_complete",
                  "decide_vs_complete",
                  "refund_vs_refund",
                  "approve_vs_approve",
                  "approve_vs_reject",
                  "approve_vs_cancel",
                  "cancel_vs_ship",
                  "refund_vs_cancel",
                ) as fc.Arbitrary<RaceKind>,
                idx,
                token,
              )
              .map(([k, t, tok]) => new Race(k, t, tok)),
          ),
        ]),
  ];
}

/**
 * Before a run: the merchant restocks a tracked product that is nearly sold out (PATCH inventory, as a merchant
 * would), so every run can buy; the stock baseline moves by what was added.
 */
export async function restock(w: World): Promise<void> {
  for (const p of w.products.filter((x) => x.tracked && !x.needsVariant && !x.variantId)) {
    const f = await stockFacts(w.srv.db.sql, p.id);
    if (f.stock - f.reserved >= 6) continue;
    const to = f.reserved + 10;
    const r = await call(w, "PATCH", `/api/v1/merchant/stores/${p.store}/inventory`, merchant(w), { items: [{ productId: p.id, stockQuantity: to }] });
    expect({ ...outcome(r), updated: r.body.data?.updated }).toEqual({ status: 200, code: null, updated: 1 });
    w.stockBaseline.set(p.id, w.stockBaseline.get(p.id)! + (to - f.stock));
  }
  // a variant is restocked by its own level (its product's stock is the roll-up, and moves with it); small, so the
  // variants' shortages keep happening
  for (const p of w.products.filter((x) => x.tracked && x.variantId)) {
    const key = stockKey(p.id, p.variantId);
    const f = await stockFacts(w.srv.db.sql, key);
    if (f.inStock && f.stock - f.reserved >= 2) continue;
    const before = await stockFacts(w.srv.db.sql, p.id);
    const to = f.reserved + 3;
    const r = await call(w, "PATCH", `/api/v1/merchant/stores/${p.store}/inventory`, merchant(w), { items: [{ productId: p.id, variantId: p.variantId, stockQuantity: to }] });
    expect({ ...outcome(r), updated: r.body.data?.updated }).toEqual({ status: 200, code: null, updated: 1 });
    const after = await stockFacts(w.srv.db.sql, p.id);
    w.stockBaseline.set(key, w.stockBaseline.get(key)! + (to - f.stock));
    w.stockBaseline.set(p.id, w.stockBaseline.get(p.id)! + (after.stock - before.stock));
  }
}

/**
 * After a run: every session the run left with an unknown outcome is settled (the same call again, as the agent
 * would), so the next run's invariants see no capture waiting for its order.
 */
export async function settleRun(w: World, m: Model): Promise<void> {
  for (const cart of m.carts) {
    const s = cart.session;
    if (!s || !w.unsettledSessions.has(s.id)) continue;
    for (let i = 0; i < 20 && w.unsettledSessions.has(s.id); i++) {
      const r = await call(w, "POST", "/api/v1/agent/checkout", w.key.headers, { cartId: cart.id, checkout_session_id: s.id, idempotency_key: s.key });
      if (r.status !== 503) w.unsettledSessions.delete(s.id);
      else await Bun.sleep(250);
    }
  }
  w.unsettledSessions.clear();
  // no order is left pending by a session that ended: only the cart's live session may have pending orders
  for (const cart of m.carts) {
    const r = await call(w, "GET", `/api/v1/agent/cart/${cart.id}`, w.key.headers);
    const live = r.status === 200 && typeof r.body.data?.checkout_session_id === "string" ? r.body.data.checkout_session_id : null;
    const stranded = await w.srv.db.sql<{ id: string; checkout_session_id: string }[]>`
      SELECT id, checkout_session_id FROM orders WHERE cart_id = ${cart.id} AND status = 'pending' AND checkout_session_id IS DISTINCT FROM ${live}`;
    expect({ cart: cart.id, stranded: stranded.map((o) => `${o.id} of ${o.checkout_session_id}`) }).toEqual({ cart: cart.id, stranded: [] });
  }
}
