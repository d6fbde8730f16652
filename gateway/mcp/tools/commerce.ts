/**
 * Cart, checkout, order and refund tools: each is one message to the `cart/<id>` or `store/<slug>` actor (the same
 * messages the REST routes send) or the REST module's exported read (`orderView`). Ownership is the actor's
 * check: another caller's cart or order reads as not found.
 */
import { createHash } from "node:crypto";
import { Type as T } from "@sinclair/typebox";
// text the database stores or looks up holds no NUL: the schema says so, so it is refused before the human is asked (fuzz F2-6)
import { NO_NUL_PATTERN, NON_BLANK_NO_NUL_PATTERN } from "../../../infra/validation-message.ts";
import { cartActor, cartIdOfSession } from "../../../actors/cart/index.ts";
import { mergedLineTooLarge, stockShortfall } from "../../../actors/cart/cart-machine.ts";
import type { LegOutcomeView } from "../../../actors/cart/checkout-machine.ts";
import type { CarryOverInput, CartView, CompleteReply, PrecheckView } from "../../../actors/cart/messages.ts";
import { linePricing } from "../../../actors/cart/offer-rule.ts";
import { unitPriceOf, type NegotiatedPrice } from "../../../actors/cart/totals.ts";
import { variantMissing } from "../../../actors/cart/variant-line.ts";
import { absoluteApprovalUrl } from "../../../actors/payments/card-rails.ts";
import { ActorError, fail } from "../../../actors/runtime/errors.ts";
import { readCatalog, refundPolicyColumns, refundView, storeCommerce } from "../../../actors/store/commerce.ts";
import { refundableMinor, refundRecordsOf, validateRefundRequest, type RefundStatus } from "../../../actors/store/refunds.ts";
import { railOfOrder, x402RefundRequestRefused } from "../../../actors/store/refund-flow.ts";
import { orderTotalMinor } from "../../../actors/store/order-rows.ts";
import type { OrderStatus } from "../../../actors/store/order-machine.ts";
import { toMajor } from "../../../search/money.ts";
import { findStore, shippingZonesOf } from "../../../actors/store/reads.ts";
import { unstorableField } from "../../../actors/store/ingest.ts";
import { isIsoCountryCode } from "../../../actors/store/schemas.ts";
import { agentCanceledUnpaid, cancelPendingAsAgent, notCancellable, orderView } from "../../rest/orders.ts";
import { estimateUnitPriceMinor, shippingEstimate } from "../../rest/products.ts";
import { AnsweredWithoutAsking, defineTool, type ConfirmRequest, type ToolContext } from "../registry.ts";
import { storeProduct } from "./discovery.ts";
import { AnyObject, Open, Strict, Uuid } from "./schemas.ts";
import { forHuman } from "../human-text.ts";
import { isUuid, UUID_V4_PATTERN } from "../../../infra/uuid.ts";
import { isMetadataDocumentId } from "../../oauth/clients.ts";

const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/**
 * The owner id carts and orders are keyed by: the agent key id, or a stable UUID for an OAuth (client, user). Its
 * variant digit is always 8, unlike infra/uuid.ts uuidV4FromHex: owner ids are stored, so the shape stays its own.
 */
export function ownerId(ctx: ToolContext): string {
  const c = ctx.caller;
  if (!c) throw fail("unauthorized", "This tool needs a credential.");
  if (c.kind === "agent-key") return c.keyId;
  const h = createHash("sha256").update(c.keyId).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * When an OAuth principal came to be, for the risk gate (NEW_KEY_HIGH_AMOUNT dates the caller; audit X-2, review
 * R2-1), in ms of the service clock:
 *  - a registered client: the later of its registration (a live row: not deleted) and the user's first authorization
 *    code for it still stored (a code-flow grant's first issue; a client_credentials token acts for the client's
 *    owner and has no code, so the registration dates it);
 *  - a Client ID Metadata Document client (client_id = its URL; no oauth_clients row, always code flow): the user's
 *    first authorization code for that client_id still stored. Codes are kept while their grant lives, so this is the
 *    first consent of the oldest live grant;
 *  - nothing to date it by (a registered client deleted while its token lives, no code stored): now. Fail closed: a
 *    caller nobody can date is a new one.
 * An agent key's creation is read by the cart's risk read from agent_keys; this is undefined for it.
 */
export async function identityCreatedAt(ctx: ToolContext): Promise<{ identityCreatedAt?: number }> {
  const c = ctx.caller;
  if (!c || c.kind !== "oauth") return {};
  const now = ctx.svc.clock.now();
  const clientId = c.clientId ?? "";
  const registered = !isMetadataDocumentId(clientId);
  // user_id is a uuid column: compared as one (oauth_codes_client_user_idx), never cast to text
  const userId = isUuid(c.userId) ? c.userId : null;
  const [row] = await ctx.svc.sql<{ registered_at: number | null; first_code_at: number | null }[]>`
    SELECT ${
      registered
        ? ctx.svc.sql`(SELECT extract(epoch FROM created_at) * 1000 FROM oauth_clients WHERE client_id = ${clientId} AND deleted_at IS NULL)`
        : ctx.svc.sql`NULL`
    }::float8 AS registered_at,
           ${
             userId
               ? ctx.svc.sql`(SELECT extract(epoch FROM min(created_at)) * 1000 FROM oauth_codes WHERE client_id = ${clientId} AND user_id = ${userId}::uuid)`
               : ctx.svc.sql`NULL`
           }::float8 AS first_code_at`;
  const registeredAt = row?.registered_at == null ? null : Number(row.registered_at);
  const firstCodeAt = row?.first_code_at == null ? null : Number(row.first_code_at);
  let at: number | null;
  if (registered) at = registeredAt === null ? null : Math.max(registeredAt, firstCodeAt ?? registeredAt);
  else at = firstCodeAt;
  return { identityCreatedAt: Math.floor(at ?? now) };
}

/** Accepts the spec's `cart_<id>` form as well as the bare uuid. */
export function cartIdArg(raw: string): string {
  const id = raw.replace(/^cart_/, "").toLowerCase();
  if (!isUuid(id)) throw fail("INVALID_ARGUMENT", "cart_id must be a cart id (uuid or cart_<uuid>).", { field: "cart_id" });
  return id;
}

/** A session id that names no session, or one whose cart is missing or another caller's (never its cart id). */
export const noSuchSession = (sessionId: string) =>
  fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session; start from create_cart and preview_checkout.", { checkout_session_id: sessionId });

export function sessionCart(sessionId: string): string {
  const cartId = cartIdOfSession(sessionId);
  if (!cartId) throw noSuchSession(sessionId);
  return cartId;
}

/**
 * A cart none of whose merchants is this endpoint's store is not found on this endpoint (audit V, "also seen"): paid
 * there, the human's question would name this store for another store's purchase, and this store's tool set,
 * mandate rule and customer identity would apply to it. A cart's merchants never change (an edit makes a new cart),
 * so a check before a write still holds when the write runs. `notFound`: the tool's own not-found (a session's).
 */
export function ofThisStore<C extends { cart_id: string; merchants: readonly string[] }>(ctx: ToolContext, cart: C, notFound?: () => ActorError): C {
  if (cart.merchants.includes(ctx.store.slug)) return cart;
  throw notFound ? notFound() : fail("CART_NOT_FOUND", "No cart with that id.", { cart_id: cart.cart_id });
}

/**
 * ofThisStore before a message that writes (preview, shipping, a payment): the cart read first. A read that fails
 * is left to the message itself, which refuses the same cart with its own answer (an expired one, another caller's).
 */
export async function assertCartOfThisStore(ctx: ToolContext, cartId: string, notFound?: () => ActorError): Promise<void> {
  const cart = await ctx.svc.actors.ask(cartActor, cartId, "get", { keyId: ownerId(ctx) }).catch(() => null);
  if (cart) ofThisStore(ctx, cart, notFound);
}

/** The bounds of a `cart_id` argument (uuid or cart_<uuid>; cartIdArg checks the form) and of a `checkout_session_id`. */
const CART_ID = { minLength: 1, maxLength: 60 } as const;
const SESSION_ID = { minLength: 1, maxLength: 100 } as const;

/** The store's name as a summary shows it (human-text.ts): the merchant chose it. */
const storeName = (ctx: ToolContext) => forHuman(ctx.store.name);

export const money = (minor: number, currency: string) => `${toMajor(minor, currency).toFixed(Math.max(0, String(toMajor(1, currency)).split(".")[1]?.length ?? 2))} ${currency}`;

const ItemArg = T.Object(
  {
    product_id: Uuid,
    quantity: T.Integer({ minimum: 1, maximum: 10_000 }),
    variant_id: T.Optional(Uuid),
  },
  Strict,
);

async function cartItemsOfThisStore(ctx: ToolContext, items: readonly { product_id: string; quantity: number; variant_id?: string }[]) {
  const out = [];
  let totalMinor = 0;
  let currency = "";
  const lines: string[] = [];
  const priced: PricedItem[] = [];
  const stock = new Map<string, { inStock: boolean; stockQuantity: number | null }>();
  const products = [];
  for (const [n, i] of items.entries()) {
    const { product } = await storeProduct(ctx, i.product_id);
    // The cart actor's refusal of a variant product's line without variant_id, before the human is asked.
    const noVariant = variantMissing(n, product, i.variant_id);
    if (noVariant) throw noVariant;
    const variantId = i.variant_id?.toLowerCase();
    if (variantId && !product.variants.some((x) => x.id.toLowerCase() === variantId)) {
      throw fail("PRODUCT_NOT_FOUND", "No such variant of this product.", { product_id: product.id, variant_id: variantId, field: `items[${n}].variant_id` });
    }
    products.push({ product, variantId, quantity: i.quantity, at: n });
  }
  // The key's accepted offers, read as the cart reads them (review R5 LOW-2: the human was asked about the list price
  // where the cart charges the negotiated one).
  const offers = await readCatalog(ctx.svc.sql, [...new Set(products.map((p) => p.product.id))], ownerId(ctx));
  for (const { product, variantId, quantity, at } of products) {
    // A variant line is asked about at the variant's price, title and stock (audit R3 MED-4), as the cart prices it.
    const line = pricedLine(product, variantId, offers.get(product.id)?.negotiated ?? null, ctx.now.getTime());
    totalMinor += line.unitMinor * quantity;
    currency ||= product.currency;
    const note = negotiatedNote(line);
    lines.push(`${quantity} × ${forHuman(line.title)} (${money(line.unitMinor, product.currency)}${note ? `, ${note}` : ""})`);
    priced.push(line);
    out.push({ productId: product.id, quantity, at, ...(variantId ? { variantId } : {}) });
    const v = line.v;
    stock.set(`${product.id}:${variantId ?? ""}`, v ? { inStock: product.inStock && v.inStock, stockQuantity: lesser(product.stockQuantity, v.stockQuantity) } : product);
  }
  assertStockCovers(out, stock);
  return { items: out.map(({ at: _, ...item }) => item), totalMinor, currency, lines, priced };
}

/** What the human reads after a negotiated line's price: the list price it replaces; "" for a list-priced line. */
function negotiatedNote(line: PricedItem): string {
  return line.priceSource === "negotiated" ? `negotiated; list ${money(line.listMinor, line.currency)}` : "";
}

/**
 * The cart actor's stock refusal (create: INVALID_ARGUMENT out_of_stock / stock_insufficient on items[i].quantity,
 * lines merged per product and variant as it merges them), made from the product rows before the human is asked. Only
 * what is certain: the actor's availability (stock − held) is at most the stock read here, so anything refused here it
 * refuses too; a shortage that only holds reveal is still the actor's answer.
 */
function assertStockCovers(
  items: readonly { productId: string; variantId?: string; quantity: number; at: number }[],
  lines: ReadonlyMap<string, { inStock: boolean; stockQuantity: number | null }>,
): void {
  const merged = new Map<string, { productId: string; quantity: number; at: number; variantId?: string }>();
  for (const it of items) {
    const k = `${it.productId}:${it.variantId ?? ""}`;
    const prev = merged.get(k);
    merged.set(k, { productId: it.productId, quantity: (prev?.quantity ?? 0) + it.quantity, at: prev?.at ?? it.at, variantId: it.variantId });
  }
  // The merged line's quantity bound, as the cart actor refuses it (audit R5 MED-2).
  for (const m of merged.values()) {
    const tooLarge = mergedLineTooLarge(m.at, m.productId, m.variantId ?? null, m.quantity);
    if (tooLarge) throw tooLarge;
  }
  for (const [k, m] of merged) {
    const p = lines.get(k);
    if (!p) continue;
    const available = !p.inStock ? 0 : p.stockQuantity;
    if (available === null || available >= m.quantity) continue;
    // The request index of the line's first item, as the cart actor names it.
    throw stockShortfall(m.at, m.productId, m.quantity, available);
  }
}

type StoreProduct = Awaited<ReturnType<typeof storeProduct>>["product"];

interface PricedItem {
  productId: string;
  variantId: string | undefined;
  v: StoreProduct["variants"][number] | undefined;
  title: string;
  currency: string;
  /** The line's list price: the variant's own price when it has one, else the product's. */
  listMinor: number;
  /** What the cart charges per unit (`unitPriceOf`): the negotiated price when the key's offer prices the line. */
  unitMinor: number;
  priceSource: "list" | "negotiated";
}

/**
 * A line's variant (`variantId` lower-case; undefined when it names none or no such variant), unit price and title, as
 * the cart actor prices and names it: its list price and whether the key's accepted offer prices it by the cart's own
 * rule (actors/cart/offer-rule.ts `linePricing`), valid and never above the list price as `unitPriceOf` decides.
 */
function pricedLine(product: StoreProduct, variantId: string | undefined, offer: NegotiatedPrice | null, now: number): PricedItem {
  const v = variantId ? product.variants.find((x) => x.id.toLowerCase() === variantId) : undefined;
  const { listPriceMinor: listMinor, negotiated } = linePricing(product.priceMinor, variantId, v, offer);
  const { unitPriceMinor, priceSource } = unitPriceOf(
    { storeId: product.storeSlug, productId: product.id, variantId, quantity: 1, listPriceMinor: listMinor, currency: product.currency, negotiated },
    now,
  );
  return {
    productId: product.id,
    variantId,
    v,
    title: v?.title ? `${product.title} (${v.title})` : product.title,
    currency: product.currency,
    listMinor,
    unitMinor: unitPriceMinor,
    priceSource,
  };
}

/** The smaller of two stock counts, null being unlimited. */
const lesser = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

const CartOut = T.Object(
  { cart_id: T.String(), status: T.String(), currency: T.String(), items: T.Array(AnyObject), totals: AnyObject, replaced_by_cart_id: T.Optional(T.String()) },
  Open,
);

export const createCart = defineTool({
  name: "create_cart",
  title: "Create cart",
  description:
    "Create a cart in this store from items [{product_id, quantity, variant_id?}] (ids from search_products / " +
    "get_product_details). Validates stock and prices; returns cart_id and totals. Asks the human to approve first. " +
    "Next: preview_checkout with the cart_id.",
  group: "cart",
  input: T.Object({ items: T.Array(ItemArg, { minItems: 1, maxItems: 100 }) }, Strict),
  output: CartOut,
  annotations: WRITE,
  auth: "key",
  scopes: ["cart"],
  sandboxRefused: true,
  confirmation: true,
  rateBucket: "create_cart",
  errors: {
    PRODUCT_NOT_FOUND: "an item that is not a product of this store",
    CURRENCY_MISMATCH: "items priced in two currencies",
    MISSING_REQUIRED_ARGUMENT:
      "an item of a product with variants without variant_id (details.field = items[i].variant_id, details.variants); answered before the human is asked",
    INVALID_ARGUMENT:
      "an item's quantity, or the quantity of repeated items of one product/variant together, above 10000 or above the stock available (details.field = items[i].quantity); answered before the human is asked",
    HUMAN_CONFIRMATION_DECLINED: "the human declines the cart",
  },
  async summarize(a, ctx) {
    const c = await cartItemsOfThisStore(ctx, a.items);
    return { summary: `Create a cart at ${storeName(ctx)}: ${c.lines.join(", ")} — about ${money(c.totalMinor, c.currency)} before shipping and tax.`, facts: { amount: toMajor(c.totalMinor, c.currency), currency: c.currency } };
  },
  async handler(a, ctx) {
    const c = await cartItemsOfThisStore(ctx, a.items);
    return ctx.svc.actors.ask(cartActor, crypto.randomUUID(), "create", { keyId: ownerId(ctx), items: c.items });
  },
});

export const getCart = defineTool({
  name: "get_cart",
  title: "Get cart",
  description: "Read one of your carts: items, coupon, totals, status, revision and the live checkout_session_id if any.",
  group: "cart",
  input: T.Object({ cart_id: T.String({ ...CART_ID, description: "cart id (uuid or cart_<uuid>)" }) }, Strict),
  output: CartOut,
  annotations: READ,
  auth: "key",
  scopes: ["cart"],
  sandboxRefused: true,
  confirmation: false,
  errors: { CART_NOT_FOUND: "unknown, expired or another caller's cart, or a cart none of whose items is this store's" },
  async handler(a, ctx) {
    return ofThisStore(ctx, await ctx.svc.actors.ask(cartActor, cartIdArg(a.cart_id), "get", { keyId: ownerId(ctx) }));
  },
});

type EditItem = { product_id: string; quantity: number; variant_id?: string };

/**
 * The edit planned against the cart as it stands: a cart that is not OPEN (replaced by an earlier edit, in checkout,
 * partly paid, completed, expired) or an edit that cannot apply is refused here, before the human is asked and again
 * after. The cart's own guard refuses (`getForEdit`), not a copy of it over the cart's view: the view does not show a
 * session that has ended, so a copy could not tell a partly paid cart (review R5-5) from one frozen by a live
 * session, and the edit tools answer what REST edits answer.
 */
async function planEdit(ctx: ToolContext, cartId: string, edit: (items: EditItem[]) => EditItem[]) {
  await assertCartOfThisStore(ctx, cartId);
  const cur = await ctx.svc.actors.ask(cartActor, cartId, "getForEdit", { keyId: ownerId(ctx) });
  const next = edit(cur.items.map((i) => ({ product_id: i.product_id, quantity: i.quantity, ...(i.variant_id ? { variant_id: i.variant_id } : {}) })));
  if (next.length === 0) throw fail("INVALID_ARGUMENT", "A cart needs at least one item; abandon the cart instead.", { field: "product_id" });
  return { cur, next };
}

/** The human approving an edit hears that the coupon goes along, and that it is re-checked against the new items. */
const couponNote = (cart: CartView) => (cart.coupon ? ` Coupon ${forHuman(cart.coupon.code)} stays on the cart if it still applies to the new items.` : "");

/** What the buyer chose on the cart an edit replaces, for the new cart to take over (the cart actor re-checks it). */
function carryOverOf(cart: CartView): CarryOverInput {
  return {
    ...(cart.coupon ? { couponCode: cart.coupon.code } : {}),
    ...(cart.shipping ? { shipping: { countryCode: cart.shipping.country_code, postalCode: cart.shipping.postal_code, choices: cart.shipping.selected_options } } : {}),
  };
}

/**
 * Carts are immutable after creation except for coupons: an edit is a new cart with the edited items, and the old
 * cart is then REPLACED (it refuses writes, previews and payments naming the new id), so one intent never leaves two
 * payable carts. The new cart keeps the old one's coupon (if it applies to the new items; else `coupon_dropped`
 * says why) and shipping destination and picks: the old cart can no longer take them, so dropping them would cost
 * the buyer another approval. Of two edits racing from one cart, the second's replace is refused (stale revision)
 * and its new cart is discarded.
 */
async function rebuildCart(ctx: ToolContext, cartId: string, edit: (items: EditItem[]) => EditItem[]) {
  const { cur, next } = await planEdit(ctx, cartId, edit);
  const c = await cartItemsOfThisStore(ctx, next);
  const keyId = ownerId(ctx);
  const created = await ctx.svc.actors.ask(cartActor, crypto.randomUUID(), "create", { keyId, items: c.items, carryOver: carryOverOf(cur) });
  try {
    await ctx.svc.actors.ask(cartActor, cartId, "replace", { keyId, replacedBy: created.cart_id, expectedRevision: cur.revision });
  } catch (err) {
    await ctx.svc.actors.ask(cartActor, created.cart_id, "discard", { keyId }).catch(() => undefined);
    throw err;
  }
  return { ...created, replaces_cart_id: cartId };
}

/** update_cart_item's edit: set the quantity of the product (and variant), adding it when absent. */
function setQuantity(a: { product_id: string; quantity: number; variant_id?: string }) {
  const id = a.product_id.toLowerCase();
  return (items: EditItem[]) => {
    const hit = items.find((i) => i.product_id === id && (i.variant_id ?? null) === (a.variant_id?.toLowerCase() ?? null));
    if (hit) hit.quantity = a.quantity;
    else items.push({ product_id: id, quantity: a.quantity, ...(a.variant_id ? { variant_id: a.variant_id } : {}) });
    return items;
  };
}

/** remove_cart_item's edit: drop the product's lines; a product not in the cart is PRODUCT_NOT_FOUND. */
function removeProduct(productId: string) {
  const id = productId.toLowerCase();
  return (items: EditItem[]) => {
    if (!items.some((i) => i.product_id === id)) throw fail("PRODUCT_NOT_FOUND", "That product is not in the cart.", { product_id: id });
    return items.filter((i) => i.product_id !== id);
  };
}

export const updateCartItem = defineTool({
  name: "update_cart_item",
  title: "Update cart item quantity",
  description:
    "Change the quantity of a product in a cart (adds the product when absent). Carts are versioned: the answer is a " +
    "NEW cart_id (replaces_cart_id names the old one); use the new id from now on: the old cart becomes REPLACED " +
    "and refuses edits, previews and payment (CART_NOT_MUTABLE, details.replaced_by_cart_id). The new cart keeps the " +
    "coupon while it still applies to the new items (else coupon_dropped says why) and the shipping destination and " +
    "picks. Asks the human to approve.",
  group: "cart",
  input: T.Object({ cart_id: T.String(CART_ID), product_id: Uuid, quantity: T.Integer({ minimum: 1, maximum: 10_000 }), variant_id: T.Optional(Uuid) }, Strict),
  output: CartOut,
  annotations: WRITE,
  auth: "key",
  scopes: ["cart"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    MISSING_REQUIRED_ARGUMENT:
      "product_id of a product with variants without variant_id (details.variants); answered before the human is asked",
    CART_NOT_FOUND: "unknown or another caller's cart, or a cart none of whose items is this store's (served on its own store's endpoint); answered before the human is asked",
    CART_NOT_MUTABLE:
      "the cart is in checkout (details.checkout_session_id), partly paid by a checkout that ended (details.reason = partly_paid, details.paid_merchant_slugs, details.required_step = preview_checkout, details.expires_at), paid or expired, or was replaced by an earlier edit (details.reason = replaced, details.replaced_by_cart_id); the cart's own refusal, as on REST; answered before the human is asked",
  },
  async summarize(a, ctx) {
    const { cur, next } = await planEdit(ctx, cartIdArg(a.cart_id), setQuantity(a));
    // The new cart's products, stock and prices, as create will check and price them.
    const c = await cartItemsOfThisStore(ctx, next);
    // The edited line at the variant's title and price (create_cart's question) and the key's negotiated price.
    const id = a.product_id.toLowerCase();
    const line = c.priced.find((l) => l.productId.toLowerCase() === id && l.variantId === a.variant_id?.toLowerCase())!;
    const note = negotiatedNote(line);
    return {
      summary: `Set ${forHuman(line.title)} to ${a.quantity} × ${money(line.unitMinor, line.currency)}${note ? ` (${note})` : ""} in your cart at ${storeName(ctx)}.${couponNote(cur)}`,
      facts: { amount: toMajor(line.unitMinor * a.quantity, line.currency), currency: line.currency },
    };
  },
  async handler(a, ctx) {
    return rebuildCart(ctx, cartIdArg(a.cart_id), setQuantity(a));
  },
});

export const removeCartItem = defineTool({
  name: "remove_cart_item",
  title: "Remove cart item",
  description:
    "Remove a product from a cart. Like update_cart_item, the answer is a NEW cart_id that keeps the coupon (while it " +
    "still applies; else coupon_dropped says why) and the shipping choice. Asks the human to approve.",
  group: "cart",
  input: T.Object({ cart_id: T.String(CART_ID), product_id: Uuid }, Strict),
  output: CartOut,
  annotations: { ...WRITE, destructiveHint: true },
  auth: "key",
  scopes: ["cart"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    CART_NOT_FOUND: "as update_cart_item",
    CART_NOT_MUTABLE: "as update_cart_item (details.replaced_by_cart_id for a replaced cart); answered before the human is asked",
    PRODUCT_NOT_FOUND: "a product that is not in the cart; answered before the human is asked",
    INVALID_ARGUMENT: "removing the cart's last product (details.field = product_id); answered before the human is asked",
  },
  async summarize(a, ctx) {
    const { cur } = await planEdit(ctx, cartIdArg(a.cart_id), removeProduct(a.product_id));
    const line = cur.items.find((i) => i.product_id === a.product_id.toLowerCase());
    return { summary: `Remove ${line ? forHuman(line.title) : `product ${a.product_id}`} from your cart at ${storeName(ctx)}.${couponNote(cur)}` };
  },
  async handler(a, ctx) {
    return rebuildCart(ctx, cartIdArg(a.cart_id), removeProduct(a.product_id));
  },
});

const couponBody = (a: { code: string; expected_revision?: number }, ctx: ToolContext) => ({
  keyId: ownerId(ctx),
  code: a.code,
  ...(a.expected_revision === undefined ? {} : { expectedRevision: a.expected_revision }),
});

export const applyCoupon = defineTool({
  name: "apply_coupon",
  title: "Apply coupon",
  description:
    "Apply a coupon code to an open cart. The answer says whether it applied (and why not: invalid, expired, " +
    "below_minimum, exhausted, currency_mismatch) with the new totals. Pass expected_revision (the revision you read) " +
    "to refuse a cart changed since (CART_NOT_MUTABLE). Asks the human to approve a coupon that applies; one that " +
    "does not is answered applied:false without asking.",
  group: "cart",
  input: T.Object({ cart_id: T.String(CART_ID), code: T.String({ minLength: 1, maxLength: 64, pattern: NO_NUL_PATTERN }), expected_revision: T.Optional(T.Integer({ minimum: 1 })) }, Strict),
  output: T.Object({}, Open),
  annotations: WRITE,
  auth: "key",
  scopes: ["cart"],
  feature: "apply_coupon",
  sandboxRefused: true,
  confirmation: true,
  errors: {
    CART_NOT_FOUND: "unknown or another caller's cart, or a cart none of whose items is this store's (served on its own store's endpoint); answered before the human is asked",
    CART_NOT_MUTABLE:
      "expected_revision older than the cart's revision, the cart frozen by a checkout session (details.checkout_session_id: cancel_checkout unfreezes it), completed, or replaced (details.replaced_by_cart_id); answered before the human is asked",
  },
  async summarize(a, ctx) {
    // The cart actor's own answer, without applying: a cart that would refuse the coupon (replaced, in checkout,
    // completed, a stale expected_revision) refuses now, and a code that will not apply (unknown, expired, below its
    // minimum, used up) is answered applied:false now; the human is asked only about a coupon that applies.
    const cartId = cartIdArg(a.cart_id);
    await assertCartOfThisStore(ctx, cartId);
    const check = await ctx.svc.actors.ask(cartActor, cartId, "checkCoupon", couponBody(a, ctx));
    if (!check.applied) throw new AnsweredWithoutAsking({ ...check });
    const off = money(check.discount_minor, check.cart.currency);
    return {
      summary: `Apply coupon ${forHuman(check.code)} to your cart at ${storeName(ctx)}: ${off} off, new total ${money(check.cart.totals.total_minor, check.cart.currency)}.`,
      facts: { discount: toMajor(check.discount_minor, check.cart.currency), currency: check.cart.currency },
    };
  },
  async handler(a, ctx) {
    return ctx.svc.actors.ask(cartActor, cartIdArg(a.cart_id), "applyCoupon", couponBody(a, ctx));
  },
});

const PreviewOut = T.Object({ checkout_session_id: T.String(), state_hash: T.String(), currency: T.String(), totals: AnyObject, warnings: T.Array(AnyObject) }, Open);

export const previewCheckout = defineTool({
  name: "preview_checkout",
  title: "Preview checkout",
  description:
    "Price a cart for payment: totals with shipping and tax, stock warnings, and a checkout_session_id plus state_hash " +
    "that complete_checkout needs. Commits nothing and asks nobody; show the totals to the human before completing. " +
    "PRECONDITION_NOT_MET names the step to call first (get_shipping_rates with the cart when a merchant offers " +
    "several shipping methods). warnings lists what a payment will refuse anyway (NOT_ELIGIBLE: a merchant below the " +
    "agent-checkout trust threshold): tell the human instead of asking them to pay.",
  group: "checkout",
  input: T.Object({ cart_id: T.String({ ...CART_ID, description: "from create_cart" }), expected_revision: T.Optional(T.Integer({ minimum: 1 })) }, Strict),
  output: PreviewOut,
  // Spec: preview never needs confirmation; it opens a session but moves no money and reserves nothing.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: false,
  errors: {
    CART_NOT_FOUND: "unknown or another caller's cart, or a cart none of whose items is this store's (previewed and paid on that store's endpoint)",
    PRECONDITION_NOT_MET:
      "a merchant of the cart offers more than one shipping method (summit-sports-co: Standard and Express) and the cart has no destination or picked option yet (details.required_step = get_shipping_rates, details.reason, details.options)",
    NOT_ELIGIBLE: "a merchant of the cart does not ship to the destination recorded with get_shipping_rates (details.reason = destination_not_served)",
    CART_NOT_MUTABLE: "stale expected_revision, or a cart replaced by update_cart_item/remove_cart_item (details.reason = replaced, details.replaced_by_cart_id)",
    CHECKOUT_STATUS_INVALID: "re-preview while the session awaits the buyer's approval (PENDING_EXTERNAL_CONFIRMATION after tok_needs_approval), or while a payment runs or awaits settlement (details.status)",
  },
  async handler(a, ctx) {
    const cartId = cartIdArg(a.cart_id);
    await assertCartOfThisStore(ctx, cartId);
    return ctx.svc.actors.ask(cartActor, cartId, "preview", {
      keyId: ownerId(ctx),
      ...(a.expected_revision ? { expectedRevision: a.expected_revision } : {}),
    });
  },
});

export const CompleteArgs = T.Object(
  {
    checkout_session_id: T.String({ ...SESSION_ID, description: "From preview_checkout." }),
    idempotency_key: T.String({ pattern: UUID_V4_PATTERN, description: "UUID v4, one key per checkout session; repeat it on every retry, including with another payment method (after PAYMENT_DECLINED, PAYMENT_FAILED_ROLLED_BACK or PAYMENT_NOT_APPROVED). Another key on the same session is IDEMPOTENCY_KEY_CONFLICT." }),
    payment_method: T.String({ minLength: 1, maxLength: 100, description: "MOCK on the demo store; a card payment token elsewhere (see get_payment_methods)." }),
    reconfirmed_state_hash: T.Optional(T.String({ pattern: "^[0-9a-f]{64}$", description: "Only after STATE_RECONFIRMATION_REQUIRED: its details.reconfirm_state_hash." })),
    payment_mandate: T.Optional(T.String({ minLength: 10, maxLength: 4000, description: "A payment mandate from issue_payment_mandate (required on the dedicated checkout endpoint)." })),
  },
  Strict,
);

/** One store's leg in a PENDING_EXTERNAL_CONFIRMATION answer: REST's 202 `details.stores` item, the same shape. */
const StoreLegOut = T.Object(
  {
    store_id: T.String(),
    status: T.Union(["unpaid", "processing", "needs_buyer_approval", "unknown", "captured"].map((x) => T.Literal(x))),
    outcome: T.Union([T.String(), T.Null()]),
  },
  Open,
);

const CompleteOut = T.Object(
  {
    status: T.Union([T.Literal("COMPLETED"), T.Literal("PENDING_EXTERNAL_CONFIRMATION")]),
    checkout_session_id: T.String(),
    order_id: T.Optional(T.String()),
    approval_url: T.Optional(T.String()),
    completed_store_ids: T.Optional(T.Array(T.String())),
    stores: T.Optional(T.Array(StoreLegOut)),
  },
  Open,
);

/**
 * The `next` of a pending answer. A store whose leg rolled back in the same attempt (possible when the session began
 * on REST with a method per store) is named with the way on, as REST's 202 text does: MCP's one payment_method pays
 * it on the resume, after the approved payment is captured (actors/cart/index.ts, a new attempt).
 */
function pendingNext(stores: readonly LegOutcomeView[]): string {
  const base = "After the buyer approves, call complete_checkout again with the SAME checkout_session_id and idempotency_key.";
  const paid = stores.filter((x) => x.status === "captured").map((x) => x.store_id);
  const rolled = stores.filter((x) => x.status === "unpaid");
  const paidText = paid.length ? ` Already paid: ${paid.join(", ")} (stores[].status captured); the call charges the other stores only.` : "";
  if (rolled.length === 0) return base + paidText;
  const one = rolled.length === 1;
  const what = rolled.map((x) => `${x.store_id} (${x.outcome ?? "not charged"})`).join(", ");
  return `${base}${paidText} Not charged in this attempt: ${what}; nothing was captured there and ${one ? "its" : "their"} stock hold was released. ` +
    `The payment_method of that call pays ${one ? "it" : "them"} once the approved payment is captured (a new attempt).`;
}

const isX402 = (paymentMethod: string) => paymentMethod.toLowerCase() === "x402";
const x402OverMcp = () => fail("PAYMENT_METHOD_NOT_CONFIGURED", "x402 settles through REST POST /api/v1/agent/checkout (payment_rail x402), not over MCP.", { rail: "x402" });

/** The cart actor's arguments for a payment method: `x402` selects the stablecoin rail, anything else is a card-rail method. */
function railOf(paymentMethod: string) {
  return isX402(paymentMethod) ? { rail: "x402" as const } : { paymentMethod, rail: "card" as const };
}

/**
 * What complete would refuse before anything moves, asked of the cart (its `precheck`: session status, key binding,
 * expiry, shipping, merchant state, eligibility, payment method), with the cart's totals for the human's question.
 * A session id whose cart is missing or another caller's is no such session (never its cart id).
 */
export async function precheckSession(
  ctx: ToolContext,
  a: { checkout_session_id: string; idempotency_key?: string; payment_method?: string; reconfirmed_state_hash?: string },
  intent: "complete" | "cancel" = "complete",
) {
  const cartId = sessionCart(a.checkout_session_id);
  await assertCartOfThisStore(ctx, cartId, () => noSuchSession(a.checkout_session_id));
  const { cart, session } = await ctx.svc.actors
    .ask(cartActor, cartId, "precheck", {
      keyId: ownerId(ctx),
      sessionId: a.checkout_session_id,
      intent,
      ...(a.idempotency_key ? { idempotencyKey: a.idempotency_key.toLowerCase() } : {}),
      ...(a.payment_method ? railOf(a.payment_method) : {}),
      ...(a.reconfirmed_state_hash ? { reconfirmedStateHash: a.reconfirmed_state_hash } : {}),
    })
    .catch((err: unknown): never => {
      if (err instanceof ActorError && err.code === "CART_NOT_FOUND") throw noSuchSession(a.checkout_session_id);
      throw err;
    });
  return { cartId, cart, session };
}

/** Checkout statuses no complete call can leave. */
const FINISHED: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "EXPIRED", "CANCELED"]);

/**
 * A checkout that sends X-Customer-Identity buys for that customer (main and checkout endpoints). A token that fails
 * verification is refused with its own code rather than ignored: paying anyway would leave an order the customer
 * never sees, and neither the agent nor the human would know.
 */
function refuseRejectedCustomer(ctx: ToolContext): void {
  const e = ctx.customerError;
  if (e) throw fail(e.code, `${e.message} (X-Customer-Identity: fix or drop the header; nothing was paid.)`, e.details);
}

/**
 * The payment's question to the human: the total it charges and every store it charges with that store's amount (the
 * precheck's `session.charges`, the approved state's legs not yet paid). A cart shared by several stores is paid in one
 * call on any of their endpoints, so naming only this endpoint's store with the whole total told the human one store
 * took money several do; a partly paid session charges only the stores left, so the total is theirs, not the cart's.
 * Other stores' names are the merchants' own text (human-text.ts); a store that cannot be read is shown by its slug.
 */
async function paymentQuestion(ctx: ToolContext, cart: CartView, session: PrecheckView["session"], paymentMethod: string): Promise<ConfirmRequest> {
  const charges = session.charges.length > 0 ? session.charges : [{ merchant_slug: ctx.store.slug, amount_minor: cart.totals.total_minor }];
  const totalMinor = charges.reduce((sum, c) => sum + c.amount_minor, 0);
  const charged = new Set(charges.map((c) => c.merchant_slug));
  const items = cart.items.filter((i) => charged.has(i.merchant_slug)).length || cart.items.length;
  const method = forHuman(paymentMethod);
  const amount = toMajor(totalMinor, cart.currency);
  if (charges.length === 1 && charges[0]!.merchant_slug === ctx.store.slug) {
    return {
      summary: `Pay ${money(totalMinor, cart.currency)} to ${storeName(ctx)} for ${items} item(s) with ${method}.`,
      facts: { amount, currency: cart.currency, merchant: storeName(ctx), payment_method: method },
    };
  }
  const named = await Promise.all(
    charges.map(async (c) => {
      const name = c.merchant_slug === ctx.store.slug ? ctx.store.name : ((await findStore(ctx.svc.sql, c.merchant_slug).catch(() => null))?.name ?? c.merchant_slug);
      return `${money(c.amount_minor, cart.currency)} to ${forHuman(name)}`;
    }),
  );
  const stores = charges.length === 1 ? "1 store" : `${charges.length} stores`;
  return {
    summary: `Pay ${money(totalMinor, cart.currency)} to ${stores} for ${items} item(s) with ${method}: ${named.join("; ")}.`,
    facts: { amount, currency: cart.currency, merchants: named.join("; "), payment_method: method },
  };
}

/**
 * The state hash each complete_checkout call's question was built from (its precheck's), from `summarize` to
 * `handler`: the dispatcher runs both with the same call context, one call at a time per context.
 */
const approvedStates = new WeakMap<ToolContext, string>();

/**
 * complete (or resume) a previewed session; shared by complete_checkout and ucp_complete_checkout. `approvedStateHash`:
 * the state the human approved; the paying turn refuses a session that moved since (audit V2: re-previewed with a
 * dearer shipping option while the human answered, the new total was charged). Absent only where no payment can
 * start (a finished session's answer).
 */
export async function completeSession(
  ctx: ToolContext,
  a: { checkout_session_id: string; idempotency_key: string; payment_method: string; reconfirmed_state_hash?: string; payment_mandate?: string },
  approvedStateHash?: string,
) {
  refuseRejectedCustomer(ctx);
  const cartId = sessionCart(a.checkout_session_id);
  const { verifyMandateFor } = await import("./integrations.ts");
  const limits = await verifyMandateFor(ctx, cartId, a.payment_mandate, undefined, () => noSuchSession(a.checkout_session_id));
  const identity = await identityCreatedAt(ctx);
  const reply: CompleteReply = await ctx.svc.actors.ask(cartActor, cartId, "complete", {
    keyId: ownerId(ctx),
    // an OAuth principal has no agent_keys row: the risk gate dates it by what the gateway verified (audit X-2)
    ...identity,
    // the mandate binds what the paying turn charges, not the cart read above (review R4-5)
    ...(limits ? { limits } : {}),
    sessionId: a.checkout_session_id,
    idempotencyKey: a.idempotency_key.toLowerCase(),
    // `x402` selects the stablecoin rail (its settlement goes through REST); anything else is a card-rail method
    ...railOf(a.payment_method),
    ...(a.reconfirmed_state_hash ? { reconfirmedStateHash: a.reconfirmed_state_hash } : {}),
    ...(approvedStateHash ? { approvedStateHash } : {}),
    // bought for the merchant's verified customer: the order is theirs to see on the customer endpoint (audit B F0)
    ...(ctx.customer ? { buyer: { storeSlug: ctx.store.slug, buyerRef: ctx.customer.buyerRef } } : {}),
  });
  if (reply.status === "COMPLETED") return reply;
  if (reply.status === "PENDING_EXTERNAL_CONFIRMATION") {
    const urls = reply.approval_urls.map((u) => ({ merchant_slug: u.merchant_slug, url: absoluteApprovalUrl(ctx.svc.siteUrl, u.url) }));
    const link = urls[0]?.url;
    const shown = link ? await ctx.openUrl(link, "Approve the payment with your payment provider, then tell the agent to finish the purchase.") : false;
    return {
      status: reply.status,
      checkout_session_id: reply.checkout_session_id,
      cart_id: reply.cart_id,
      ...(link ? { approval_url: link } : {}),
      approval_urls: urls,
      // every store's leg, as REST's 202 details: which are paid, which wait for the buyer, which rolled back
      completed_store_ids: reply.completed_store_ids,
      stores: reply.stores,
      shown_to_buyer: shown,
      next: pendingNext(reply.stores),
      expires_at: reply.expires_at,
    };
  }
  throw x402OverMcp();
}

export const completeCheckout = defineTool({
  name: "complete_checkout",
  title: "Complete checkout",
  description:
    "Pay for a previewed checkout session. Arguments: checkout_session_id (from preview_checkout), idempotency_key (a " +
    "UUID v4: one key per checkout session; repeat it on every retry, including with another payment method after a decline), payment_method (MOCK on the demo store), " +
    "optional reconfirmed_state_hash (only after STATE_RECONFIRMATION_REQUIRED). Never call it without the human's " +
    "approval: the server asks them. Returns status COMPLETED with order_id, or PENDING_EXTERNAL_CONFIRMATION with an " +
    "approval_url for the buyer (then call again with the same session and key) and stores: each store's leg " +
    "(store_id, status captured, needs_buyer_approval or unpaid, the rail's last outcome), completed_store_ids the paid ones.",
  group: "checkout",
  input: CompleteArgs,
  output: CompleteOut,
  annotations: { ...WRITE, idempotentHint: true },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: true,
  rateBucket: "complete_checkout",
  errors: {
    IDEMPOTENCY_KEY_CONFLICT: "a second idempotency_key for a session already bound to another (the session keeps the key of its first complete_checkout for every attempt)",
    CHECKOUT_ALREADY_IN_PROGRESS: "the same idempotency_key after the session completed (details carry the order)",
    CHECKOUT_SESSION_NOT_FOUND:
      "a session id that does not exist, the session of a cart none of whose items is this store's (paid on its own store's endpoint), or a session past its expiry (details.status = EXPIRED, whatever the key, and who was paid when some stores were; the same answer before and after its timer ran): answered before the human is asked; preview the cart again for a new session",
    SESSION_INACTIVE:
      "the session already ended unpaid (failed or canceled; details.status, and who was paid when some stores were); answered before the human is asked: preview the cart again for a new session",
    STATE_RECONFIRMATION_REQUIRED:
      "the price moved within tolerance since preview (send details.reconfirm_state_hash as reconfirmed_state_hash), or the session was previewed again (e.g. another shipping option, over REST or another session) while the human was asked: nothing charged, details.reasons[0].code = state_changed_since_approval with current_total_minor; call again with the same session and key and the human is asked the new total",
    STATE_EXECUTION_BLOCKED:
      "stock gone, price moved beyond the cut since preview, or the coupon's last use taken by another checkout (details.reasons[].code, e.g. out_of_stock, price_beyond_cut, coupon_exhausted with store_id and coupon_code); nothing charged: preview again",
    PAYMENT_DECLINED: "payment_method tok_decline; nothing captured, the session is READY_FOR_PAYMENT again: call again with the SAME idempotency_key and another payment_method (details.idempotency_key_bound)",
    PAYMENT_FAILED_ROLLED_BACK: "payment_method tok_fail; rolled back: call again with the SAME idempotency_key and a fresh token or another payment_method (details.idempotency_key_bound)",
    PAYMENT_NOT_APPROVED: "payment_method tok_not_approved; rolled back: call again with the SAME idempotency_key (details.idempotency_key_bound)",
    PAYMENT_METHOD_NOT_CONFIGURED: "MOCK on a store other than the demo store",
    NATIVE_CHECKOUT_REQUIRED: "a hosted-storefront merchant paid on another rail (details.checkout_url: the merchant's hosted checkout)",
    PAYMENT_AMOUNT_MISMATCH: "payment_method tok_amount_mismatch: the capture differs from the authorised amount (details.capture_reference)",
    PAYMENT_CAPTURED_FINALIZATION_FAILED: "payment_method tok_finalization_fails: captured, the order could not be finalised (details.capture_reference)",
    CHECKOUT_BLOCKED_BY_POLICY: "the store's total is above the merchant's max_order_minor rule (details.rule_code)",
    ENFORCEMENT_UNAVAILABLE: "the merchant's enforcement rules cannot be read (refused fail-closed)",
    AGENT_TOKEN_INVALID: "a payment_mandate that is tampered, expired or issued to another agent (details.reason); answered before the human is asked",
    MANDATE_LIMIT_EXCEEDED:
      "a cart total, currency or merchant outside the payment_mandate (details: mandate and cart total); answered before the human is asked, or by the payment itself when the session was repriced after that check (a re-preview with another shipping option: details.checked_at = payment, nothing charged)",
    MISSING_REQUIRED_ARGUMENT: "no payment_mandate on a real merchant's dedicated checkout endpoint (details.field = payment_mandate); answered before the human is asked",
    NOT_ELIGIBLE:
      "a merchant below the agent-checkout trust threshold (details.reason = trust_below_agent_threshold, trust_score, threshold) or not available to agents; answered before the human is asked (preview_checkout's warnings say it first)",
    PRECONDITION_NOT_MET:
      "the cart's shipping changed with get_shipping_rates after the preview, so the session is OPEN again (details.required_step = preview_checkout; refused before the human is asked), or the previewed shipping option is gone (details.required_step = get_shipping_rates)",
    IDENTITY_TOKEN_REJECTED: "an X-Customer-Identity header that fails verification (details.reason): refused, not ignored; answered before the human is asked",
    IDENTITY_TOKEN_STORE_MISMATCH: "an X-Customer-Identity token minted for another store; answered before the human is asked",
  },
  async summarize(a, ctx) {
    refuseRejectedCustomer(ctx);
    // Everything that would refuse this payment whatever the human says is answered now, before they are asked:
    // the cart actor's own refusals (session state, idempotency key, shipping, merchant state, eligibility, payment
    // method), then the arguments and the mandate (audit E: approvals asked for payments that could not happen).
    const { cartId, cart, session } = await precheckSession(ctx, a);
    if (FINISHED.has(session.status)) {
      // A finished session cannot take a payment any more, so the human is not asked to pay again (audit N4): the
      // cart actor's answer comes back at once (same key: CHECKOUT_ALREADY_IN_PROGRESS with the orders; another
      // key: IDEMPOTENCY_KEY_CONFLICT; failed/cancelled: SESSION_INACTIVE; expired: CHECKOUT_SESSION_NOT_FOUND). These statuses are terminal, so
      // no race can turn this call into a payment (checkout-machine decideComplete throws for every one of them).
      await completeSession(ctx, a);
      throw fail("CHECKOUT_STATUS_INVALID", "The checkout session is finished.", { status: session.status });
    }
    if (session.status === "READY_FOR_PAYMENT" && isX402(a.payment_method)) throw x402OverMcp();
    const { verifyMandateFor } = await import("./integrations.ts");
    await verifyMandateFor(ctx, cartId, a.payment_mandate, cart);
    // the question below is the state with this hash (its totals, its stores' charges): the payment charges that or nothing
    approvedStates.set(ctx, session.state_hash);
    return paymentQuestion(ctx, cart, session, a.payment_method);
  },
  async handler(a, ctx) {
    const approved = approvedStates.get(ctx);
    approvedStates.delete(ctx);
    // summarize ran (the dispatcher asks before every confirmed tool): a payment without the approved state is a bug
    if (!approved) throw new Error("complete_checkout: no approved state hash for this call");
    return completeSession(ctx, a, approved);
  },
});

export const cancelCheckout = defineTool({
  name: "cancel_checkout",
  title: "Cancel checkout",
  description: "Abandon a checkout session before payment (releases what it holds). Asks the human to approve.",
  group: "checkout",
  input: T.Object({ checkout_session_id: T.String(SESSION_ID) }, Strict),
  output: T.Object({}, Open),
  annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    CHECKOUT_SESSION_NOT_FOUND: "as complete_checkout",
    SESSION_INACTIVE:
      "cancel a session that already ended: completed, cancelled, failed or expired (details.status), or past its expiry before its timer ran (details.status = EXPIRED, the same answer as after it); answered before the human is asked",
    CHECKOUT_STATUS_INVALID:
      "cancel while a capture awaits reconciliation (SETTLEMENT_UNKNOWN after tok_amount_mismatch) or a payment runs (IN_PROGRESS); details.status; answered before the human is asked",
  },
  async summarize(a, ctx) {
    // a session that cannot be cancelled (finished, or its payment running) is refused before the human is asked
    const { cart } = await precheckSession(ctx, a, "cancel");
    return { summary: `Cancel the checkout of ${money(cart.totals.total_minor, cart.currency)} at ${storeName(ctx)}.`, facts: { amount: cart.totals.total, currency: cart.currency } };
  },
  async handler(a, ctx) {
    return ctx.svc.actors.ask(cartActor, sessionCart(a.checkout_session_id), "cancel", { keyId: ownerId(ctx), sessionId: a.checkout_session_id });
  },
});

export const getCheckoutStatus = defineTool({
  name: "get_checkout_status",
  title: "Get checkout status",
  description: "Where a checkout session stands (via its cart): cart status, live session id and totals. Use it after PENDING_EXTERNAL_CONFIRMATION.",
  group: "checkout",
  input: T.Object({ checkout_session_id: T.String(SESSION_ID) }, Strict),
  output: CartOut,
  annotations: READ,
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: false,
  errors: { CHECKOUT_SESSION_NOT_FOUND: "as complete_checkout" },
  async handler(a, ctx) {
    // A missing or another key's cart is this tool's own refusal, naming the session asked about (not the cart's
    // "No cart with that id." with details.cart_id under the translated code), as complete_checkout and
    // cancel_checkout answer it.
    const read = await ctx.svc.actors.ask(cartActor, sessionCart(a.checkout_session_id), "get", { keyId: ownerId(ctx) }).catch((err: unknown) => {
      throw err instanceof ActorError && err.code === "CART_NOT_FOUND" ? noSuchSession(a.checkout_session_id) : err;
    });
    const cart = ofThisStore(ctx, read, () => noSuchSession(a.checkout_session_id));
    return { ...cart, requested_session_id: a.checkout_session_id, session_is_live: cart.checkout_session_id === a.checkout_session_id };
  },
});

const Destination = {
  country_code: T.String({ pattern: "^[A-Za-z]{2}$", description: "ISO 3166-1 alpha-2 of the buyer's address" }),
  // white space only is no postal code (it matched country-wide zones only): refused as the bridges refuse it
  postal_code: T.String({ minLength: 1, maxLength: 20, pattern: NON_BLANK_NO_NUL_PATTERN }),
};

export const getShippingRates = defineTool({
  name: "get_shipping_rates",
  title: "Get shipping rates",
  description:
    "Shipping options, cost and delivery window to the buyer's destination, from this merchant's shipping zones. " +
    "With cart_id (the step preview_checkout asks for with PRECONDITION_NOT_MET): records the destination on the " +
    "cart and answers each merchant's options with the one selected; when a merchant offers several methods " +
    "(selected_option_id null), call again with option_id to pick one, then preview_checkout. With product_id " +
    "instead: an estimate for that product and quantity, nothing recorded. shippable:false = no shipping there.",
  group: "cart",
  input: T.Object(
    {
      ...Destination,
      cart_id: T.Optional(T.String({ ...CART_ID, description: "A cart of yours: record the destination (and option_id) on it." })),
      option_id: T.Optional(T.String({ format: "uuid", description: "With cart_id: the shipping option (options[].option_id) to use for its merchant." })),
      product_id: T.Optional(T.String({ format: "uuid", description: "Instead of cart_id: an estimate for one product." })),
      quantity: T.Optional(T.Integer({ minimum: 1, maximum: 1000, description: "With product_id." })),
      variant_id: T.Optional(
        T.String({ format: "uuid", description: "With product_id: the variant the units are (its own price decides free shipping); without it, a product whose variants differ in price is estimated at the lowest-priced one." }),
      ),
    },
    Strict,
  ),
  output: T.Union([
    T.Object({ shippable: T.Boolean() }, Open),
    T.Object({ cart_id: T.String(), ready_for_preview: T.Boolean(), merchants: T.Array(T.Object({ merchant_slug: T.String(), shippable: T.Boolean(), options: T.Array(AnyObject) }, Open)) }, Open),
  ]),
  // Spec: never confirmed. With a cart it records where to ship (no money moves; the human approves the total at
  // complete_checkout), and the same arguments again change nothing.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "key",
  scopes: ["search", "cart"],
  feature: "shipping_estimate",
  confirmation: false,
  errors: {
    MISSING_REQUIRED_ARGUMENT: "neither cart_id nor product_id (details.field)",
    INVALID_ARGUMENT: "an option_id that is not one of the cart's options for that destination (details.field), or a country_code that is no ISO 3166-1 country (details.field = country_code)",
    PRODUCT_NOT_FOUND: "with product_id: not a product of this store, or a variant_id the product does not have (details.field)",
    CART_NOT_MUTABLE: "a cart already paid or expired, or a stale expected revision",
    CART_NOT_FOUND: "with cart_id: unknown or another caller's cart, or a cart none of whose items is this store's",
    CHECKOUT_STATUS_INVALID: "a new destination or option while the cart's payment runs, awaits the buyer's approval or settlement (details.status)",
  },
  async handler(a, ctx) {
    if (a.cart_id !== undefined && a.product_id !== undefined) throw fail("INVALID_ARGUMENT", "Pass cart_id or product_id, not both.", { field: "product_id" });
    if (a.cart_id !== undefined) {
      if (a.quantity !== undefined) throw fail("INVALID_ARGUMENT", "quantity goes with product_id; a cart has its own quantities.", { field: "quantity" });
      if (a.variant_id !== undefined) throw fail("INVALID_ARGUMENT", "variant_id goes with product_id; a cart has its own variants.", { field: "variant_id" });
      const cartId = cartIdArg(a.cart_id);
      await assertCartOfThisStore(ctx, cartId);
      return ctx.svc.actors.ask(cartActor, cartId, "selectShipping", {
        keyId: ownerId(ctx),
        shipping: { countryCode: a.country_code, postalCode: a.postal_code, ...(a.option_id ? { optionId: a.option_id.toLowerCase() } : {}) },
      });
    }
    if (a.product_id === undefined) throw fail("MISSING_REQUIRED_ARGUMENT", "Pass cart_id (to ship a cart) or product_id (an estimate).", { field: "cart_id" });
    if (a.option_id !== undefined) throw fail("INVALID_ARGUMENT", "option_id picks a cart's shipping; pass it with cart_id.", { field: "option_id" });
    // as the cart path (the cart actor) and REST's estimate refuse it (review R-4: "ZZ" was 200 shippable:false here)
    if (!isIsoCountryCode(a.country_code.toUpperCase())) {
      throw fail("INVALID_ARGUMENT", `${a.country_code} is not an ISO 3166-1 alpha-2 country code.`, { field: "country_code" });
    }
    const { product, store } = await storeProduct(ctx, a.product_id);
    // A store with no zones ships free, in the estimate as in its carts (docs/checkout.md "Shipping").
    const zones = await shippingZonesOf(ctx.svc.sql, store.slug);
    const unit = await estimateUnitPriceMinor(ctx.svc.sql, product, ownerId(ctx), ctx.now, a.variant_id, (variantId) =>
      fail("PRODUCT_NOT_FOUND", "No such variant of this product.", { product_id: product.id, variant_id: variantId, field: "variant_id" }),
    );
    return shippingEstimate(zones, product, store, { countryCode: a.country_code, postalCode: a.postal_code, quantity: a.quantity }, ctx.now, unit);
  },
});

// ------------------------------------------------------------------------------------------------ orders

/** An order's items, events and refunds as orderView (REST) shows them, for an order read without a key's filter. */
async function orderHistory(ctx: ToolContext, orderId: string) {
  const sql = ctx.svc.sql;
  const [items, events, refunds] = await Promise.all([
    sql<{ product_id: string | null; variant_id: string | null; title: string; quantity: number; unit_price_minor: number; currency: string }[]>`
      SELECT i.product_id, i.variant_id, i.title, i.quantity, i.unit_price_minor, o.currency FROM order_items i JOIN orders o ON o.id = i.order_id
      WHERE i.order_id = ${orderId} ORDER BY i.id`,
    sql<{ at: Date; type: string; from_status: string | null; to_status: string | null }[]>`
      SELECT at, type, from_status, to_status FROM order_events WHERE order_id = ${orderId} ORDER BY id`,
    // get_refund_status on the customer endpoint answers the order's refund requests, not an empty list (review R3-8)
    sql`SELECT id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at
      FROM order_refunds WHERE order_id = ${orderId} ORDER BY created_at`,
  ]);
  return {
    items: items.map((i) => ({
      product_id: i.product_id,
      variant_id: i.variant_id,
      title: i.title,
      quantity: i.quantity,
      unit_price: toMajor(Number(i.unit_price_minor), i.currency),
      unit_price_minor: Number(i.unit_price_minor),
    })),
    events: events.map((e) => ({ type: e.type, from_status: e.from_status, to_status: e.to_status, at: e.at.toISOString() })),
    refunds: refunds.map((r) => refundView(r as never)),
  };
}

/**
 * The order as the caller reads it, and on the customer endpoint whose write it is (`owner`; null on the other
 * endpoints, where the key's own orders are the only ones found). Whose orders: on `/{slug}/mcp/customer` the
 * identified customer's, whichever key placed them; on every other endpoint the key's own, X-Customer-Identity or
 * not (that header only makes a checkout the customer's there; review R3-3).
 */
async function readCallerOrder(ctx: ToolContext, orderId: string) {
  if (ctx.endpoint === "customer") {
    const { customerOrder } = await import("./integrations.ts");
    const { owner, ...o } = await customerOrder(ctx, orderId);
    // get_order's answer (its outputSchema) has the items and the event history, a customer's own order too
    return { order: { ...o, ...(await orderHistory(ctx, o.order_id)) }, owner };
  }
  const view = await orderView(ctx.svc, orderId.toLowerCase(), ownerId(ctx));
  if (view.merchant_slug !== ctx.store.slug) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: orderId });
  return { order: view, owner: null };
}

async function callerOrder(ctx: ToolContext, orderId: string) {
  return (await readCallerOrder(ctx, orderId)).order;
}

/**
 * The order a write tool (cancel_order, onx_create_return) acts on. On the customer endpoint any key holding the
 * customer's token reads the customer's orders, but writes only what the merchant recorded for the customer (no
 * key owns it) or what this key placed (review R3-3): the token is a bearer token of an hour, not bound to a key,
 * so another agent of the same customer must not undo an agent's purchase or claim its money back. A recorded
 * order was paid outside this service: no rail can refund it here, so its return is the merchant's (R3-8).
 * NOT_ELIGIBLE (different path: the agent that placed it, or the merchant), before the human is asked.
 */
async function writableOrder(ctx: ToolContext, orderId: string, write: "cancel" | "return") {
  const { order, owner } = await readCallerOrder(ctx, orderId);
  if (owner === null) return order;
  if (owner.agentKeyId !== null && owner.agentKeyId !== ownerId(ctx)) {
    throw fail(
      "NOT_ELIGIBLE",
      `Another agent placed this order for the customer: only that agent, or the merchant, can ${write === "cancel" ? "cancel it" : "take a return request for it"}.`,
      { order_id: order.order_id, reason: "placed_by_another_agent" },
    );
  }
  if (owner.agentKeyId === null && write === "return") {
    throw fail("NOT_ELIGIBLE", "The merchant recorded this order (paid outside this service, so no refund runs here): the customer asks the merchant for its return.", {
      order_id: order.order_id,
      reason: "recorded_by_merchant",
    });
  }
  return order;
}

export const onxGetOrders = defineTool({
  name: "onx_get_orders",
  title: "Get orders",
  description:
    "Your orders at this store, newest first, with status (pending, paid, fulfilled, shipped, delivered, canceled, " +
    "refunded) and totals. Filter with status (e.g. 'fulfilled'). On the customer endpoint: the identified " +
    "customer's orders. Pass order_id for one order with items and its event history.",
  group: "account",
  input: T.Object(
    {
      order_id: T.Optional(Uuid),
      status: T.Optional(T.Union(["pending", "paid", "fulfilled", "shipped", "delivered", "canceled", "refunded"].map((s) => T.Literal(s)))),
      limit: T.Optional(T.Integer({ minimum: 1, maximum: 100 })),
    },
    Strict,
  ),
  output: T.Object({ orders: T.Array(T.Object({ order_id: T.String(), status: T.String(), total: T.Number(), currency: T.String() }, Open)) }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["orders:read", "checkout"],
  confirmation: false,
  errors: { ORDER_NOT_FOUND: "order_id of another caller or store", ORDER_OWNERSHIP_FAILED: "customer endpoint, order of another customer" },
  async handler(a, ctx) {
    if (a.order_id) return { orders: [await callerOrder(ctx, a.order_id)] };
    const { listOrders } = await import("./integrations.ts");
    return { orders: await listOrders(ctx, a.status, a.limit ?? 20) };
  },
});

export const getOrder = defineTool({
  name: "get_order",
  title: "Get order",
  description: "One of your orders at this store: status, items, totals, payment, refunds and the append-only event history.",
  group: "account",
  input: T.Object({ order_id: Uuid }, Strict),
  output: T.Object({ order_id: T.String(), status: T.String(), events: T.Array(AnyObject) }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["orders:read", "checkout"],
  confirmation: false,
  errors: { ORDER_NOT_FOUND: "unknown order, or another caller's", ORDER_OWNERSHIP_FAILED: "customer endpoint, another customer's order" },
  async handler(a, ctx) {
    return callerOrder(ctx, a.order_id);
  },
});

const PAYMENT_MOVING: ReadonlySet<string> = new Set(["IN_PROGRESS", "SETTLEMENT_UNKNOWN"]);

type OrderSessionRow = { cart_id: string | null; checkout_session_id: string | null; agent_key_id: string | null; reconciliation: string | null; payment_rail: string };

/** The checkout session an order belongs to (its cart, session and key), its reconciliation mark and its stored rail. */
async function orderSessionRow(ctx: ToolContext, orderId: string): Promise<OrderSessionRow | undefined> {
  const [row] = await ctx.svc.sql<OrderSessionRow[]>`
    SELECT cart_id, checkout_session_id, agent_key_id, reconciliation, payment_rail FROM orders WHERE id = ${orderId} AND store_slug = ${ctx.store.slug}`;
  return row;
}

/** An order past pending: REST's 409 ORDER_NOT_CANCELLABLE, the refund asked for with onx_create_return (orders.ts). */
const notPending = (o: { order_id: string; status: string }, row: OrderSessionRow | undefined) =>
  notCancellable(o.order_id, o.status as OrderStatus, row?.payment_rail ?? "", "mcp");

/**
 * cancel_order's refusals known before the human is asked: an order past pending, or one whose checkout session is
 * paying or awaiting reconciliation (the cart would refuse the cancel: money may move). The handler decides again.
 */
async function assertOrderCancellable(ctx: ToolContext, o: { order_id: string; status: string }): Promise<void> {
  const row = await orderSessionRow(ctx, o.order_id);
  if (o.status !== "pending") throw notPending(o, row);
  if (!row?.cart_id || !row.checkout_session_id || !row.agent_key_id) return;
  const cart = await ctx.svc.actors.ask(cartActor, row.cart_id, "get", { keyId: row.agent_key_id }).catch(() => null);
  if (cart?.checkout_session_id === row.checkout_session_id && cart.checkout_status !== null && PAYMENT_MOVING.has(cart.checkout_status)) {
    throw fail("ORDER_NOT_CANCELLABLE", "A payment for this order is running; ask again when it has finished.", {
      status: "pending",
      reason: "payment_in_progress",
      order_id: o.order_id,
      checkout_session_id: row.checkout_session_id,
    });
  }
}

export const cancelOrder = defineTool({
  name: "cancel_order",
  title: "Cancel order",
  description:
    "Cancel one of your orders while it is still pending (not paid). A paid, fulfilled, shipped or delivered order " +
    "answers ORDER_NOT_CANCELLABLE (details.status): to get the money back, request a refund with onx_create_return " +
    "(no need to wait for delivery; the merchant approves it). Asks the human to approve. Idempotent: an order an " +
    "agent's cancel canceled (nothing charged) answers canceled again, without asking.",
  group: "account",
  input: T.Object({ order_id: Uuid, reason: T.Optional(T.String({ maxLength: 255, pattern: NO_NUL_PATTERN })) }, Strict),
  output: T.Object({ order_id: T.String(), status: T.String() }, Open),
  annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    ORDER_NOT_CANCELLABLE:
      "an order past pending (paid, fulfilled, shipped…; details.status; details.refund_tool = onx_create_return, or details.reason = refund_by_merchant for x402), or a pending one whose payment is running or awaits reconciliation (details.reason = payment_in_progress); answered before the human is asked; also after it when the payment completes while the cancel waits (details.status = paid, nothing canceled) or another cancel (the merchant's, after a capture) wins (details.status = canceled)",
    NOT_ELIGIBLE: "customer endpoint: an order of the customer another agent key placed (details.reason = placed_by_another_agent); answered before the human is asked",
  },
  async summarize(a, ctx) {
    const o = await writableOrder(ctx, a.order_id, "cancel");
    // A repeated cancel of an order this agent's cancel canceled (nothing charged): the same answer, nobody asked (RC-3).
    if (o.status === "canceled" && (await agentCanceledUnpaid(ctx.svc.sql, o.order_id))) throw new AnsweredWithoutAsking({ order_id: o.order_id, status: "canceled" });
    await assertOrderCancellable(ctx, o);
    return { summary: `Cancel order ${o.order_id} of ${money(o.total_minor, o.currency)} at ${storeName(ctx)}.`, facts: { amount: o.total, currency: o.currency } };
  },
  async handler(a, ctx) {
    const o = await writableOrder(ctx, a.order_id, "cancel");
    const row = await orderSessionRow(ctx, o.order_id);
    if (o.status === "canceled" && (await agentCanceledUnpaid(ctx.svc.sql, o.order_id))) return { order_id: o.order_id, status: "canceled" };
    if (o.status !== "pending") throw notPending(o, row);
    // REST POST /agent/orders/{id}/cancel's own function: through the checkout session in the cart's turn (it refuses
    // while money may move, and otherwise releases the hold), never the store behind its back; and a cancel that loses
    // the race to the payment is ORDER_NOT_CANCELLABLE with the status the order has now (audit A1 M1).
    return cancelPendingAsAgent(
      ctx.svc,
      {
        id: o.order_id,
        storeSlug: ctx.store.slug,
        cartId: row?.cart_id ?? null,
        checkoutSessionId: row?.checkout_session_id ?? null,
        agentKeyId: row?.agent_key_id ?? null,
        reconciliation: row?.reconciliation ?? null,
        paymentRail: row?.payment_rail ?? "",
      },
      a.reason ?? "canceled by the agent at the buyer's request",
      "mcp",
    );
  },
});

/**
 * The amount onx_create_return asks the human to approve: the one the store will request (audit A1 L1), read as the
 * store reads it (commerce.ts proposeRefund). An order the key has no allowed binding for is ORDER_NOT_FOUND. An
 * idempotency key already used: the first request's amount (the store answers that record). Otherwise refunds.ts
 * `validateRefundRequest` over the same rows (bound = what was captured, less REFUNDED and in flight), which also
 * gives the store's refusals before the human is asked: no refundable status, a closed return window, too many open
 * requests, nothing left, an amount above what is left. With a new idempotency key the refusals are left to the
 * store (a retry is answered with its first request whatever is left then); the amount is the same computation.
 */
async function returnAmountToAsk(ctx: ToolContext, orderId: string, a: { amount?: number; idempotency_key?: string }): Promise<number> {
  // the terms the order was bought under, as the store judges the request (commerce.ts refundPolicyColumns)
  const terms = refundPolicyColumns(ctx.svc.sql);
  const [o] = await ctx.svc.sql<
    { status: OrderStatus; agent_key_id: string | null; total_minor: number; captured_minor: number | null; created_at: Date; delivered_at: Date | null; accepts_returns: boolean | null; return_window_days: number | null; binding: string | null; payment_rail: string }[]
  >`
    SELECT o.status, o.agent_key_id, o.payment_rail, o.total_minor, o.captured_minor, o.created_at, o.delivered_at, ${terms.columns}, a.status AS binding
    FROM orders o JOIN stores s ON s.slug = o.store_slug ${terms.join}
    LEFT JOIN store_agent_allowlist a ON a.store_slug = o.store_slug AND a.agent_key_id = ${ownerId(ctx)}
    WHERE o.id = ${orderId} AND o.store_slug = ${ctx.store.slug}`;
  const key = a.idempotency_key?.toLowerCase();
  // Before the idempotency key, as the store checks it.
  if (!o || o.agent_key_id !== ownerId(ctx) || o.binding !== "allowed") throw fail("ORDER_NOT_FOUND", "No such order for this key.");
  const rows = await ctx.svc.sql<{ status: RefundStatus; amount_minor: number; idempotency_key: string | null }[]>`
    SELECT status, amount_minor, idempotency_key FROM order_refunds WHERE order_id = ${orderId}`;
  const prev = key === undefined ? undefined : rows.find((r) => r.idempotency_key === key);
  if (prev) return Number(prev.amount_minor);
  const refunds = refundRecordsOf(rows);
  const bound = orderTotalMinor(o);
  // with a new key the store decides what is left (a concurrent call may be the key's first), but no refund of any
  // key can pass the order's total: that is refused before the human is asked to approve, say, 2^53 cents (fuzz F2-7)
  if (key !== undefined && a.amount !== undefined && a.amount > bound) throw fail("INVALID_ARGUMENT", "amount exceeds the order's total.", { field: "amount", total_minor: bound });
  // an x402 order: the store refuses the request (no refund runs here); said before the human is asked (helper C, C-4)
  const x402 = railOfOrder(o.payment_rail) === "x402";
  if (key !== undefined) {
    if (x402) throw x402RefundRequestRefused(orderId);
    return a.amount ?? refundableMinor(bound, refunds);
  }
  const amountMinor = validateRefundRequest({
    order: { status: o.status, totalMinor: bound, createdAt: o.created_at.getTime(), deliveredAt: o.delivered_at?.getTime() ?? null },
    refunds,
    // the window get_return_policy shows (refunds.ts refundWindowDays): 0 days at a store that does not accept returns (audit M-4)
    policy: { acceptsReturns: o.accepts_returns, returnWindowDays: o.return_window_days },
    amount: a.amount,
    now: ctx.now.getTime(),
  }).amountMinor;
  if (x402) throw x402RefundRequestRefused(orderId);
  return amountMinor;
}

export const onxCreateReturn = defineTool({
  name: "onx_create_return",
  title: "Create return",
  description:
    "Ask for a refund (return) of one of your orders: amount in cents (omit for all that is still refundable: what was " +
    "captured less what is refunded or already requested) and a reason. Creates a refund request in PENDING_APPROVAL " +
    "that the merchant approves; at most 5 wait per order. Read get_return_policy first. Asks the human to approve the " +
    "amount that will be requested.",
  group: "account",
  input: T.Object(
    {
      order_id: Uuid,
      amount: T.Optional(T.Integer({ minimum: 1, description: "cents; omit for all that is still refundable" })),
      reason: T.Optional(T.String({ maxLength: 255, pattern: NO_NUL_PATTERN })),
      idempotency_key: T.Optional(T.String({ pattern: UUID_V4_PATTERN, description: "UUID v4; repeat it to retry the same request (answers the first refund request)." })),
    },
    Strict,
  ),
  output: T.Object({ status: T.String() }, Open),
  annotations: WRITE,
  auth: "key",
  scopes: ["checkout"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    RETURN_WINDOW_EXPIRED: "the order was delivered longer ago than the return window; answered before the human is asked (without idempotency_key)",
    ORDER_NOT_FOUND: "another caller's order, or a key the merchant blocked; answered before the human is asked (without idempotency_key)",
    IDEMPOTENCY_KEY_CONFLICT: "the idempotency_key was used for a request with another amount or reason",
    INVALID_ARGUMENT:
      "an amount above what is still refundable: captured less refunded and in flight (details.field = amount, details.refundable_minor); answered before the human is asked (without idempotency_key); a reason Postgres cannot store as sent, e.g. a lone UTF-16 surrogate (details.field = reason), answered before the human is asked",
    NOT_ELIGIBLE:
      "an order in no refundable status (details.status), nothing left to refund (details.refundable_minor = 0), or 5 requests of the order already waiting for the merchant (details.reason = too_many_open_refunds, open_refunds, max_open_refunds); answered before the human is asked (without idempotency_key); an order paid over x402 (details.reason = refund_by_merchant, payment_rail = x402: the merchant pays it back from its wallet); customer endpoint: an order of the customer another agent key placed (details.reason = placed_by_another_agent), or one the merchant recorded (paid outside the service: details.reason = recorded_by_merchant); answered before the human is asked",
  },
  // REST's 409 `conflict` (actors/store/refunds.ts) is not a code of the MCP tool table: the refusal is NOT_ELIGIBLE
  // here, as provision_wallet's and negotiate_price's "no more of this" are (fuzz F2-2)
  translate: { conflict: "NOT_ELIGIBLE" },
  async summarize(a, ctx) {
    // before the human is asked, with or without an idempotency key, as REST refuses it (review R-3 of audit A-4's fix:
    // a lone surrogate passed the schema's no-NUL pattern, the human approved, then the store answered 400)
    const unstorable = a.reason === undefined ? null : unstorableField(a.reason, "reason");
    if (unstorable) throw fail("INVALID_ARGUMENT", `reason ${unstorable.message}.`, { field: "reason" });
    const o = await writableOrder(ctx, a.order_id, "return");
    const amount = await returnAmountToAsk(ctx, o.order_id, a);
    return { summary: `Request a refund of ${money(amount, o.currency)} for order ${o.order_id} at ${storeName(ctx)}.`, facts: { amount: toMajor(amount, o.currency), currency: o.currency } };
  },
  async handler(a, ctx) {
    const o = await writableOrder(ctx, a.order_id, "return");
    return ctx.svc.actors.ask(storeCommerce, ctx.store.slug, "proposeRefund", {
      orderId: o.order_id,
      agentKeyId: ownerId(ctx),
      ...(a.amount === undefined ? {} : { amount: a.amount }),
      ...(a.reason === undefined ? {} : { reason: a.reason }),
      ...(a.idempotency_key === undefined ? {} : { idempotencyKey: a.idempotency_key.toLowerCase() }),
    });
  },
});

export const getRefundStatus = defineTool({
  name: "get_refund_status",
  title: "Get refund status",
  description: "Refund requests of one of your orders and their status (PENDING_APPROVAL, then the merchant's decision).",
  group: "account",
  input: T.Object({ order_id: Uuid }, Strict),
  output: T.Object({ order_id: T.String(), refunds: T.Array(AnyObject) }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["orders:read", "checkout"],
  confirmation: false,
  async handler(a, ctx) {
    const o = await callerOrder(ctx, a.order_id);
    return { order_id: o.order_id, refunded: toMajor(o.refunded_minor, o.currency), currency: o.currency, refunds: o.refunds };
  },
});
