/**
 * Tools for the integration edges: payment mandates (AGENT_TOKEN_INVALID, MANDATE_LIMIT_EXCEEDED), end-customer
 * identity (IDENTITY_TOKEN_*, ORDER_OWNERSHIP_FAILED), the merchant platform (UPSTREAM_*), attribute
 * verification (CART_ATTRIBUTE_WRITE_FAILED, VERIFICATION_NOT_FOUND), trust reads and negotiation.
 *
 * Merchant platform hook: a product may carry `attributes.platform_endpoint`, an https URL of the merchant
 * platform's item resource (loopback/private allowed only where ALLOW_PRIVATE_URLS is on). GET answers live stock
 * `{in_stock: boolean, quantity?: integer}`; POST `{attribute, value, cart_id}` writes a cart attribute.
 */
import { Type as T } from "@sinclair/typebox";
import { BRIDGE_SCOPES } from "../../../actors/agent/access.ts";
import { cartActor } from "../../../actors/cart/index.ts";
import type { PaymentLimitsInput } from "../../../actors/cart/messages.ts";
import { ActorError, fail } from "../../../actors/runtime/errors.ts";
import { storeActor } from "../../../actors/store/index.ts";
import { amountProblem } from "../../../actors/store/ingest.ts";
import { assertBidCurrency, noLineAtListPrice, priorBidRounds, refuseBid } from "../../../actors/store/negotiation.ts";
import { currencyProblem, toMinor } from "../../../actors/store/schemas.ts";
import { AGENT_THRESHOLD, displayBand, SUSPENSION_THRESHOLD } from "../../../actors/trust/bands.ts";
import { discardBody, fetchVetted, readBoundedJson, ResponseTooLargeError, ResponseUndecodableError } from "../../../infra/outbound-http.ts";
import { assertPublicUrl, type Resolver, type VettedUrl } from "../../../infra/ssrf.ts";
import { toMajor } from "../../../search/money.ts";
import { tokenService } from "../../identity.ts";
import { orderTotals } from "../../rest/orders.ts";
import { agentCheckoutOpen, currentScore, trustExplanation } from "../../rest/trust.ts";
import { customerBuyerRef } from "../identity.ts";
import { defineTool, type ToolContext } from "../registry.ts";
import { cartIdArg, money, ofThisStore, ownerId } from "./commerce.ts";
import { forHuman } from "../human-text.ts";
import { ACCEPTED_OFFER_USE, negotiationMessage } from "../../negotiation-use.ts";
import { storeProduct } from "./discovery.ts";
import { AnyObject, Open, Strict, Uuid } from "./schemas.ts";
import { NO_NUL_PATTERN } from "../../../infra/validation-message.ts";

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;

// ---------------------------------------------------------------------------------------- mandates

export const MANDATE_AUDIENCE = "payment-mandate";
export const MANDATE_TYP = "mandate+jwt";

/**
 * Checks a presented mandate against the cart; the checkout endpoint of a real merchant requires one. Returns the
 * mandate's limits for the `complete` message (null without a mandate): the cart checks them again on the total it
 * charges in its paying turn, since the cart read here is an earlier turn's (review R4-5).
 */
export async function verifyMandateFor(
  ctx: ToolContext,
  cartId: string,
  token: string | undefined,
  known?: { totals: { total_minor: number }; currency: string },
  notFound?: () => ActorError,
): Promise<PaymentLimitsInput | null> {
  if (!token) {
    if (ctx.endpoint === "checkout" && ctx.store.slug !== "demo-store") {
      throw fail("MISSING_REQUIRED_ARGUMENT", "The checkout endpoint needs a payment_mandate (issue_payment_mandate).", { field: "payment_mandate" });
    }
    return null;
  }
  const tokens = await tokenService(ctx.svc);
  let claims;
  try {
    claims = (await tokens.verifyToken(token, { audience: MANDATE_AUDIENCE, typ: MANDATE_TYP })).claims;
  } catch (err) {
    const reason = err instanceof ActorError && err.code === "token_expired" ? "expired" : "signature_or_claims";
    throw fail("AGENT_TOKEN_INVALID", "The payment mandate failed verification; issue a new one.", { reason });
  }
  if (claims.sub !== ownerId(ctx)) throw fail("AGENT_TOKEN_INVALID", "The payment mandate was issued to another agent.", { reason: "subject" });
  // the cart as the caller just read it (complete_checkout's pre-check, already this store's), else read now, and
  // then held to this endpoint's store as every cart tool is (commerce.ts ofThisStore): a mandate of this store
  // must not be checked against, and pay for, another store's cart. `notFound`: the caller's own not-found (a session's).
  const cart = known ?? ofThisStore(ctx, await ctx.svc.actors.ask(cartActor, cartId, "get", { keyId: ownerId(ctx) }), notFound);
  const limit = Number(claims.max_amount_minor);
  const details = { mandate: { max_amount_minor: limit, currency: claims.currency, store: claims.store, expires_at: new Date(Number(claims.exp) * 1000).toISOString() }, cart_total_minor: cart.totals.total_minor, cart_currency: cart.currency };
  if (claims.store !== ctx.store.slug) throw fail("MANDATE_LIMIT_EXCEEDED", "The mandate is for another merchant (audience).", { ...details, violated: "audience" });
  if (claims.currency !== cart.currency) throw fail("MANDATE_LIMIT_EXCEEDED", "The mandate is in another currency.", { ...details, violated: "currency" });
  if (cart.totals.total_minor > limit) throw fail("MANDATE_LIMIT_EXCEEDED", `The order total ${money(cart.totals.total_minor, cart.currency)} exceeds the mandate.`, { ...details, violated: "amount" });
  // The audience was checked above (one store per endpoint), so the payee is this store.
  return { currency: String(claims.currency), maxTotalMinor: limit, payees: [ctx.store.slug], mandate: details.mandate };
}

export const issuePaymentMandate = defineTool({
  name: "issue_payment_mandate",
  title: "Issue payment mandate",
  description:
    "Ask the human for a spending mandate: the most you may pay for one order at this store, in one currency, for a " +
    "limited time (a per-order cap, not a budget: each order is checked against it on its own). " +
    "Returns a signed mandate to pass as complete_checkout's payment_mandate (required on the dedicated checkout " +
    "endpoint). A checkout above it answers MANDATE_LIMIT_EXCEEDED; a tampered or expired one AGENT_TOKEN_INVALID.",
  group: "checkout",
  input: T.Object({ max_amount: T.Number({ exclusiveMinimum: 0 }), currency: T.String({ pattern: "^[A-Z]{3}$" }), expires_in_minutes: T.Optional(T.Integer({ minimum: 1, maximum: 1440 })) }, Strict),
  output: T.Object({ payment_mandate: T.String(), max_amount: T.Number(), currency: T.String(), expires_at: T.String() }, Open),
  annotations: WRITE,
  auth: "key",
  // `checkout` or the bridge-only `checkout:delegate`, like the REST AP2 mandate route (actors/agent/access.ts): a
  // mandate only caps a payment the credential can already start, and a real merchant's checkout endpoint requires
  // one for ucp_complete_checkout, whose least-scope challenge asks checkout:delegate (audit A-6)
  scopes: BRIDGE_SCOPES,
  sandboxRefused: true,
  confirmation: true,
  async summarize(a, ctx) {
    // a currency that is not money (ZZZ) and an amount it cannot hold are refused before the human is asked
    const badCurrency = currencyProblem(a.currency);
    if (badCurrency) throw fail("INVALID_ARGUMENT", `currency: ${badCurrency}.`, { field: "currency" });
    if (maxAmountProblem(a)) throw fail("INVALID_ARGUMENT", `max_amount: ${maxAmountProblem(a)}.`, { field: "max_amount" });
    // "per order": the spec's MANDATE_LIMIT_EXCEEDED compares one order with the mandate, and the mandate can back
    // several orders while it lasts; the human must not read it as a total budget (audit G3, docs/decisions.md)
    return {
      summary: `Allow the agent to pay up to ${a.max_amount} ${a.currency} per order at ${forHuman(ctx.store.name)}, for any number of orders during the next ${a.expires_in_minutes ?? 60} minutes.`,
      facts: { amount_per_order: a.max_amount, currency: a.currency },
    };
  },
  async handler(a, ctx) {
    if (maxAmountProblem(a)) throw fail("INVALID_ARGUMENT", `max_amount: ${maxAmountProblem(a)}.`, { field: "max_amount" });
    const ttl = (a.expires_in_minutes ?? 60) * 60;
    const tokens = await tokenService(ctx.svc);
    const jwt = await tokens.issueToken({
      sub: ownerId(ctx),
      aud: MANDATE_AUDIENCE,
      ttlSeconds: ttl,
      typ: MANDATE_TYP,
      extra: { store: ctx.store.slug, currency: a.currency, max_amount_minor: toMinor(a.max_amount, a.currency) },
    });
    return { payment_mandate: jwt, max_amount: a.max_amount, currency: a.currency, store: ctx.store.slug, expires_at: new Date(ctx.now.getTime() + ttl * 1000).toISOString() };
  },
});

/** Why max_amount cannot cap a mandate: not money of its currency, or below its smallest unit (1e-12 USD made a cap of 0; fuzz F2-4). */
const maxAmountProblem = (a: { max_amount: number; currency: string }) => amountProblem(a.max_amount, a.currency) ?? (toMinor(a.max_amount, a.currency) < 1 ? `below the smallest unit of ${a.currency}` : null);

// ---------------------------------------------------------------------------------------- customers

function requireCustomer(ctx: ToolContext) {
  if (ctx.customerError) throw fail(ctx.customerError.code, ctx.customerError.message, ctx.customerError.details);
  if (!ctx.customer) throw fail("IDENTITY_TOKEN_REJECTED", "The customer endpoint needs an X-Customer-Identity token from the merchant.", { reason: "missing" });
  return ctx.customer;
}

interface OrderRow {
  id: string;
  status: string;
  total_minor: number;
  captured_minor: number | null;
  refunded_minor: number;
  currency: string;
  buyer_ref: string;
  created_at: Date;
}

/** Whose write an order of the customer is (review R3-3): the key that placed it, or null for one the merchant recorded. */
export interface CustomerOrderOwner {
  agentKeyId: string | null;
}

const orderOut = (o: OrderRow) => ({
  order_id: o.id,
  status: o.status,
  // The captured total after an accepted amount mismatch (audit A8), as REST's order view says it.
  ...orderTotals(o),
  refunded_minor: Number(o.refunded_minor),
  currency: o.currency,
  created_at: o.created_at.toISOString(),
  refunds: [] as unknown[],
});

/**
 * An order of this store seen by the identified customer: another customer's is ORDER_OWNERSHIP_FAILED. Any key
 * holding the customer's token reads it (the merchant vouched for the customer; docs/decisions.md); `owner` is
 * for the writes, which are narrower (commerce.ts `customerWriteOrder`) and never shown to the caller.
 */
export async function customerOrder(ctx: ToolContext, orderId: string): Promise<ReturnType<typeof orderOut> & { owner: CustomerOrderOwner }> {
  const customer = requireCustomer(ctx);
  const [o] = await ctx.svc.sql<(OrderRow & { agent_key_id: string | null })[]>`
    SELECT id, status, total_minor, captured_minor, refunded_minor, currency, buyer_ref, created_at, agent_key_id FROM orders
    WHERE id = ${orderId.toLowerCase()} AND store_slug = ${ctx.store.slug}`;
  if (!o) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: orderId });
  if (o.buyer_ref !== customer.buyerRef) {
    ctx.svc.log.warn("mcp order ownership check failed", { store: ctx.store.slug, order: o.id });
    throw fail("ORDER_OWNERSHIP_FAILED", "This order is not associated with the authenticated customer; the attempt is recorded.", { order_id: o.id });
  }
  return { ...orderOut(o), owner: { agentKeyId: o.agent_key_id } };
}

/** The customer endpoint's orders are the customer's; every other endpoint's are the key's (review R3-3). */
export async function listOrders(ctx: ToolContext, status: string | undefined, limit: number) {
  const sql = ctx.svc.sql;
  const rows =
    ctx.endpoint === "customer"
      ? await sql<OrderRow[]>`SELECT id, status, total_minor, captured_minor, refunded_minor, currency, buyer_ref, created_at FROM orders
          WHERE store_slug = ${ctx.store.slug} AND buyer_ref = ${requireCustomer(ctx).buyerRef} AND (${status ?? null}::text IS NULL OR status = ${status ?? null})
          ORDER BY created_at DESC LIMIT ${limit}`
      : await sql<OrderRow[]>`SELECT id, status, total_minor, captured_minor, refunded_minor, currency, buyer_ref, created_at FROM orders
          WHERE store_slug = ${ctx.store.slug} AND agent_key_id = ${ownerId(ctx)} AND (${status ?? null}::text IS NULL OR status = ${status ?? null})
          ORDER BY created_at DESC LIMIT ${limit}`;
  return rows.map(orderOut);
}

export const verifyCustomerIdentity = defineTool({
  name: "verify_customer_identity",
  title: "Verify customer identity",
  description:
    "Check the end customer's identity token (header X-Customer-Identity, issued by the merchant) on this store: " +
    "returns the customer reference the customer tools act for. IDENTITY_TOKEN_REJECTED (details.reason) or " +
    "IDENTITY_TOKEN_STORE_MISMATCH when it cannot be used here.",
  group: "customer",
  input: T.Object({}, Strict),
  output: T.Object({ store: T.String(), customer_id: T.String(), buyer_ref: T.String() }, Open),
  annotations: READ,
  auth: "key",
  confirmation: false,
  errors: { IDENTITY_TOKEN_REJECTED: "a forged, expired or missing X-Customer-Identity", IDENTITY_TOKEN_STORE_MISMATCH: "a token minted for another store" },
  async handler(_a, ctx) {
    const c = requireCustomer(ctx);
    return { store: ctx.store.slug, customer_id: c.id, buyer_ref: customerBuyerRef(ctx.store.slug, c.id) };
  },
});

// ---------------------------------------------------------------------------------- merchant platform

const PLATFORM_TIMEOUT_MS = 3_000;
/** The stock answer is `{in_stock, quantity?}`: a few dozen bytes; 4 KiB leaves room for extra fields. */
export const PLATFORM_ANSWER_MAX_BYTES = 4 * 1024;

function platformEndpoint(ctx: ToolContext, attributes: Record<string, unknown>): string {
  const url = attributes.platform_endpoint;
  if (typeof url !== "string" || url.length === 0) {
    throw fail("STORE_NOT_CONFIGURED", `${ctx.store.name} has no platform integration for this product (attributes.platform_endpoint).`, { missing: "platform_endpoint" });
  }
  return url;
}

/** Services.extras key of a DNS resolver for platform calls (tests inject one; default: the system's). */
export const EXTRAS_PLATFORM_RESOLVER = "mcp.platform.resolve";

/**
 * Calls the merchant platform at the address the SSRF guard vetted, with the original Host header and TLS server
 * name, as webhook delivery does (docs/webhooks.md): fetching by name would resolve it a second time, and a
 * rebinding DNS answer could then point the request at an internal address (audit, code reading). The answer's
 * body is read only through `readPlatformJson` or dropped with `discardBody` (`controller` stops it either way).
 */
async function callPlatform(ctx: ToolContext, url: string, init: RequestInit, controller: AbortController): Promise<Response> {
  const allowPrivate = ctx.svc.config.ALLOW_PRIVATE_URLS;
  let vetted: VettedUrl;
  try {
    vetted = await assertPublicUrl(url, { allowPrivate, field: "platform_endpoint", resolve: ctx.svc.extras.get(EXTRAS_PLATFORM_RESOLVER) as Resolver | undefined });
  } catch {
    throw fail("STORE_NOT_CONFIGURED", "The product's platform endpoint is not an allowed URL.", { missing: "platform_endpoint" });
  }
  try {
    return await fetchVetted(vetted, { ...init, timeoutMs: PLATFORM_TIMEOUT_MS, controller });
  } catch (err) {
    if (err instanceof ResponseUndecodableError) throw undecodable(err);
    throw platformTransportFailure(err);
  }
}

/** The platform answered, but its body does not decode as its Content-Encoding says: retrying will not help. */
function undecodable(err: ResponseUndecodableError): ActorError {
  return fail("UPSTREAM_RESPONSE_INVALID", "The merchant platform's answer does not decode (its Content-Encoding is wrong).", {
    reason: "undecodable",
    encoding_error: err.encodingError,
  });
}

/** A failed exchange with the platform (connecting, or reading its answer) as our error. */
function platformTransportFailure(err: unknown): ActorError {
  const tls = tlsFailure(err);
  if (tls) {
    // A certificate that does not verify for the endpoint's name is the integration's configuration, not an outage:
    // retrying will not help, the merchant has to fix it (review H, N4)
    return fail("STORE_NOT_CONFIGURED", "The merchant platform's TLS certificate does not verify for its endpoint's name.", { reason: "tls_certificate", tls });
  }
  const name = (err as Error | null)?.name;
  return fail("UPSTREAM_UNAVAILABLE", "The merchant platform did not answer.", { reason: name === "TimeoutError" ? "timeout" : "unreachable" });
}

/**
 * The platform's JSON answer, at most PLATFORM_ANSWER_MAX_BYTES: a longer one (declared or streamed) is stopped
 * there and refused as UPSTREAM_RESPONSE_INVALID (security audit C-1: two anonymous calls against an endless body
 * took the gateway from 134 MB to 1.5 GB); a body that does not decode (a corrupt gzip) is UPSTREAM_RESPONSE_INVALID
 * too, as it was before the cap; a body that is not JSON is null. Only a timeout or a reset while reading is
 * UPSTREAM_UNAVAILABLE.
 */
async function readPlatformJson(res: Response, controller: AbortController): Promise<unknown> {
  try {
    return await readBoundedJson(res, PLATFORM_ANSWER_MAX_BYTES, controller);
  } catch (err) {
    if (err instanceof ResponseTooLargeError) {
      throw fail("UPSTREAM_RESPONSE_INVALID", `The merchant platform's answer is longer than ${PLATFORM_ANSWER_MAX_BYTES} bytes.`, {
        reason: "too_large",
        limit_bytes: PLATFORM_ANSWER_MAX_BYTES,
      });
    }
    if (err instanceof ResponseUndecodableError) throw undecodable(err);
    if (err instanceof SyntaxError) return null;
    throw platformTransportFailure(err);
  }
}

/**
 * The code of a TLS verification failure (Bun's fetch: `ERR_TLS_CERT_ALTNAME_INVALID` for a name mismatch, the
 * OpenSSL verify codes such as `DEPTH_ZERO_SELF_SIGNED_CERT`, `CERT_HAS_EXPIRED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`
 * for an untrusted or expired chain), else undefined.
 */
export function tlsFailure(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  return /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_(GET|VERIFY|DECRYPT)_|HOSTNAME_MISMATCH$|INVALID_CA$|PATH_LENGTH_EXCEEDED$)/.test(code)
    ? code
    : undefined;
}

export const checkLiveAvailability = defineTool({
  name: "check_live_availability",
  title: "Check live availability",
  description:
    "Ask the merchant's platform right now whether a product is in stock (for products whose merchant integrates a " +
    "live stock endpoint). Use it for scarce items before create_cart. UPSTREAM_* errors mean the platform failed: " +
    "fall back to get_availability.",
  group: "discovery",
  input: T.Object({ product_id: Uuid }, Strict),
  output: T.Object({ productId: T.String(), inStock: T.Boolean(), quantity: T.Union([T.Integer(), T.Null()]), source: T.String() }, Open),
  annotations: { ...READ, openWorldHint: true },
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  errors: {
    STORE_NOT_CONFIGURED: "the product has no platform_endpoint, or its TLS certificate does not verify (details.reason = tls_certificate)",
    UPSTREAM_UNAVAILABLE: "the platform is unreachable or slower than 3 s (its answer's body included)",
    UPSTREAM_ERROR: "the platform answers a non-2xx status",
    UPSTREAM_RESPONSE_INVALID:
      "the platform's body is not {in_stock: boolean, quantity?: integer}, is longer than 4 KiB (details.reason = too_large; reading stops there), or does not decode as its Content-Encoding says (details.reason = undecodable)",
  },
  async handler(a, ctx) {
    const { product } = await storeProduct(ctx, a.product_id);
    const controller = new AbortController();
    const res = await callPlatform(ctx, platformEndpoint(ctx, product.attributes), { headers: { accept: "application/json" } }, controller);
    if (!res.ok) {
      await discardBody(res, controller);
      throw fail("UPSTREAM_ERROR", `The merchant platform answered ${res.status}.`, { status: res.status });
    }
    const body = (await readPlatformJson(res, controller)) as { in_stock?: unknown; quantity?: unknown } | null;
    if (!body || typeof body.in_stock !== "boolean" || (body.quantity !== undefined && !Number.isInteger(body.quantity))) {
      throw fail("UPSTREAM_RESPONSE_INVALID", "The merchant platform's answer does not match {in_stock, quantity?}.", { received: typeof body });
    }
    return { productId: product.id, inStock: body.in_stock, quantity: (body.quantity as number | undefined) ?? null, source: "merchant_platform", checkedAt: ctx.now.toISOString() };
  },
});

// ------------------------------------------------------------------------------ attribute verification

export const VERIFICATION_AUDIENCE = "attribute-verification";

/**
 * The lines of this endpoint's store in the cart whose product integrates a merchant platform (its endpoint). None is
 * STORE_NOT_CONFIGURED, said before the human is asked to share anything: there would be nobody to share it with.
 * A cart none of whose merchants is this store is CART_NOT_FOUND here (commerce.ts ofThisStore), and another store's
 * lines of a shared cart are left out: the human is asked to share the attribute with this store, so only this
 * store's platform gets it (was: PRODUCT_NOT_FOUND naming the other store's product).
 */
async function platformLines(ctx: ToolContext, cartId: string) {
  const cart = ofThisStore(ctx, await ctx.svc.actors.ask(cartActor, cartId, "get", { keyId: ownerId(ctx) }));
  const lines: { product: Awaited<ReturnType<typeof storeProduct>>["product"]; url: string }[] = [];
  for (const line of cart.items.filter((l) => l.merchant_slug === ctx.store.slug)) {
    const { product } = await storeProduct(ctx, line.product_id);
    const url = (product.attributes as Record<string, unknown>).platform_endpoint;
    if (typeof url === "string") lines.push({ product, url });
  }
  if (lines.length === 0) throw fail("STORE_NOT_CONFIGURED", "No product in this cart integrates a merchant platform; nothing needs verifying.", { missing: "platform_endpoint" });
  return lines;
}

export const startAttributeVerification = defineTool({
  name: "start_attribute_verification",
  title: "Start attribute verification",
  description:
    "Record a buyer attribute the merchant's enforcement layer needs (e.g. age_over_18 for restricted goods) on the " +
    "merchant platform's cart, for every line of the cart whose product integrates a platform. Returns a " +
    "verification_reference to poll with get_attribute_verification. Asks the human to approve sharing the attribute.",
  group: "cart",
  input: T.Object({ cart_id: T.String({ minLength: 1, maxLength: 60 }), attribute: T.Union(["age_over_18", "age_over_21", "business_buyer", "shipping_country"].map((s) => T.Literal(s))), value: T.Union([T.Boolean(), T.String({ maxLength: 64, pattern: NO_NUL_PATTERN })]) }, Strict),
  output: T.Object({ verification_reference: T.String(), status: T.String(), lines: T.Integer() }, Open),
  annotations: WRITE,
  auth: "key",
  scopes: ["cart"],
  sandboxRefused: true,
  confirmation: true,
  errors: {
    CART_ATTRIBUTE_WRITE_FAILED: "the platform refuses or cannot take the attribute write",
    STORE_NOT_CONFIGURED: "no line of this store in the cart has a platform integration; answered before the human is asked",
    CART_NOT_FOUND: "unknown or another caller's cart, or a cart none of whose items is this store's; answered before the human is asked",
  },
  async summarize(a, ctx) {
    await platformLines(ctx, cartIdArg(a.cart_id));
    return { summary: `Share '${forHuman(`${a.attribute} = ${String(a.value)}`)}' with ${forHuman(ctx.store.name)} for your cart.` };
  },
  async handler(a, ctx) {
    const cartId = cartIdArg(a.cart_id);
    let written = 0;
    for (const { product, url } of await platformLines(ctx, cartId)) {
      const controller = new AbortController();
      const res = await callPlatform(ctx, url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ attribute: a.attribute, value: a.value, cart_id: cartId }) }, controller).catch((err) => {
        throw fail("CART_ATTRIBUTE_WRITE_FAILED", "The attribute could not be written to the merchant platform's cart.", { product_id: product.id, cause: (err as ActorError).code });
      });
      // Only the status matters: the body is dropped unread, whatever its size.
      await discardBody(res, controller);
      if (!res.ok) throw fail("CART_ATTRIBUTE_WRITE_FAILED", `The merchant platform refused the attribute write (${res.status}).`, { product_id: product.id, status: res.status });
      written++;
    }
    const tokens = await tokenService(ctx.svc);
    const ref = await tokens.issueToken({ sub: ownerId(ctx), aud: VERIFICATION_AUDIENCE, ttlSeconds: 15 * 60, typ: "verification+jwt", extra: { store: ctx.store.slug, cart: cartId, attribute: a.attribute, lines: written } });
    return { verification_reference: ref, status: "VERIFIED", attribute: a.attribute, lines: written, expires_in: 900 };
  },
});

export const getAttributeVerification = defineTool({
  name: "get_attribute_verification",
  title: "Get attribute verification",
  description: "Poll an attribute verification by its verification_reference. VERIFICATION_NOT_FOUND when unknown or expired (15 minutes): start again.",
  group: "cart",
  input: T.Object({ verification_reference: T.String({ minLength: 1, maxLength: 4000 }) }, Strict),
  output: T.Object({ status: T.String(), attribute: T.String(), cart_id: T.String() }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["cart"],
  confirmation: false,
  errors: { VERIFICATION_NOT_FOUND: "an unknown, tampered or expired reference" },
  async handler(a, ctx) {
    const tokens = await tokenService(ctx.svc);
    const v = await tokens.verifyToken(a.verification_reference, { audience: VERIFICATION_AUDIENCE, typ: "verification+jwt" }).catch(() => null);
    if (!v || v.sub !== ownerId(ctx) || v.claims.store !== ctx.store.slug) {
      throw fail("VERIFICATION_NOT_FOUND", "No attribute verification for that reference (or it expired).", {});
    }
    return { status: "VERIFIED", attribute: String(v.claims.attribute), cart_id: String(v.claims.cart), lines: Number(v.claims.lines), expires_at: new Date(v.exp * 1000).toISOString() };
  },
});

// -------------------------------------------------------------------------------------------- trust

export const getTrustScore = defineTool({
  name: "get_trust_score",
  title: "Get trust score",
  description:
    "This merchant's signed trust score (0 to 100 and 0 to 1), its display band, confidence, engines, operational " +
    "status, whether agent checkout is allowed, and the JWS with the JWKS URL to verify it offline.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object({ store_slug: T.String(), score: T.Number(), score_0to1: T.Number(), display_band: T.String() }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["merchants:read"],
  confirmation: false,
  async handler(_a, ctx) {
    const { row, score } = await currentScore(ctx.svc, ctx.store.slug);
    const sel = score.selected;
    return {
      store_slug: ctx.store.slug,
      score: sel.score0to100,
      score_0to1: sel.score0to1,
      engines: sel.engines,
      confidence_level: sel.confidence_level,
      display_band: displayBand(sel.score0to1),
      operational_status: score.status,
      // what the description promises and REST's public read gives (review Y-4: the tool had no flag at all)
      agent_checkout_allowed: agentCheckoutOpen(sel.score0to1, ctx.store.verificationLevel, score.status),
      thresholds: { agent_threshold: AGENT_THRESHOLD, suspension_threshold: SUSPENSION_THRESHOLD },
      jws: sel.engines.overall === "v41" && row.jws_v41 ? row.jws_v41 : row.jws_v2,
      jwks_url: `${ctx.svc.siteUrl}/.well-known/jwks.json`,
      computed_at: row.computed_at.toISOString(),
    };
  },
});

export const getTrustExplanation = defineTool({
  name: "get_trust_explanation",
  title: "Get trust explanation",
  description: "Why this merchant has its trust score: strengths, weaknesses, 30-day trend and a recommendation for the shopper.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object({ merchant: T.String(), strengths: T.Array(T.Unknown()), weaknesses: T.Array(T.Unknown()), recommendation: T.Unknown() }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["merchants:read"],
  confirmation: false,
  // the REST route's object (gateway/rest/trust.ts trustExplanation): the same fields on both surfaces (audit M-6)
  async handler(_a, ctx) {
    return trustExplanation(ctx.svc, ctx.store.slug);
  },
});

// -------------------------------------------------------------------------------------------- negotiate

/**
 * The product a bid is for, once every refusal known before the human is asked has been made, by the store's own
 * rules (actors/store/negotiation.ts, as its `negotiate` applies them): negotiation off, a currency other than the
 * product's, an amount the currency cannot hold, an excluded category, the rounds used up. Only the amount's verdict
 * (accepted, countered, below the floor) is left to the store.
 */
async function negotiableProduct(ctx: ToolContext, a: { product_id: string; bid_price: number; currency: string }) {
  const rules = ctx.store.negotiationRules;
  if (rules?.enabled !== true) throw fail("FEATURE_NOT_ENABLED", `${ctx.store.name} does not negotiate prices.`, { capability: "negotiation" });
  const { product } = await storeProduct(ctx, a.product_id);
  assertBidCurrency(product.currency, a.currency);
  // above the most money can be (1e20 USD) is refused here, not by the database after the human said yes (fuzz F2-5)
  if (amountProblem(a.bid_price, product.currency)) throw fail("INVALID_ARGUMENT", `bid_price: ${amountProblem(a.bid_price, product.currency)}.`, { field: "bid_price" });
  const priorRounds = await priorBidRounds(ctx.svc.sql, ownerId(ctx), product.id);
  const refused = refuseBid({ rules, category: product.category, priorRounds, noLineAtListPrice: noLineAtListPrice(product.priceMinor, product.variants) });
  if (refused?.reason === "negotiation_not_enabled") throw fail("FEATURE_NOT_ENABLED", `${ctx.store.name} does not negotiate prices.`, { capability: "negotiation" });
  if (refused) {
    throw fail("NOT_ELIGIBLE", refused.message, {
      reason: refused.reason,
      ...(refused.reason === "category_excluded"
        ? { category: product.category }
        : refused.reason === "variants_priced_separately"
          ? {}
          : { rounds: priorRounds, max_rounds: rules.maxRounds }),
    });
  }
  return product;
}

export const negotiatePrice = defineTool({
  name: "negotiate_price",
  title: "Negotiate price (beta)",
  description:
    "Bid a price for a product of this store (BETA). The merchant's rules accept it (status accepted, negotiatedPrice, " +
    "expiresAt: 15 minutes), counter it (status countered, counterPrice: bid that to accept it) or reject it (reason). " +
    `An accepted price: ${ACCEPTED_OFFER_USE.replace("create or update the cart", "create_cart or update_cart_item")} ` +
    "Stores without negotiation answer FEATURE_NOT_ENABLED. Asks the human to approve the bid.",
  group: "cart",
  input: T.Object({ product_id: Uuid, bid_price: T.Number({ exclusiveMinimum: 0 }), currency: T.String({ pattern: "^[A-Z]{3}$" }) }, Strict),
  output: T.Object({ status: T.String(), productId: T.String() }, Open),
  annotations: WRITE,
  auth: "key",
  scopes: ["cart"],
  feature: "negotiate",
  sandboxRefused: true,
  confirmation: true,
  errors: {
    FEATURE_NOT_ENABLED: "the store has no negotiation rules; answered before the human is asked",
    NOT_ELIGIBLE:
      "the product's category is excluded from negotiation (details.reason = category_excluded), every variant of the product has its own price so no cart line could use a negotiated list price (details.reason = variants_priced_separately), or this key has used the store's bids per product (details.reason = max_rounds_reached, rounds, max_rounds); answered before the human is asked",
    INVALID_ARGUMENT: "currency other than the product's (details.field = currency, details.expected), or bid_price with more decimals than it allows or above the maximum amount; answered before the human is asked",
  },
  async summarize(a, ctx) {
    const product = await negotiableProduct(ctx, a);
    return { summary: `Offer ${a.bid_price} ${a.currency} for ${forHuman(product.title)} (list ${money(product.priceMinor, product.currency)}) at ${forHuman(ctx.store.name)}.`, facts: { amount: a.bid_price, currency: a.currency } };
  },
  async handler(a, ctx) {
    const product = await negotiableProduct(ctx, a);
    const r = await ctx.svc.actors.ask(storeActor, ctx.store.slug, "negotiate", { productId: product.id, agentKeyId: ownerId(ctx), bidMinor: toMinor(a.bid_price, a.currency), currency: a.currency });
    const m = (v: number | null) => (v === null ? null : toMajor(v, r.currency));
    return { offerId: r.offerId, status: r.status, productId: product.id, currency: r.currency, listPrice: m(r.listPriceMinor), bidPrice: a.bid_price, counterPrice: m(r.counterPriceMinor), negotiatedPrice: m(r.negotiatedPriceMinor), expiresAt: r.expiresAt, round: r.round, maxRounds: r.maxRounds, reason: r.reason, message: negotiationMessage(r.status, r.message) };
  },
});

export { AnyObject };
