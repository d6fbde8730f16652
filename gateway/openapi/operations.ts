/**
 * What each operation answers, keyed by `METHOD /openapi/path`: its success answers (status and schema, for routes
 * that declare none), the error codes of its own (read from the route and the actor messages it sends), and request
 * bodies the generated document gets wrong. The codes every route of a kind shares (401, 403, 429, 413, 400, 503)
 * are added by rule in complete.ts, not repeated here.
 *
 * Keep it true: a new route needs a row (test/http/openapi-complete.test.ts fails on an operation without a 2xx
 * schema), and a code a route starts returning belongs in its row (the same test replays error requests and checks
 * that every (status, code) answered is listed).
 */
import type { TObject } from "@sinclair/typebox";
import { t, type TSchema } from "elysia";
import { WalletNetworkField } from "../rest/wallet.ts";
import * as M from "./models.ts";
import { HumanOrderInput, InventoryItemInput } from "../../actors/store/ingest.ts";
import { ProductInput } from "../../actors/store/schemas.ts";
import { CatalogBody, InventoryBody, OrdersBody } from "../rest/merchant-api.ts";

/**
 * A batch body (one of merchant-api.ts's, whose `field` is an array of `t.Unknown()` items judged one by one) with
 * that array's items described by `item` (its own bounds and description kept): documentation only, the route
 * keeps its schema.
 */
function withItems(body: TObject, field: string, item: TSchema): TObject {
  const { items: _, ...bounds } = body.properties[field] as TSchema;
  return t.Object({ ...body.properties, [field]: t.Array(item, bounds) }, { additionalProperties: false });
}

export interface SuccessDoc {
  status: number;
  description: string;
  /** JSON schema of the body; omitted for a redirect. */
  schema?: TSchema;
  /** Media type of the body (default application/json). */
  contentType?: string;
  /** A redirect's Location header. */
  location?: string;
  /** This schema replaces the route's own (which is true but says less, e.g. no enums). */
  replaces?: true;
}

export interface OperationDoc {
  /** Answers the route gives on success (2xx, or a redirect). A status the route's own schema already documents is kept. */
  success: SuccessDoc[];
  /** Codes of this route by status, beyond the rules (complete.ts `ruleCodes`). */
  errors?: Record<number, readonly string[]>;
  /** Replaces the generated request body (an `AnyBody` route, or an optional body shown as required and empty). */
  body?: { schema: TSchema; required: boolean; contentType?: string };
  /** The error body on this route's own failures, when not the error envelope (OAuth and the protocol bridge). */
  errorSchema?: TSchema;
  /** Error statuses answered with an HTML page for a human (no `code`), with what they mean (beside JSON codes a rule may add). */
  htmlErrors?: Record<number, string>;
  /** Overrides of the route's `detail` (route files belong to other work; the document is completed here). */
  security?: Record<string, string[]>[];
  /** Added to the operation's description (after the route's own words): what the route file's `detail` does not say. */
  notes?: string;
  /**
   * The route reads ACP's `API-Version` request header (gateway/bridge/acp.ts `acpVersioned`): "always" on the ACP
   * routes, "acp" on POST /agent/checkout (only a request bridged as ACP). complete.ts documents the request header,
   * the echoed response header and the 400 `unsupported_api_version`.
   */
  acpApiVersion?: "always" | "acp";
}

/** The body of a route that takes none (gateway/rest/optional-body.ts `noBody`): nothing or `{}`, documented closed. */
const NO_BODY = { schema: t.Object({}, { description: "No fields: send no body or {}; any key is 400." }), required: false };
const ok = (schema: TSchema, description = "Success.", status = 200): SuccessDoc => ({ status, description, schema: M.envelope(schema) });
const created = (schema: TSchema, description = "Created.") => ok(schema, description, 201);
const list = (item: TSchema, description = "Success.") => ({ status: 200, description, schema: M.listEnvelope(item) });
const raw = (schema: TSchema, description: string, status = 200, contentType = "application/json"): SuccessDoc => ({ status, description, schema, contentType });

/** Codes a cart answers to any message naming it (actors/cart). */
const CART_READ = ["CART_NOT_FOUND"] as const;
/** Pricing a cart (create, preview, checkout): actors/cart/totals.ts and the product lookups. */
const PRICING = ["INVALID_ARGUMENT", "INSUFFICIENT_INPUT", "CURRENCY_MISMATCH"] as const;
/** A preview: pricing, the shipping pick, eligibility and the merchant's gates (actors/cart/index.ts). */
const PREVIEW_400 = [...PRICING, "MISSING_REQUIRED_ARGUMENT", "PAYMENT_METHOD_NOT_CONFIGURED"];
const PREVIEW_403 = ["NOT_ELIGIBLE", "NATIVE_CHECKOUT_REQUIRED", "CHECKOUT_BLOCKED_BY_POLICY"];
const PREVIEW_404 = [...CART_READ, "PRODUCT_NOT_FOUND", "CHECKOUT_SESSION_NOT_FOUND"];
const PREVIEW_409 = ["CART_NOT_MUTABLE", "CHECKOUT_STATUS_INVALID", "PRECONDITION_NOT_MET", "CHECKOUT_ALREADY_IN_PROGRESS", "SESSION_INACTIVE", "conflict"];
const PREVIEW_503 = ["ENFORCEMENT_UNAVAILABLE"];

/**
 * The merchant's repeated decisions (audit D-1, docs/checkout.md "A merchant's repeated decision answers the decision
 * made"): the merchant routes take no idempotency key, so a retry after a lost answer is the same request again.
 */
const MERCHANT_REPEAT_MOVE =
  "Safe to repeat: a move to the status the order already has, when the merchant's own move put it there, answers 200 as the first call did " +
  "(a cancel of a paid or fulfilled order with the refund it created, driven to the processor first when it is still APPROVED, e.g. after a lost answer), " +
  "with no second history event or webhook. A move the order is past, a fulfilment move of a canceled order, and a cancel of an order canceled " +
  "by the agent, by its checkout's expiry or through the buyer's checkout session stay 409 conflict.";
const MERCHANT_REPEAT_DECISION =
  "Safe to repeat: approve of a REFUNDED refund and reject of a refund a merchant rejected answer 200 with the refund as it is " +
  "(approve of an APPROVED refund drives it to the processor again, which refunds once per refund). " +
  "The other decision on a decided refund stays 409 conflict with details.status: approve of a REJECTED refund, reject of an APPROVED or REFUNDED one, " +
  "reject of a request the order's cancel superseded.";

/** Merchant back-office routes: the store must be the caller's (operators see every store). */
const OWNED_STORE = { 404: ["store_not_found"] } as const;

const bridgeErrors = {
  400: ["MISSING_REQUIRED_ARGUMENT", "INVALID_ARGUMENT", ...PRICING, "PAYMENT_METHOD_NOT_CONFIGURED"],
  402: ["PAYMENT_DECLINED", "PAYMENT_FAILED_ROLLED_BACK", "PAYMENT_NOT_APPROVED"],
  403: ["NOT_ELIGIBLE", "NATIVE_CHECKOUT_REQUIRED", "CHECKOUT_BLOCKED_BY_POLICY", "MANDATE_LIMIT_EXCEEDED"],
  404: ["CHECKOUT_SESSION_NOT_FOUND", "CART_NOT_FOUND", "PRODUCT_NOT_FOUND"],
  409: ["SESSION_INACTIVE", "CHECKOUT_STATUS_INVALID", "IDEMPOTENCY_KEY_CONFLICT", "CHECKOUT_ALREADY_IN_PROGRESS", "CART_NOT_MUTABLE", "PRECONDITION_NOT_MET", "STATE_RECONFIRMATION_REQUIRED", "STATE_EXECUTION_BLOCKED", "PAYMENT_CAPTURED_FINALIZATION_FAILED", "PAYMENT_AMOUNT_MISMATCH"],
  503: ["ENFORCEMENT_UNAVAILABLE", "UPSTREAM_UNAVAILABLE"],
} as const;
const acpErr = M.AcpError;
/** An ACP route: the API-Version it reads and the refusal of a version not served (complete.ts documents both). */
// 2026-04-17 names the bridge's own Idempotency-Key refusals idempotency_conflict and idempotency_in_flight (gateway/bridge/acp-2026-04-17.ts)
const ACP_ROUTE = {
  errors: { ...bridgeErrors, 400: [...bridgeErrors[400], "unsupported_api_version"], 409: [...bridgeErrors[409], "idempotency_conflict", "idempotency_in_flight"] },
  errorSchema: acpErr,
  acpApiVersion: "always",
} as const;
const ucpErr = M.UcpError;

export const OPERATIONS: Record<string, OperationDoc> = {
  // ---------------------------------------------------------------------------------------------- operations
  "GET /api/v1/health": { success: [] },
  "GET /api/v1/agent/docs": { success: [{ status: 302, description: "Redirect to the OpenAPI document.", location: "/api/v1/openapi.json" }] },
  "GET /docs/errors": { success: [raw(M.Html, "The error code reference (HTML).", 200, "text/html")] },

  // ---------------------------------------------------------------------------------------------- accounts
  "POST /api/v1/auth/login": { success: [], errors: { 401: ["unauthorized"] } },
  "POST /api/v1/agent-keys": { success: [], errors: { 403: ["tier_not_in_plan"], 409: ["conflict", "too_many_keys"] } },
  "GET /api/v1/agent-keys": { success: [] },
  "DELETE /api/v1/agent-keys/{id}": { body: NO_BODY, success: [], errors: { 404: ["not_found"] } },
  // 400 MISSING_REQUIRED_ARGUMENT: the proof-of-possession challenge (details.nonce, one use); 409 conflict: another
  // account holds the key with a proof (gateway/bridge/ap2-keys.ts, docs/protocols.md AP2)
  "PUT /api/v1/agent-keys/{id}/ap2-user-keys/{kid}": { success: [ok(M.Ap2UserKey, "The AP2 user key as registered.")], errors: { 400: ["INVALID_ARGUMENT", "MISSING_REQUIRED_ARGUMENT"], 404: ["not_found"], 409: ["conflict"] } },
  "DELETE /api/v1/agent-keys/{id}/ap2-user-keys/{kid}": { body: NO_BODY, success: [ok(M.Ap2UserKeyDeleted, "Removed.")], errors: { 404: ["not_found"] } },
  "GET /api/v1/agent-keys/{id}/ap2-user-keys": { success: [list(M.Ap2UserKey, "The AP2 user keys of the agent key.")], errors: { 404: ["not_found"] } },

  // ---------------------------------------------------------------------------------------------- trust
  "GET /api/v1/trust/methodology": { success: [] },
  "GET /api/v1/stores/{slug}/trust-score": { success: [], errors: { 404: ["store_not_found"] } },
  "GET /api/v1/agent/merchants/{slug}/trust-explanation": { success: [ok(M.TrustExplanation, "Why the merchant scores what it does.")], errors: { 404: ["store_not_found"] } },
  "POST /api/v1/trust/appeal": { success: [created(M.TrustAppeal, "The appeal is recorded.")], errors: { 403: ["forbidden"], 404: ["store_not_found"], 409: ["conflict"] } },
  "GET /api/v1/trust/appeals": { success: [list(M.TrustAppealRow, "The store's appeals, newest first, with the decision and note once resolved.")], errors: { 403: ["forbidden"], 404: ["store_not_found"] } },
  "POST /api/v1/admin/trust/recompute": { success: [ok(M.Recompute, "The recomputed scores.")], body: { schema: t.Object({ slug: t.Optional(t.String({ description: "One store; omitted: every store." })) }), required: false }, errors: { 404: ["store_not_found"] } },
  "POST /api/v1/admin/trust/keys/rotate": { success: [ok(M.KeyRotation, "The new signing key.")], body: NO_BODY },
  "GET /api/v1/admin/trust/alerts": { success: [list(M.TrustAlert, "Anomaly alerts.")] },
  "POST /api/v1/admin/trust/alerts/{id}/resolve": { success: [ok(M.TrustAlert, "The resolved alert.")], errors: { 404: ["not_found"], 409: ["conflict"] } },
  "GET /api/v1/admin/trust/appeals": { success: [list(M.TrustAppealRow, "Appeals, oldest due first.")] },
  "POST /api/v1/admin/trust/appeals/{id}/resolve": { success: [ok(M.TrustAppealRow, "The resolved appeal.")], errors: { 404: ["not_found"], 409: ["conflict"] } },

  // ---------------------------------------------------------------------------------------------- OAuth
  "GET /api/v1/oauth/jwks": { success: [raw(M.Jwks, "The public keys that verify access tokens.")] },
  "POST /api/v1/oauth/register": {
    success: [raw(M.OAuthClient, "The registered client.", 201)],
    errors: { 400: ["invalid_redirect_uri", "invalid_client_metadata"], 401: ["invalid_client"], 409: ["too_many_clients"] },
    errorSchema: M.OAuthErrorBody,
    body: { schema: M.OAuthRegisterBody, required: true },
  },
  "GET /api/v1/oauth/authorize": {
    success: [raw(M.Html, "The consent page (HTML).", 200, "text/html")],
    htmlErrors: {
      400: "An unknown client or redirect URI, or an invalid request (response_type, PKCE, scope, resource): an HTML page for the human, never a redirect (clients are self-registered; RFC 9700 §4.11.2).",
      503: "The client's metadata document cannot be fetched right now (too many fetches in flight for the caller's address or the gateway): an HTML page, with Retry-After.",
    },
  },
  "POST /api/v1/oauth/authorize": {
    success: [{ status: 302, description: "To the client's redirect_uri with `code` (or `error=access_denied`, or an OAuth error for a known client)." }],
    htmlErrors: {
      400: "An unknown client or redirect URI (HTML page).",
      401: "Wrong e-mail or password: the consent page again (HTML).",
      403: "The form's CSRF token is missing or stale (HTML page).",
      503: "The client's metadata document cannot be fetched right now (HTML page, Retry-After).",
    },
    body: { schema: M.OAuthConsentBody, required: true, contentType: "application/x-www-form-urlencoded" },
  },
  "POST /api/v1/oauth/token": {
    success: [raw(M.OAuthToken, "Access (and refresh) token.")],
    errors: { 400: ["invalid_request", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_target"], 401: ["invalid_client"], 503: ["temporarily_unavailable"] },
    errorSchema: M.OAuthErrorBody,
    body: { schema: M.OAuthTokenBody, required: true, contentType: "application/x-www-form-urlencoded" },
  },
  "POST /api/v1/oauth/revoke": {
    success: [raw(M.OAuthRevoked, "Revoked (or unknown).")],
    errors: { 400: ["invalid_request"], 401: ["invalid_client"], 503: ["temporarily_unavailable"] },
    errorSchema: M.OAuthErrorBody,
    body: { schema: M.OAuthRevokeBody, required: true, contentType: "application/x-www-form-urlencoded" },
  },
  // taking OAuth credentials out of service, with a user session, in the envelope (gateway/oauth/manage.ts; audit X-1)
  "GET /api/v1/oauth/clients": { success: [] },
  "DELETE /api/v1/oauth/clients/{client_id}": { body: NO_BODY, success: [], errors: { 404: ["not_found"] } },
  "POST /api/v1/oauth/clients/{client_id}/secret": { body: NO_BODY, success: [], errors: { 404: ["not_found"], 409: ["conflict"] } },
  "GET /api/v1/oauth/grants": { success: [] },
  "DELETE /api/v1/oauth/grants/{id}": { body: NO_BODY, success: [], errors: { 404: ["not_found"] } },
  // an operator over every account's OAuth clients (gateway/oauth/admin.ts)
  "GET /api/v1/admin/oauth/clients": { success: [], errors: { 404: ["not_found"] } },
  "DELETE /api/v1/admin/oauth/blocked-clients/{client_id}": { body: NO_BODY, success: [], errors: { 404: ["not_found"] } },

  // ---------------------------------------------------------------------------------------------- catalog
  "POST /api/v1/agent/search": { success: [ok(M.Search, "Ranked products with why_ranked, page meta and queryMeta.")] },
  "GET /api/v1/agent/products/{id}": { success: [ok(M.Product, "Product detail.")], errors: { 404: ["not_found"] } },
  "GET /api/v1/agent/availability/{id}": { success: [ok(M.Availability, "Stock and data freshness.")], errors: { 404: ["not_found"] } },
  "GET /api/v1/agent/products/{id}/price-history": { success: [ok(M.PriceHistory, "Price points and trend.")], errors: { 404: ["not_found"] } },
  "GET /api/v1/agent/products/{id}/sustainability": { success: [ok(M.Sustainability, "ESG score and its components.")], errors: { 404: ["not_found"] } },
  "POST /api/v1/agent/recommendations": { success: [ok(M.Recommendations, "Similar products.")], errors: { 404: ["not_found"] } },
  "POST /api/v1/agent/negotiate": { success: [ok(M.Negotiation, "The merchant's answer. Accepted: until expiresAt the key's cart containing the product is priced at negotiatedPrice for every unit of its line, for one order (message says how).")], errors: { 403: ["FEATURE_NOT_ENABLED", "NOT_ELIGIBLE"], 404: ["not_found"], 409: ["conflict"] } },
  "POST /api/v1/agent/shipping-estimate": { success: [ok(M.ShippingEstimate, "Cost and delivery window (shippable false when the merchant does not ship there).")], errors: { 404: ["not_found"] } },
  // Reserved: the route always answers 501 not_implemented, so no success answer is documented (a generated client
  // must not expect one; test/http/openapi-complete.test.ts allows this one operation without a 2xx).
  "POST /api/v1/agent/search-by-image": {
    success: [],
    errors: { 501: ["not_implemented"] },
    body: { schema: t.Object({ imageUrl: t.String({ format: "uri", description: "The image to search by (spec)." }) }), required: true },
  },
  "POST /api/v1/agent/compare": { success: [ok(M.Comparison, "Side-by-side comparison with a recommendation.")], errors: { 400: ["INSUFFICIENT_INPUT"] } },

  // ---------------------------------------------------------------------------------------------- merchants
  // the same shape as the route's own 200 (gateway/rest/merchants.ts), with the spec's enums
  "GET /api/v1/merchants": {
    success: [{ status: 200, description: "Eligible merchants (MerchantSummary), by slug, with page meta.", schema: M.MerchantDirectory, replaces: true }],
  },
  "GET /api/v1/agent/merchants/{slug}": { success: [ok(M.MerchantProfile, "Merchant profile.")], errors: { 404: ["store_not_found"] } },
  "GET /api/v1/agent/merchants/{slug}/protocols": { success: [ok(M.Protocols, "Payment protocols, the preferred one and the MCP endpoint.")], errors: { 404: ["store_not_found"] } },
  "GET /api/v1/agent/merchants/{slug}/return-policy": { success: [ok(M.ReturnPolicy, "Structured return policy.")], errors: { 404: ["store_not_found"] } },

  // ---------------------------------------------------------------------------------------------- merchant back office
  // the routes take their items as t.Unknown() (each judged on its own: per-item errors), so the document names
  // each item's schema here (what the store actor checks it against)
  "PUT /api/v1/merchant/stores/{slug}/catalog": {
    body: { schema: withItems(CatalogBody, "products", ProductInput), required: true },
    success: [ok(M.IngestResult, "Ingestion results.")],
    errors: OWNED_STORE,
  },
  "PATCH /api/v1/merchant/stores/{slug}/inventory": {
    body: { schema: withItems(InventoryBody, "items", InventoryItemInput), required: true },
    success: [ok(M.InventoryResult, "Stock levels set.")],
    errors: OWNED_STORE,
  },
  "POST /api/v1/merchant/stores/{slug}/orders": {
    body: { schema: withItems(OrdersBody, "orders", HumanOrderInput), required: true },
    success: [created(M.RecordedOrders, "The orders are recorded.")],
    errors: OWNED_STORE,
  },
  "GET /api/v1/merchant/stores/{slug}/orders": { success: [ok(M.MerchantOrders, "The store's orders.")], errors: OWNED_STORE },
  "GET /api/v1/merchant/stores/{slug}/orders/{id}": { success: [ok(M.MerchantOrder, "One order with items, events and refunds.")], errors: { 404: ["store_not_found", "ORDER_NOT_FOUND"] } },
  "POST /api/v1/merchant/stores/{slug}/orders/{id}/status": {
    success: [ok(M.OrderStatusChange, "The order after the move; for a repeat of the merchant's own move, the order as that move left it (the same answer again).")],
    notes: MERCHANT_REPEAT_MOVE,
    errors: { 400: ["INVALID_ARGUMENT"], 403: ["forbidden"], 404: ["store_not_found", "ORDER_NOT_FOUND"], 409: ["conflict", "ORDER_NOT_CANCELLABLE", "STATE_EXECUTION_BLOCKED"] },
  },
  "POST /api/v1/merchant/stores/{slug}/orders/{id}/reconcile": {
    success: [ok(M.Reconciled, "The capture accepted or refunded; for a repeat of the decision made, that decision's answer again.")],
    notes:
      "Safe to repeat: the decision the merchant made (a retry after a lost answer, a double click) answers 200 again and writes nothing: " +
      "the order's status as it stands now, the capture reference and refund of the decision, and the checkout_status and cart_status it left. " +
      "The other decision on an order already resolved is 409 conflict with details.resolved_action.",
    errors: { 404: ["store_not_found", "ORDER_NOT_FOUND", "CHECKOUT_SESSION_NOT_FOUND"], 409: ["conflict"], 400: ["PAYMENT_METHOD_NOT_CONFIGURED"], 502: ["UPSTREAM_ERROR"] },
  },
  "GET /api/v1/merchant/stores/{slug}/policies": { success: [ok(M.DeclaredPolicies, "The declared policies and negotiation rules, as PUT takes them.")], errors: OWNED_STORE },
  "PUT /api/v1/merchant/stores/{slug}/policies": { success: [ok(M.Policies, "The policies now in force.")], errors: OWNED_STORE },
  "GET /api/v1/merchant/stores/{slug}/shipping-zones": { success: [ok(M.DeclaredShippingZones, "The shipping zones, as PUT takes them.")], errors: OWNED_STORE },
  "PUT /api/v1/merchant/stores/{slug}/shipping-zones": { success: [ok(M.ShippingZones, "How many zones are now in force.")], errors: OWNED_STORE },
  "PUT /api/v1/merchant/stores/{slug}/mcp-tools": { success: [ok(M.McpTools, "The enabled MCP tools.")], errors: OWNED_STORE },
  "PUT /api/v1/merchant/stores/{slug}/payment-methods": { success: [ok(M.PaymentMethods, "The accepted payment methods.")], errors: OWNED_STORE },
  "GET /api/v1/merchant/stores/{slug}/coupons": { success: [list(M.Coupon, "The store's coupons.")], errors: OWNED_STORE },
  "POST /api/v1/merchant/stores/{slug}/coupons": { success: [ok(M.Coupon, "The coupon was updated."), created(M.Coupon, "The coupon was created.")], errors: OWNED_STORE },
  "DELETE /api/v1/merchant/stores/{slug}/coupons/{code}": { body: NO_BODY, success: [ok(t.Object({}, { additionalProperties: true }), "The coupon is deactivated.")], errors: { 404: ["store_not_found", "not_found"] } },
  "GET /api/v1/merchant/stores/{slug}/refunds": { success: [list(M.Refund, "Refund requests.")], errors: OWNED_STORE },
  "POST /api/v1/merchant/stores/{slug}/refunds/{id}/{decision}": {
    body: NO_BODY,
    success: [ok(M.RefundDecision, "The refund after the decision (REFUNDED, REJECTED or FAILED); for a repeat of a decision already made, the refund as it is.")],
    notes: MERCHANT_REPEAT_DECISION,
    errors: { 404: ["store_not_found", "not_found", "ORDER_NOT_FOUND"], 409: ["conflict", "ORDER_NOT_CANCELLABLE"] },
  },
  "GET /api/v1/merchant/stores/{slug}/allowlist": { success: [list(M.AllowlistEntry, "Agent keys bound to the store.")], errors: OWNED_STORE },
  "POST /api/v1/merchant/stores/{slug}/allowlist/{keyId}": { success: [ok(M.AllowlistSet, "The key's status at the store.")], errors: { 400: ["INVALID_ARGUMENT"], 404: ["store_not_found", "not_found"] } },
  "POST /api/v1/merchant/stores/{slug}/customer-tokens": { success: [created(M.CustomerToken, "A customer identity token (send as X-Customer-Identity).")], errors: OWNED_STORE, security: [{ bearer: [] }] },

  // ---------------------------------------------------------------------------------------------- webhooks
  "POST /api/v1/merchant/stores/{slug}/webhooks": { success: [], errors: { 404: ["store_not_found"], 409: ["conflict"] } },
  "GET /api/v1/merchant/stores/{slug}/webhooks": { success: [], errors: OWNED_STORE },
  "DELETE /api/v1/merchant/stores/{slug}/webhooks/{id}": { body: NO_BODY, success: [], errors: { 404: ["store_not_found", "not_found"] } },
  "POST /api/v1/merchant/stores/{slug}/webhooks/{id}/rotate-secret": {
    success: [],
    errors: { 404: ["store_not_found", "not_found"] },
    body: {
      schema: t.Object({ overlapSeconds: t.Optional(t.Integer({ minimum: 0, maximum: 7 * 86400, description: "How long the old secret keeps signing too (default 86400 = 24 h)." })) }, { description: "Optional; an empty body is accepted." }),
      required: false,
    },
  },
  // session 15 (6e58c3c): an endpoint the service disabled (5 days failing) or the merchant did; both idempotent
  "POST /api/v1/merchant/stores/{slug}/webhooks/{id}/enable": { success: [], body: NO_BODY, errors: { 404: ["store_not_found", "not_found"] } },
  "POST /api/v1/merchant/stores/{slug}/webhooks/{id}/disable": { success: [], body: NO_BODY, errors: { 404: ["store_not_found", "not_found"] } },
  "GET /api/v1/merchant/stores/{slug}/webhooks/{id}/deliveries": { success: [], errors: { 404: ["store_not_found", "not_found"] } },
  "POST /api/v1/merchant/stores/{slug}/webhooks/{id}/deliveries/{deliveryId}/redeliver": { body: NO_BODY, success: [], errors: { 404: ["store_not_found", "not_found"], 409: ["conflict"] } },

  // ---------------------------------------------------------------------------------------------- admin search
  "GET /api/v1/admin/search/settings": { success: [ok(M.SearchSettings, "Current search settings.")] },
  "PUT /api/v1/admin/search/settings": { success: [ok(M.SearchSettings, "The settings now in force.")], errors: { 409: ["conflict"] } },
  "POST /api/v1/admin/search/reindex": { body: NO_BODY, success: [ok(M.Reindex, "The index was rebuilt.")] },
  "PUT /api/v1/admin/users/plan": { success: [], errors: { 404: ["not_found"] } },
  "GET /api/v1/admin/users/plan": { success: [], errors: { 404: ["not_found"] } },
  "GET /api/v1/admin/users/agent-keys": { success: [], errors: { 404: ["not_found"] } },
  "DELETE /api/v1/admin/agent-keys/{id}": { body: NO_BODY, success: [], errors: { 404: ["not_found"] } },

  // ---------------------------------------------------------------------------------------------- cart
  // MISSING_REQUIRED_ARGUMENT: a line of a product with variants names none (actors/cart/variant-line.ts).
  "POST /api/v1/agent/cart": { success: [created(M.Cart, "The cart.")], errors: { 400: [...PRICING, "MISSING_REQUIRED_ARGUMENT"], 404: ["PRODUCT_NOT_FOUND"] } },
  "GET /api/v1/agent/cart/{id}": { success: [ok(M.Cart, "The cart.")], errors: { 404: CART_READ } },
  "POST /api/v1/agent/apply-coupon": { success: [ok(M.CouponResult, "Whether the coupon applied (applied false with a reason is an answer, not an error).")], errors: { 400: ["INVALID_ARGUMENT"], 404: CART_READ, 409: ["CART_NOT_MUTABLE", "conflict"] } },
  "POST /api/v1/agent/cart/apply-coupon": { success: [ok(M.CouponResult, "Whether the coupon applied (applied false with a reason is an answer, not an error).")], errors: { 400: ["INVALID_ARGUMENT"], 404: CART_READ, 409: ["CART_NOT_MUTABLE", "conflict"] } },

  // ---------------------------------------------------------------------------------------------- checkout
  // The link's {token} is the buyer's capability: a wrong one is the same 404 not_found as an unknown intent (audit I-1).
  "GET /api/v1/sandbox/payments/{intentId}/{token}": {
    success: [raw(M.Html, "The buyer's approval page (HTML).", 200, "text/html")],
    notes:
      "Once the payment's checkout ended unpaid (canceled, expired or failed) the link refuses with 409 conflict (details.state voided, " +
      "reason checkout_ended): an HTML page saying the checkout is no longer payable when the client accepts text/html, else the error envelope.",
    errors: { 404: ["not_found"], 409: ["conflict"] },
  },
  "POST /api/v1/sandbox/payments/{intentId}/{token}/{decision}": {
    body: NO_BODY,
    success: [ok(M.SandboxDecision, "The decision is recorded (a JSON post)."), { status: 303, description: "A form post from the approval page: back to the page." }],
    errors: { 404: ["not_found"], 409: ["conflict"] },
  },
  "POST /api/v1/agent/checkout/preview": { success: [ok(M.Preview, "The checkout session and what it will cost.")], errors: { 400: PREVIEW_400, 403: PREVIEW_403, 404: PREVIEW_404, 409: PREVIEW_409, 503: PREVIEW_503 } },
  "POST /api/v1/agent/checkout/{sessionId}/cancel": {
    body: NO_BODY,
    success: [ok(M.SessionCanceled, "The session is canceled; the cart is open again.")],
    errors: { 404: ["CHECKOUT_SESSION_NOT_FOUND", "CART_NOT_FOUND"], 409: ["CHECKOUT_STATUS_INVALID", "CHECKOUT_ALREADY_IN_PROGRESS", "SESSION_INACTIVE", "conflict"] },
  },
  "POST /api/v1/agent/checkout": {
    success: [
      ok(M.CheckoutCompleted, "COMPLETED: the order(s), paid."),
      raw(M.UserActionRequired, "user_action_required: a human must approve the payment at details.approval_url, then call again with the same checkout_session_id and idempotency_key.", 202),
      raw(M.X402Partial, "x402 rail: some stores of a multi-store cart settled, some did not (per-store results).", 207),
      raw(t.Union([M.AcpSession, M.UcpCheckout]), "Another protocol's create (x-protocol acp or ucp, or its body shape): that protocol's checkout session, in its own shape.", 201),
    ],
    errorSchema: t.Union([M.AcpError, M.UcpError]),
    acpApiVersion: "acp",
    errors: {
      401: ["AGENT_TOKEN_INVALID"],
      400: [...PREVIEW_400, "CURRENCY_MISMATCH", "unsupported_api_version"],
      402: ["PAYMENT_DECLINED", "PAYMENT_FAILED_ROLLED_BACK", "PAYMENT_NOT_APPROVED", "payment_required"],
      403: [...PREVIEW_403, "policy_blocked", "MANDATE_LIMIT_EXCEEDED"],
      404: [...PREVIEW_404, "not_found"],
      // x402: STORE_NOT_CONFIGURED when the merchant's own facilitator is not allowed (details.reason facilitator_not_public)
      // or has no v1 name for its network; UPSTREAM_RESPONSE_INVALID when the facilitator's answer is unusable (a
      // redirect, not a verify/settle answer, too long; docs/x402.md "Calling a facilitator"; audit B-4, session 17)
      409: [...PREVIEW_409, "IDEMPOTENCY_KEY_CONFLICT", "STATE_RECONFIRMATION_REQUIRED", "STATE_EXECUTION_BLOCKED", "PAYMENT_CAPTURED_FINALIZATION_FAILED", "PAYMENT_AMOUNT_MISMATCH", "STORE_NOT_CONFIGURED"],
      500: ["INTERNAL_ERROR"],
      502: ["UPSTREAM_ERROR", "UPSTREAM_RESPONSE_INVALID"],
      503: [...PREVIEW_503, "UPSTREAM_UNAVAILABLE"],
    },
  },

  // ---------------------------------------------------------------------------------------------- orders
  "GET /api/v1/agent/orders/{id}": { success: [ok(M.Order, "The order with items, events and refunds.")], errors: { 404: ["ORDER_NOT_FOUND"] } },
  "POST /api/v1/agent/orders/{orderId}/cancel": {
    success: [ok(M.OrderCanceled, "The order is canceled.")],
    errors: { 400: ["INVALID_ARGUMENT"], 404: ["ORDER_NOT_FOUND", "CHECKOUT_SESSION_NOT_FOUND", "CART_NOT_FOUND"], 409: ["ORDER_NOT_CANCELLABLE", "CHECKOUT_STATUS_INVALID", "CHECKOUT_ALREADY_IN_PROGRESS", "conflict"] },
    body: { schema: t.Object({ reason: t.Optional(t.String({ maxLength: 255 })) }, { description: "Optional; an empty body is accepted." }), required: false },
  },
  "POST /api/v1/agent/orders/{orderId}/refund": {
    success: [created(M.Refund, "The refund request (PENDING_APPROVAL until the merchant decides).")],
    // 403 NOT_ELIGIBLE (details.reason refund_by_merchant): an order paid over x402, whose money the service cannot pull back
    errors: { 400: ["INVALID_ARGUMENT"], 403: ["NOT_ELIGIBLE"], 404: ["ORDER_NOT_FOUND"], 409: ["IDEMPOTENCY_KEY_CONFLICT", "ORDER_NOT_CANCELLABLE", "RETURN_WINDOW_EXPIRED", "conflict"] },
    body: {
      schema: t.Object(
        {
          amount: t.Optional(
            t.Integer({
              minimum: 1,
              description: "Integer cents (minor units), e.g. 150 = 1.50; omitted: the whole refundable amount. The answer's `amount` is in major units (1.5), its `amount_minor` in cents (150).",
            }),
          ),
          reason: t.Optional(t.String({ maxLength: 255 })),
          idempotency_key: t.Optional(t.String({ description: "UUID v4; or the Idempotency-Key header." })),
        },
        { description: "Optional; an empty body asks for a full refund." },
      ),
      required: false,
    },
  },

  // ---------------------------------------------------------------------------------------------- wallet
  "POST /api/v1/agent/wallet/provision": {
    success: [],
    errors: { 409: ["conflict"] },
    // The route's own field (enum and default, audit S-4); the generated body is shown as required.
    body: { schema: t.Object({ network: t.Optional(WalletNetworkField) }, { description: "Optional; an empty body is accepted." }), required: false },
  },
  "GET /api/v1/agent/wallet": { success: [], errors: { 404: ["not_found"] } },

  // ---------------------------------------------------------------------------------------------- protocol bridge
  "POST /api/v1/agent/acp/checkout_sessions": { ...ACP_ROUTE, success: [raw(M.AcpSession, "The ACP checkout session.", 201)], body: { schema: M.AcpCreateBody, required: true } },
  "GET /api/v1/agent/acp/checkout_sessions/{id}": { ...ACP_ROUTE, success: [raw(M.AcpSession, "The ACP checkout session.")], errors: { 400: ["unsupported_api_version"], 404: ["CHECKOUT_SESSION_NOT_FOUND"] } },
  "POST /api/v1/agent/acp/checkout_sessions/{id}": { ...ACP_ROUTE, success: [raw(M.AcpSession, "The updated ACP checkout session.")], body: { schema: M.AcpUpdateBody, required: true } },
  "POST /api/v1/agent/acp/checkout_sessions/{id}/complete": {
    ...ACP_ROUTE,
    success: [raw(M.AcpSession, "completed with the order, or in_progress with the buyer's approval link in an info message (markdown, the link as <url>).")],
    body: { schema: M.AcpCompleteBody, required: true },
  },
  "POST /api/v1/agent/acp/checkout_sessions/{id}/cancel": { ...ACP_ROUTE, success: [raw(M.AcpSession, "The canceled ACP checkout session.")], body: { schema: M.EmptyBody, required: false } },
  "POST /api/v1/agent/ucp/checkout-sessions": { success: [raw(M.UcpCheckout, "The UCP checkout.", 201)], errors: bridgeErrors, body: { schema: M.UcpCreateBody, required: true }, errorSchema: ucpErr },
  "PUT /api/v1/agent/ucp/checkout-sessions/{id}": { success: [raw(M.UcpCheckout, "The updated UCP checkout.")], errors: bridgeErrors, body: { schema: M.UcpUpdateBody, required: true }, errorSchema: ucpErr },
  "GET /api/v1/agent/ucp/checkout-sessions/{id}": { success: [raw(M.UcpCheckout, "The UCP checkout.")], errors: { 404: ["CHECKOUT_SESSION_NOT_FOUND"] }, errorSchema: ucpErr },
  "POST /api/v1/agent/ucp/checkout-sessions/{id}/complete": { success: [raw(M.UcpCheckout, "completed, or requires_escalation with continue_url.")], errors: bridgeErrors, body: { schema: M.UcpCompleteBody, required: true }, errorSchema: ucpErr },
  "POST /api/v1/agent/ucp/checkout-sessions/{id}/cancel": { success: [raw(M.UcpCheckout, "The canceled UCP checkout.")], errors: bridgeErrors, body: { schema: M.EmptyBody, required: false }, errorSchema: ucpErr },
  "POST /api/v1/agent/ap2/payment-mandates": {
    success: [ok(M.Ap2Receipt, "SUCCESS: the cart is paid."), { status: 202, description: "PENDING: the buyer must approve (approval_urls).", schema: M.envelope(M.Ap2Receipt) }],
    errors: { ...bridgeErrors, 401: ["AGENT_TOKEN_INVALID"] },
    body: { schema: M.Ap2PayBody, required: true },
  },
};
