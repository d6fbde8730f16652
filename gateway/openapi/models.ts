/**
 * Success models for the OpenAPI document, for routes that declare no response schema of their own. They are
 * documentation only: no route validates its answer against them (response validation would change behaviour).
 * Objects name the fields an agent relies on and admit more (additive evolution), like the MCP tool outputs
 * (gateway/mcp/tools/schemas.ts, whose catalog models are reused here).
 */
import { t, type TSchema } from "elysia";
import type { RejectReason } from "../../actors/store/negotiation.ts";
import { PoliciesInput, ShippingZoneInput } from "../../actors/store/ingest.ts";
import { NegotiationRules } from "../../actors/store/schemas.ts";
import { SuccessEnvelope } from "../envelope.ts";

const Open = { additionalProperties: true } as const;
const Str = t.String();
const Num = t.Number();
const Int = t.Integer();
const Bool = t.Boolean();
const Time = t.String({ format: "date-time" });
const NullableStr = t.Union([t.String(), t.Null()]);
const Any = t.Record(t.String(), t.Unknown());
const obj = (props: Record<string, TSchema>, description?: string) => t.Object(props, description ? { ...Open, description } : Open);

/** `{success: true, data}` whose data is this object. */
export const envelope = (data: TSchema, title?: string) => SuccessEnvelope(data, title);
/** `{success: true, data: [...], meta}` for lists. */
export const listEnvelope = (item: TSchema, title?: string) => SuccessEnvelope(t.Array(item), title);

// ------------------------------------------------------------------------------------------------ money, carts

const Money = obj(
  {
    subtotal: Num, discount: Num, shipping: Num, tax: Num, total: Num,
    subtotal_minor: Int, discount_minor: Int, shipping_minor: Int, tax_minor: Int, total_minor: Int,
  },
  "Decimals (spec `number`) beside the same amounts in integer minor units (`*_minor`).",
);

const CartLine = obj({
  product_id: Str, variant_id: NullableStr, merchant_slug: Str, title: Str, quantity: Int,
  unit_price: Num, unit_price_minor: Int, line_total: Num, line_total_minor: Int, price_source: Str,
});

export const Cart = obj({
  id: Str, cart_id: Str, status: t.String({ description: "OPEN, CHECKOUT, COMPLETED, EXPIRED, …" }), revision: Int, currency: Str,
  items: t.Array(CartLine), coupon: t.Union([Any, t.Null()]), totals: Money, merchants: t.Array(Str),
  shipping: t.Union([Any, t.Null()]), checkout_session_id: NullableStr, checkout_status: NullableStr,
  created_at: Time, updated_at: Time, expires_at: Time,
}, "Cart (CartView).");

export const CouponResult = obj({ applied: Bool, code: Str, reason: t.Optional(Str), discount_minor: Int, cart: Cart });

export const Preview = obj({
  checkout_session_id: Str, cart_id: Str, status: Str, state_hash: t.String({ pattern: "^[0-9a-f]{64}$" }), currency: Str,
  totals: Money, merchants: t.Array(Any), items: t.Array(CartLine), coupon: t.Union([Any, t.Null()]),
  expires_at: NullableStr, stock_warnings: t.Array(Any),
}, "Checkout preview: what the human approves (totals and the state hash).");

export const SessionCanceled = obj({ checkout_session_id: Str, status: Str });

export const CheckoutCompleted = obj({
  status: t.Literal("COMPLETED"), checkout_session_id: Str, cart_id: Str, order_id: Str, order_ids: t.Array(Str),
  orders: t.Array(Any), total: Num, total_minor: Int, currency: Str, payment_rail: Str, simulated: Bool, state_hash: Str,
  risk: t.Optional(Any),
}, "The checkout completed: the order(s) placed and paid.");

/** The 202: a human must approve the payment (sent in the error envelope, `code` user_action_required). */
export const UserActionRequired = t.Object({
  success: t.Literal(false),
  error: Str,
  code: t.Literal("user_action_required"),
  details: obj({
    status: t.Literal("PENDING_EXTERNAL_CONFIRMATION"), checkout_session_id: Str, approval_url: Str,
    approval_urls: t.Array(obj({ merchant_slug: Str, url: Str })), completed_store_ids: t.Array(Str),
    // every store's leg, as a 402 rollback shows them: a store declined in the same attempt is `unpaid` with its outcome
    // `reason`: the rail's, on a leg whose outcome is `failed` (helper C, C-3)
    stores: t.Array(obj({ store_id: Str, status: Str, outcome: NullableStr, reason: t.Optional(Str) })), expires_at: NullableStr,
  }),
}, { description: "202 user_action_required: open details.approval_url, then call again with the same checkout_session_id and idempotency_key." });

/** x402 answers (gateway/bridge/x402-checkout.ts): 402 challenge, 200 settled, 207 some stores settled. */
export const X402Partial = t.Object({ success: Bool, data: t.Optional(Any), error: t.Optional(Str), code: t.Optional(Str), details: t.Optional(Any) }, {
  ...Open,
  description: "207 (x402 rail): some stores of a multi-store cart settled and some did not; per-store results in the body.",
});

// ------------------------------------------------------------------------------------------------ orders

export const Order = obj({
  id: Str, order_id: Str, status: Str, merchant_slug: Str, currency: Str,
  total: t.Number({ description: "The order's total in major units: what was captured after an accepted amount mismatch, else what the checkout priced." }),
  total_minor: t.Integer({ description: "`total` in integer minor units." }),
  priced_total_minor: t.Integer({ description: "What the checkout priced (subtotal − discount + shipping + tax add up to it); equal to total_minor unless the merchant accepted a capture of another amount." }),
  refunded_minor: Int, payment_rail: Str, payment_method: NullableStr, checkout_session_id: NullableStr, cart_id: NullableStr,
  items: t.Array(Any), events: t.Array(Any), refunds: t.Array(Any), created_at: Time, updated_at: Time,
});

export const OrderCanceled = obj({ order_id: Str, status: Str, refund: t.Union([Any, t.Null()]) });

export const Refund = obj({
  refund_id: Str, order_id: Str, merchant_slug: Str, status: t.String({ description: "PENDING_APPROVAL, APPROVED, REFUNDED, REJECTED, FAILED" }),
  amount: t.Number({ description: "Major units (a decimal, 1.5 = 1.50 USD), as every money amount of an answer (docs/conventions.md). The request's `amount` is integer cents: read `amount_minor` to compare with it." }),
  amount_minor: t.Integer({ description: "The same amount in integer minor units (cents): the unit of the refund request's `amount`." }),
  currency: Str, reason: NullableStr, refund_reference: NullableStr, created_at: Time, updated_at: Time,
});

// ------------------------------------------------------------------------------------------------ catalog

/** A string that is one of `values` (an enum: `anyOf` of `const`s, which TypeBox's checker reads too). */
const oneOf = (values: readonly string[], description?: string) => t.Union(values.map((v) => t.Literal(v)), description ? { description } : {});
const Uuid = t.String({ format: "uuid" });
const FreshnessTier = oneOf(["fresh", "good", "stale", "very_stale", "unknown"], "How recently the merchant's catalog was synced.");
const Confidence = oneOf(["high", "medium", "low"]);

/** The spec's MerchantSummary (actors/store/reads.ts `merchantSummary`; search/ranking.ts builds the same fields). */
export const MerchantSummary = obj({
  slug: Str,
  name: Str,
  trustScore: t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], { description: "0 to 1; null before the first score." }),
  verificationLevel: oneOf(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM"], "QUALIFIED (registry-checked) stores show as PREMIUM; QUALIFIED is a search filter value."),
  storeStatus: oneOf(["active", "deprioritized"]),
  lastSyncAt: t.Optional(t.Union([Time, t.Null()])),
  agentCheckout: t.Optional(t.Boolean({
    description: "Search results and product detail: false when a checkout at this merchant is refused because its trust score is below the agent-checkout threshold (0.7): the cart answers NOT_ELIGIBLE (reason trust_below_agent_threshold). The human may buy on the merchant's own site.",
  })),
  agentCheckoutReason: t.Optional(oneOf(["trust_below_agent_threshold"], "Only when agentCheckout is false: why a checkout here is refused.")),
}, "MerchantSummary.");

/** The spec's ProductSummary: every field required (search/ranking.ts `toProductSummary`). */
export const ProductSummary = obj({
  id: Uuid, title: Str, description: Str, price: Num, compareAtPrice: t.Union([Num, t.Null()]), currency: Str, inStock: Bool,
  imageUrl: NullableStr, category: NullableStr, merchant: MerchantSummary, relevanceScore: Num, freshnessTier: FreshnessTier,
  stockConfidence: Confidence, priceConfidence: Confidence,
  why_ranked: t.String({ description: "Human-readable ranking explanation." }),
  euQualified: t.Boolean({ description: "Registry-checked (QUALIFIED) and established in the EU." }),
  priceRange: t.Optional(obj({ min: Num, max: Num }, "Only for a product whose variants are priced on their own: the lowest and highest price the cart charges for it (decimal, in currency). price stays the list price; minPrice/maxPrice match when one variant price is in range, price_asc sorts by the lowest price in range, price_desc by the highest.")),
}, "ProductSummary (search results).");

/** One entry of ProductDetail `variants` (actors/store/reads.ts `toProductDetail`). */
export const ProductVariant = obj({
  id: t.String({ description: "The merchant's variant id: the cart's items[].variant_id." }),
  sku: t.Optional(Str), title: Str, options: t.Record(t.String(), t.String()),
  price: t.Number({ description: "The variant's own price, or the product's when it has none." }),
  stockQuantity: t.Union([Int, t.Null()], { description: "null when the merchant does not track the variant's stock." }),
  inStock: Bool,
  itemId: t.String({ description: "<product id>:<variant id>: the id that names this variant in ACP items[].id and UCP line_items[].item.id." }),
}, "A purchasable variant; a line of a product with variants must name one.");

/** The spec's ProductDetail (actors/store/reads.ts `toProductDetail`); in `policies` only acceptsReturns is always sent. */
export const ProductDetail = obj({
  id: Uuid, title: Str, description: Str, price: Num, compareAtPrice: t.Union([Num, t.Null()]), currency: Str, inStock: Bool,
  stockQuantity: t.Union([Int, t.Null()], { description: "null when the merchant does not track stock." }),
  images: t.Array(Str), variants: t.Array(ProductVariant), attributes: Any, category: NullableStr, merchant: MerchantSummary,
  policies: obj({
    acceptsReturns: Bool, returnWindowDays: t.Optional(Num), freeShippingThreshold: t.Optional(Num), restockingFeePercent: t.Optional(Num),
    shippingEstimateDays: t.Optional(Str), supportResponseTimeSla: t.Optional(Str),
  }),
  freshnessTier: FreshnessTier,
}, "ProductDetail.");

export const Search = obj({
  products: t.Array(ProductSummary),
  meta: obj({ total: Int, page: Int, limit: Int, totalPages: Int }),
  queryMeta: Any,
});
export const Product = ProductDetail;
export const Availability = obj({ productId: Str, inStock: Bool, stockQuantity: t.Union([Int, t.Null()]), freshnessTier: Str, stockConfidence: Str, agentHint: Str });
export const PriceHistory = obj({ productId: Str, currency: Str, days: Int, currentPrice: Num, lowestPrice: Num, highestPrice: Num, trend: Str, points: t.Array(Any) });
export const Sustainability = obj({ productId: Str, score: Num, grade: Str, dataCoverage: Num, components: t.Array(Any), method: Str });
export const Recommendations = obj({ productId: Str, limit: Int, products: t.Array(ProductSummary) });
const NullableNum = t.Union([Num, t.Null()]);
/** actors/store/negotiation.ts RejectReason, every one (the type check below fails when a reason is added there only). */
const REJECT_REASONS = ["negotiation_not_enabled", "category_excluded", "variants_priced_separately", "below_floor", "max_rounds_reached"] as const satisfies readonly RejectReason[];
const everyRejectReason: [Exclude<RejectReason, (typeof REJECT_REASONS)[number]>] extends [never] ? true : false = true;
void everyRejectReason;
export const Negotiation = obj(
  {
    offerId: t.Union([t.String(), t.Null()], { description: "null for a bid past maxRounds (answered, not recorded)" }), status: t.String({ description: "accepted, countered or rejected" }), productId: Str, merchantSlug: Str, currency: Str,
    listPrice: NullableNum, bidPrice: Num, counterPrice: NullableNum, negotiatedPrice: NullableNum, expiresAt: NullableStr,
    usableInCart: t.Boolean({ description: "true for an accepted bid: the key's cart containing the product is priced at negotiatedPrice until expiresAt, for every unit of its line (message says how; no offer id is passed)" }), round: Int, maxRounds: t.Union([Int, t.Null()], { description: "null when the merchant does not negotiate" }), reason: t.Union([...REJECT_REASONS.map((r) => t.Literal(r)), t.Null()], { description: "Why a bid was rejected (null unless status is rejected): variants_priced_separately when every variant has its own price, so no cart line could use an offer on the list price (docs/catalog.md)." }), message: NullableStr, beta: t.Literal(true),
  },
  "The merchant's answer to the bid (BETA).",
);
export const ShippingEstimate = obj(
  {
    productId: Str, merchantSlug: Str, countryCode: Str, postalCode: Str, quantity: Int, shippable: Bool, reason: t.Optional(Str),
    zone: NullableStr, cost: NullableNum, currency: NullableStr, freeShipping: Bool, minDays: t.Union([Int, t.Null()]), maxDays: t.Union([Int, t.Null()]),
    estimatedDelivery: t.Union([obj({ earliest: Str, latest: Str }), t.Null()]),
  },
  "Cost and delivery window; shippable false (with a reason) when the merchant does not ship there.",
);
export const Comparison = obj({ products: t.Array(Any), priceRange: t.Array(Any), bestValue: NullableStr, bestTrust: NullableStr, recommendation: Any, notFound: t.Array(Str) });

// ------------------------------------------------------------------------------------------------ merchants, trust

export const MerchantList = MerchantSummary;
/** GET /api/v1/merchants: the list with its page meta (integers). */
export const MerchantDirectory = t.Object({
  success: t.Literal(true), data: t.Array(MerchantSummary), meta: t.Object({ total: Int, page: Int, limit: Int, totalPages: Int }),
});
export const MerchantProfile = obj({ slug: Str, name: Str, trustScore: t.Union([Num, t.Null()]), verificationLevel: Str, country: Str, currency: Str, policies: Any, paymentProtocols: t.Array(Str) });
export const Protocols = obj({ slug: Str, protocols: t.Array(Any), preferred: NullableStr, bridge: t.Array(Any), mcp: Any });
export const ReturnPolicy = obj({ slug: Str, acceptsReturns: Bool, returnWindowDays: t.Union([Int, t.Null()]), refundRequest: Any, summary: Str });
export const TrustExplanation = obj({ merchant: Str, trust_score: Num, score: Num, display_band: Str, strengths: t.Array(Any), weaknesses: t.Array(Any), recommendation: Str, computed_at: Str });
export const TrustAppeal = obj({ id: t.Optional(Str), status: t.Optional(Str) }, "The appeal as recorded.");
export const Recompute = Any;
export const KeyRotation = Any;
export const TrustAlert = obj({ id: Str, status: Str });
export const TrustAppealRow = obj({ id: Str, status: Str });

// ------------------------------------------------------------------------------------------------ merchant back office

/** A rejected item of a batch (actors/store/ingest.ts RejectedItem): nothing of it was written. */
const RejectedItem = obj(
  {
    index: t.Integer({ description: "The item's position in the request's array (0-based)." }),
    externalId: t.Union([Str, t.Null()], { description: "The item's externalId, null when it had none (or none that is a string)." }),
    errors: t.Array(obj({ field: Str, message: Str }), { description: "Every problem found, each naming the item's field." }),
  },
  "A rejected item: nothing of it was written.",
);
export const IngestResult = obj(
  {
    accepted: t.Integer({ description: "Items written (upserted by the store's externalId)." }),
    rejected: t.Array(RejectedItem),
    upserted: t.Array(obj({ index: Int, externalId: Str, id: t.String({ format: "uuid", description: "The product's id (kept across syncs)." }) })),
    removed: t.Integer({ description: "Products `remove` took out of the catalog (active ones only)." }),
    syncedAt: t.Union([Time, t.Null()], { description: "The store's last sync: now when the batch wrote or removed something, else the sync before it (null if none)." }),
  },
  "Per-item results: a batch with rejected items is still 200; the accepted ones are written.",
);
export const InventoryResult = obj({
  updated: t.Integer({ description: "Items applied." }),
  products: t.Integer({ description: "Products whose stock changed." }),
  rejected: t.Array(RejectedItem),
});
export const RecordedOrders = obj(
  {
    accepted: Int,
    rejected: t.Array(RejectedItem),
    orders: t.Array(obj({ index: Int, externalId: Str, orderId: t.String({ format: "uuid" }), duplicate: t.Boolean({ description: "true when the merchant's externalId was recorded before (idempotent): orderId is that order." }) })),
  },
  "The recorded human orders, item by item.",
);
/** One order in the merchant's list (actors/store/merchant-reads.ts StoreOrderRow). */
const MerchantOrderRow = {
  id: Str, channel: Str, status: Str,
  totalMinor: t.Integer({ description: "The order's total: what was captured after an accepted amount mismatch, else what the checkout priced." }),
  pricedTotalMinor: t.Integer({ description: "What the checkout priced; equal to totalMinor unless the merchant accepted a capture of another amount." }),
  refundedMinor: Int, currency: Str, paymentRail: Str, agentKeyId: NullableStr,
  reconciliation: t.Union([t.String({ description: "A capture waiting for the merchant: amount_mismatch, finalization_failed, settlement_unknown." }), t.Null()]), createdAt: Time,
};
export const MerchantOrders = obj({ total: Int, items: t.Array(obj(MerchantOrderRow)), limit: Int, offset: Int });
export const MerchantOrder = obj({ ...MerchantOrderRow, items: t.Array(Any), events: t.Array(Any), refunds: t.Array(Any) });
export const Policies = obj({ policies: Any, policyVersion: Int, negotiation: t.Unknown() });
/**
 * GET /policies: the body PUT /policies takes (closed, as the PUT is), the declared fields only, and `negotiation`
 * always (null: none) (actors/store/merchant-reads.ts `declaredPolicies`).
 */
export const DeclaredPolicies = t.Object(
  {
    ...PoliciesInput.properties,
    negotiation: t.Union([NegotiationRules, t.Null()], { description: "The negotiation rules; null: the store does not negotiate." }),
  },
  {
    additionalProperties: false,
    description:
      "What the merchant declared, as PUT /policies takes it: freeShippingThreshold a decimal in the store's currency; a field never declared is left out " +
      "(a store never given policies answers {acceptsReturns: false, negotiation: null}). Agents are shown the zones' shipping promises instead (GET /agent/merchants/{slug}).",
  },
);
/** GET /shipping-zones: the body PUT /shipping-zones takes (actors/store/merchant-reads.ts `declaredShippingZones`). */
export const DeclaredShippingZones = t.Object(
  {
    zones: t.Array(ShippingZoneInput, {
      description: "By name; amounts decimals in each zone's currency; perItem (0) and postalPrefixes ([]) always given; freeOver null = never free. [] for a store without zones (its carts ship free).",
    }),
  },
  { additionalProperties: false, description: "The store's shipping zones, as PUT /shipping-zones takes them." },
);
export const ShippingZones = obj({
  zones: t.Integer({ minimum: 0, description: "How many zones are now in force." }),
  currencyNote: Str,
  example: t.Union([Num, t.Null()], { description: "0 in the first zone's currency, as amounts are shown (null without zones)." }),
});
export const McpTools = obj({ enabled: t.Union([t.Array(Str), t.Null()], { description: "The tools served; null = every tool." }) });
export const PaymentMethods = obj({ methods: t.Array(Str) });
export const Coupon = obj({ code: Str, kind: Str, value: Num, active: Bool, expiresAt: NullableStr, usageLimit: t.Union([Int, t.Null()]), usedCount: Int });
export const OrderStatusChange = obj({}, "The order after the status change.");
export const RefundDecision = Refund;
/** The answer of setting a key's status (actors/store/commerce.ts `setAllowlist`): no timestamps. */
export const AllowlistSet = obj({ merchant_slug: Str, key_id: Str, status: t.Union([t.Literal("allowed"), t.Literal("blocked")]) });
export const AllowlistEntry = obj({ key_id: Str, status: t.Union([t.Literal("allowed"), t.Literal("blocked")]), created_at: Str, updated_at: Str });
export const Reconciled = obj({
  order_id: Str,
  merchant_slug: Str,
  action: Str,
  order_status: Str,
  reconciliation: t.Null(),
  capture_reference: t.Union([Str, t.Null()]),
  refund: t.Union([Any, t.Null()]),
  refund_by_merchant: t.Optional(t.Literal(true, { description: "x402: the service cannot refund the payer; the merchant refunds from its own wallet." })),
  checkout_status: Str,
  cart_status: Str,
});
export const CustomerToken = obj({ token: Str, token_type: Str, expires_in: Int, header: Str });
export const SearchSettings = obj({ settings: Any, version: Int, engine: Str, documents: t.Optional(Int), reindexed: t.Optional(t.Unknown()) });
export const Reindex = obj({}, "What was reindexed.");
export const SandboxDecision = obj({
  intent_id: Str,
  decision: t.Union([t.Literal("approve"), t.Literal("reject")]),
  status: t.Union([t.Literal("approved"), t.Literal("captured"), t.Literal("not_approved")], {
    description:
      "The payment's state after the decision (gateway/rest/checkout.ts decisionStatus): approved (the agent's next complete_checkout with the " +
      "same idempotency_key captures it), captured (that call already did), not_approved (refused: that call answers 402 PAYMENT_NOT_APPROVED).",
  }),
});
export const Ap2UserKey = obj({ agent_key_id: Str, kid: Str });
export const Ap2UserKeyDeleted = obj({ agent_key_id: Str, kid: Str, deleted: t.Literal(true) });

// ------------------------------------------------------------------------------------------------ OAuth, docs

export const Jwks = t.Object({ keys: t.Array(obj({ kty: Str, kid: Str, alg: t.Optional(Str), crv: t.Optional(Str), x: t.Optional(Str), use: t.Optional(Str) })) }, { ...Open, description: "JSON Web Key Set (RFC 7517)." });
export const OAuthClient = obj({ client_id: Str, client_secret: t.Optional(Str), redirect_uris: t.Optional(t.Array(Str)), grant_types: t.Optional(t.Array(Str)), token_endpoint_auth_method: t.Optional(Str) }, "RFC 7591 client information response.");
export const OAuthToken = obj({ access_token: Str, token_type: Str, expires_in: Int, refresh_token: t.Optional(Str), scope: t.Optional(Str) }, "RFC 6749 §5.1 token response.");
export const OAuthRevoked = obj({}, "RFC 7009: an empty answer, also for an unknown token.");
/** RFC 6749 §5.2 errors; `code` repeats `error`. */
export const OAuthErrorBody = t.Object({ success: t.Literal(false), error: Str, error_description: Str, code: Str }, { description: "RFC 6749 §5.2 error (`code` repeats `error`)." });
const OptStr = t.Optional(Str);
export const OAuthRegisterBody = t.Object(
  { redirect_uris: t.Optional(t.Array(Str)), client_name: OptStr, grant_types: t.Optional(t.Array(Str)), response_types: t.Optional(t.Array(Str)), token_endpoint_auth_method: OptStr, scope: OptStr },
  { ...Open, description: "RFC 7591 client metadata (JSON)." },
);
export const OAuthTokenBody = t.Object(
  { grant_type: t.String({ description: "authorization_code, refresh_token or client_credentials" }), code: OptStr, redirect_uri: OptStr, code_verifier: OptStr, refresh_token: OptStr, resource: OptStr, scope: OptStr, client_id: OptStr, client_secret: OptStr },
  { ...Open, description: "RFC 6749 token request (form-encoded)." },
);
export const OAuthRevokeBody = t.Object({ token: Str, token_type_hint: OptStr, client_id: OptStr, client_secret: OptStr }, { ...Open, description: "RFC 7009 revocation request (form-encoded)." });
export const OAuthConsentBody = t.Object({ csrf_token: Str, decision: t.String({ description: "allow, or anything else to deny" }), email: OptStr, password: OptStr }, { ...Open, description: "The consent page's form post." });
export const Html = t.String({ description: "An HTML page." });

// ------------------------------------------------------------------------------------------------ protocol bridge

/**
 * ACP checkout session (Agentic Commerce Protocol), as the bridge answers it in the request's API-Version
 * (gateway/bridge/acp.ts, acp-2026-04-17.ts): the members both versions share, and the ones only one has.
 */
export const AcpSession = obj(
  {
    id: Str, status: Str, currency: Str, line_items: t.Array(Any), totals: t.Array(obj({ type: Str, amount: Num })),
    fulfillment_options: t.Optional(t.Array(Any)), messages: t.Array(Any), links: t.Array(Any),
    protocol: t.Optional(obj({ version: Str }, "2026-04-17: the version the answer is in.")),
    capabilities: t.Optional(Any),
  },
  "ACP CheckoutSession in the request's API-Version. 2025-09-29 (or no header): fulfillment_address, fulfillment_option_id, line items with base_amount/subtotal/total, statuses not_ready_for_payment, ready_for_payment, in_progress, completed, canceled. 2026-04-17: protocol.version, capabilities, fulfillment_details, selected_fulfillment_options[], continue_url (the buyer's approval link, status requires_escalation), status expired, line items and options with totals[], order.type.",
);
export const AcpError = t.Object(
  {
    type: Str,
    code: Str,
    message: Str,
    param: t.Optional(Str),
    supported_versions: t.Optional(t.Array(Str, { description: "With code unsupported_api_version: the API-Version values served (oldest first)." })),
    details: t.Optional(Any),
  },
  {
    description:
      "ACP error (code is ours, see /docs/errors; `unsupported_api_version` for an API-Version not served, with `supported_versions`). 2025-09-29: type invalid_request, request_not_idempotent, processing_error or service_unavailable, with our `details`. 2026-04-17: no request_not_idempotent and no `details` (the version's Error allows no other member); type follows the version's definitions (service_unavailable: 503; processing_error: another 5xx, or a payment the processor failed and rolled back; invalid_request: everything else, a declined or not approved payment included); the bridge's own Idempotency-Key conflict is code idempotency_conflict, a key whose first request still runs idempotency_in_flight.",
  },
);
export const UcpCheckout = obj({ ucp: Any, id: Str, status: Str, currency: Str, line_items: t.Array(Any), totals: t.Array(Any), links: t.Array(Any), messages: t.Array(Any) }, "UCP checkout.");
export const UcpError = t.Object({ ucp: Any, messages: t.Array(obj({ type: t.Literal("error"), code: Str, content: Str, severity: Str })) }, { description: "UCP error message list (code is ours)." });
export const Ap2Receipt = obj({ payment_mandate_id: t.Optional(Str), status: t.Optional(Str) }, "AP2 payment receipt (SUCCESS, or PENDING with approval_urls).");

const AcpItem = obj({ id: t.String({ description: "Product id, or <product id>:<variant id> for a variant" }), quantity: t.Integer({ minimum: 1 }) });
const UcpLineItem = obj({ item: obj({ id: t.String({ description: "Product id, or <product id>:<variant id> for a variant" }) }), quantity: t.Integer({ minimum: 1 }) });
const AcpLineItem = obj({ id: t.String({ description: "Product id, or <product id>:<variant id> for a variant" }), quantity: t.Optional(t.Integer({ minimum: 1, description: "Not in the version's Item: one unit when absent; a repeated id adds up." })) });
const AcpSelected = obj({ type: t.Literal("shipping"), option_id: t.String({ description: "One of fulfillment_options[].id (one pick per store)" }), item_ids: t.Optional(t.Array(Str)) });
const V2025 = "API-Version 2025-09-29 (or no header)";
const V2026 = "API-Version 2026-04-17";
/** 2026-04-17's create members besides its items (`line_items`, or `items` as its RFC examples write them). */
const acp2026Create = {
  currency: t.Optional(t.String({ description: "Checked against the cart's (lower-case ISO 4217)." })),
  capabilities: t.Optional(Any),
  buyer: t.Optional(Any),
  fulfillment_details: t.Optional(Any),
  selected_fulfillment_options: t.Optional(t.Array(AcpSelected)),
};
export const AcpCreateBody = t.Union(
  [
    t.Object({ items: t.Array(AcpItem, { minItems: 1 }), buyer: t.Optional(Any), fulfillment_address: t.Optional(Any) }, { ...Open, description: `${V2025}: ACP create checkout session request.` }),
    t.Object(
      { line_items: t.Array(AcpLineItem, { minItems: 1, description: "The version's schema's name for the items (or `items`: the next branch; never both)." }), ...acp2026Create },
      { ...Open, description: `${V2026}: ACP create checkout session request (fulfillment_details {name, phone_number, email, address}).` },
    ),
    t.Object(
      { items: t.Array(AcpLineItem, { minItems: 1, description: "`items: [{id, quantity?}]`, as the version's RFC and OpenAPI examples write it: read as line_items (never both)." }), ...acp2026Create },
      { ...Open, description: `${V2026}: ACP create checkout session request naming its items \`items\` (the quantity optional, one unit when absent).` },
    ),
  ],
  { description: "ACP create checkout session request, in the shape of the request's API-Version." },
);
export const AcpUpdateBody = t.Union(
  [
    t.Object({ items: t.Optional(t.Array(AcpItem, { minItems: 1, description: "New items (a new cart), as on create." })), buyer: t.Optional(Any), fulfillment_address: t.Optional(Any), fulfillment_option_id: t.Optional(Str) }, { ...Open, description: `${V2025}: ACP update checkout session request.` }),
    t.Object(
      {
        line_items: t.Optional(t.Array(AcpLineItem, { minItems: 1, description: "New items (a new cart), as on create (or `items`, never both)." })),
        items: t.Optional(t.Array(AcpLineItem, { minItems: 1, description: "`line_items` as the version's RFC examples name them (the quantity optional)." })),
        buyer: t.Optional(Any),
        fulfillment_details: t.Optional(Any),
        selected_fulfillment_options: t.Optional(t.Array(AcpSelected)),
      },
      {
        ...Open,
        description: `${V2026}: ACP update checkout session request. fulfillment_details replaces only the parts it names: its contact (name, phone_number, email) when it names one of them, its address when it names \`address\`; a contact-only update keeps the address and its shipping; address: null clears the address, fulfillment_details: null both.`,
      },
    ),
  ],
  { description: "ACP update checkout session request, in the shape of the request's API-Version." },
);
export const AcpCompleteBody = t.Union(
  [
    t.Object(
      {
        payment_data: obj({
          token: t.String({ description: "Sandbox test token (tok_approve, …)" }),
          provider: t.Optional(t.Union([t.Literal("stripe"), t.Null()], { description: "ACP's provider value, or absent; any other value is 400 INVALID_ARGUMENT on $.payment_data.provider (the token is this service's sandbox one)." })),
        }),
        buyer: t.Optional(Any),
      },
      { ...Open, description: `${V2025}: ACP complete request.` },
    ),
    t.Object(
      { payment_data: obj({ handler_id: t.Optional(Str), instrument: obj({ type: Str, credential: obj({ type: Str, token: t.String({ description: "Sandbox test token (tok_approve, …)" }) }) }) }), buyer: t.Optional(Any) },
      { ...Open, description: `${V2026}: ACP complete request.` },
    ),
  ],
  { description: "ACP complete request, in the shape of the request's API-Version." },
);
export const UcpCreateBody = t.Object(
  {
    line_items: t.Array(UcpLineItem, { minItems: 1 }),
    buyer: t.Optional(Any),
    fulfillment: t.Optional(Any),
    currency: t.Optional(t.String({ description: "ISO 4217, any case; must be the items' currency (else 400 INVALID_ARGUMENT on $.currency, nothing kept)." })),
  },
  { ...Open, description: "UCP create checkout request." },
);
export const UcpUpdateBody = t.Object(
  {
    line_items: t.Optional(t.Array(UcpLineItem, { minItems: 1 })),
    buyer: t.Optional(Any),
    fulfillment: t.Optional(Any),
    currency: t.Optional(
      t.String({
        description:
          "ISO 4217, any case; must be the currency of the checkout's items after the update (new line_items' or else the current ones'); " +
          "without it, new line_items must be in the currency the create asked for, if it asked for one. Else 400 INVALID_ARGUMENT on $.currency, nothing changed.",
      }),
    ),
  },
  { ...Open, description: "UCP update checkout request: new line_items (a new cart), buyer, fulfillment (methods[0].destinations[0] {address_country, postal_code}, groups[].selected_option_id)." },
);
export const UcpCompleteBody = t.Object(
  { payment: obj({ instruments: t.Array(obj({ handler_id: t.Optional(Str), credential: obj({ token: t.String({ description: "Sandbox test token (tok_approve, …)" }) }) }), { minItems: 1 }) }) },
  { ...Open, description: "UCP complete request: the first instrument's credential token pays." },
);
export const Ap2PayBody = t.Object(
  {
    cart_id: t.String({ format: "uuid" }),
    payment_mandate: obj({ payment_mandate_contents: Any, user_authorization: Str }, "The AP2 PaymentMandate, signed by a user key registered on the agent key (PUT /agent-keys/{id}/ap2-user-keys/{kid})."),
    intent_mandate: t.Optional(Any),
    cart_mandate: t.Optional(Any),
  },
  { ...Open, description: "AP2 payment request." },
);
export const EmptyBody = t.Object({}, { ...Open, description: "No fields; an empty body is accepted." });
