/**
 * Agentic Commerce Protocol (ACP) checkout sessions → our carts (docs/protocols.md has the field mapping).
 *
 *   POST /checkout_sessions               {items:[{id, quantity}], buyer?, fulfillment_address?, fulfillment_option_id?}
 *                                         → 201 session (not_ready_for_payment while shipping needs an address/option)
 *   POST /checkout_sessions/{id}          update: items (the session moves to a new cart), buyer, address, option
 *                                         (address and option price the cart's shipping: shipping.ts)
 *   GET  /checkout_sessions/{id}
 *   POST /checkout_sessions/{id}/complete {payment_data:{token, provider}, buyer?} → status completed + order
 *   POST /checkout_sessions/{id}/cancel
 *
 * Statuses: not_ready_for_payment (our OPEN: a shipping quote missing), ready_for_payment (READY_FOR_PAYMENT; also
 * PENDING_EXTERNAL_CONFIRMATION once the buyer decided at every link: index.ts `liveState`), in_progress (IN_PROGRESS,
 * PENDING_EXTERNAL_CONFIRMATION, SETTLEMENT_UNKNOWN), completed, canceled (the ACP cancel); read from the cart's live
 * session on every answer (session-state.ts).
 * Amounts are integer minor units and currencies lower-case, as ACP writes them. Errors are ACP's
 * `{type, code, message, param?}` with our HTTP status and our code.
 * Versions: every ACP route reads the request's `API-Version` (`acpVersioned`): a version we implement is served and
 * echoed, another is refused before any work; a request without the header is served as 2025-09-29.
 */
import { MAX_LINE_QUANTITY, type CartView, type CompleteReply, type PreviewView } from "../../actors/cart/messages.ts";
import { ActorError, ERROR_TABLE, fail } from "../../actors/runtime/errors.ts";
import { cutEcho } from "../../infra/echo.ts";
import { asRecord, isItemId, itemIdOf, type Answer, type BridgeSession, type ItemFields, type ItemInput } from "./common.ts";
import { knownStringMembers, type MemberRules } from "./input.ts";
import type { SessionNote } from "./session-state.ts";
import { sessionShipping } from "./shipping.ts";

/**
 * The ACP API versions this bridge implements, oldest first: the request and response shapes of each (ACP
 * 2025-09-29: `fulfillment_address`, `fulfillment_option_id`, its Buyer and Address). Later versions changed them
 * (2026-01-16 `fulfillment_details` and `selected_fulfillment_options[]`, 2026-01-30 more Buyer members), so they are
 * not served under their name: a client on one would have its fields refused or ignored.
 */
export const ACP_API_VERSIONS = ["2025-09-29"] as const;
export type AcpApiVersion = (typeof ACP_API_VERSIONS)[number];
/** The version a request without `API-Version` is served in (the one we implement; ACP's clients always send it). */
export const ACP_DEFAULT_API_VERSION: AcpApiVersion = "2025-09-29";
/** ACP's version header (RFC "Agentic Checkout" §3.1: REQUIRED on every request; the server MUST validate support). */
export const ACP_API_VERSION_HEADER = "API-Version";
const API_VERSION_FORMAT = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Codes answered only in ACP's error shape, not in our table (actors/runtime/errors.ts): `acpError` turns our error
 * into them. Listed on /docs/errors (gateway/rest/error-docs.ts) so the code a client reads has its anchor there.
 */
export const ACP_ONLY_ERROR_CODES = [
  {
    code: "unsupported_api_version",
    http: 400,
    description:
      "ACP only: the request's API-Version names a version this server does not serve (or is not one YYYY-MM-DD version). Nothing ran. Send one of the top-level supported_versions (2025-09-29), or none.",
  },
] as const;

/**
 * The ACP API version a request is served in, from its `API-Version` header. ACP has clients send it on every request
 * and servers validate it; its later revisions answer a version the server does not support with 400, code
 * `unsupported_api_version` and the `supported_versions` (acpError puts both at the top level), and our `details
 * {header, requested, supported_versions, reason: "unsupported_api_version"}` stay beside them (no `param`: that is a
 * JSONPath into the body). Refused: a well-formed version
 * we do not implement (an older or a later one), and a value that is not one version (not YYYY-MM-DD, empty, or
 * several: a repeated header arrives joined by ", "). Without the header the request is served as
 * ACP_DEFAULT_API_VERSION: the bridge answered such requests before it read the header, and the version it would be
 * refused for is the one it is served in.
 */
export function acpApiVersion(headers: Headers): AcpApiVersion {
  const sent = headers.get(ACP_API_VERSION_HEADER);
  if (sent === null) return ACP_DEFAULT_API_VERSION;
  const v = sent.trim();
  const known = ACP_API_VERSIONS.find((a) => a === v);
  if (known) return known;
  const supported = ACP_API_VERSIONS.join(", ");
  const what = API_VERSION_FORMAT.test(v)
    ? `ACP API version ${v} is not supported`
    : `API-Version must name one ACP API version (YYYY-MM-DD), not ${JSON.stringify(cutEcho(sent))}`;
  throw fail("INVALID_ARGUMENT", `${what}; this server implements ${supported}. Send API-Version: ${ACP_DEFAULT_API_VERSION}.`, {
    header: ACP_API_VERSION_HEADER,
    requested: cutEcho(sent),
    supported_versions: [...ACP_API_VERSIONS],
    reason: "unsupported_api_version",
  });
}

/**
 * An ACP route's work in the API version its request names (`acpApiVersion`): a version we do not implement is
 * refused before the work (before the Idempotency-Key claim, so nothing is recorded either), and the version served is
 * echoed in the answer's `API-Version` header (ACP does not require the echo; it tells a client that sent none which
 * version answered, and every answer of the work carries it, errors and idempotent replays included).
 */
export function acpVersioned(request: Request, set: { headers: Record<string, string | number> }, work: () => Promise<Answer>): () => Promise<Answer> {
  return async () => {
    set.headers[ACP_API_VERSION_HEADER.toLowerCase()] = acpApiVersion(request.headers);
    return work();
  };
}

export type AcpStatus = "not_ready_for_payment" | "ready_for_payment" | "in_progress" | "completed" | "canceled";

/** ACP `items: [{id, quantity}]` (id: a product's or a variant's, common.ts `resolveItemIds`); a malformed list is INVALID_ARGUMENT naming the field. */
export function acpItems(raw: unknown): ItemInput[] {
  if (!Array.isArray(raw) || raw.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", "items must list at least one item.", { field: "items" });
  return raw.map((it, i) => {
    const r = asRecord(it);
    if (typeof r.id !== "string" || !isItemId(r.id)) throw fail("INVALID_ARGUMENT", "items[].id must be a product id or <product id>:<variant id>.", { field: `items[${i}].id` });
    const q = r.quantity ?? 1;
    if (typeof q !== "number" || !Number.isInteger(q) || q < 1 || q > MAX_LINE_QUANTITY) {
      throw fail("INVALID_ARGUMENT", `items[].quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}.`, { field: `items[${i}].quantity` });
    }
    return { itemId: r.id, quantity: q };
  });
}

/**
 * ACP's Buyer and Address as its 2025-09-29 schema defines them (spec/json-schema/schema.agentic_checkout.json
 * `$defs.Buyer`, `$defs.Address`): string members only, `additionalProperties: false`, so another member is refused.
 */
const ACP_SCHEMA = "ACP 2025-09-29";
/** ACP's Buyer members. */
export const ACP_BUYER_MEMBERS = ["first_name", "last_name", "email", "phone_number"] as const;
/** ACP's Address members (`fulfillment_address`). */
export const ACP_ADDRESS_MEMBERS = ["name", "line_one", "line_two", "city", "state", "country", "postal_code"] as const;
const ACP_BUYER: MemberRules = { what: "an ACP Buyer", strings: ACP_BUYER_MEMBERS, others: "refuse", schema: `${ACP_SCHEMA}'s Buyer` };
const ACP_ADDRESS: MemberRules = { what: "an ACP Address", strings: ACP_ADDRESS_MEMBERS, others: "refuse", schema: `${ACP_SCHEMA}'s Address` };

/** ACP `buyer` (a Buyer object, or null; undefined: not in the request), as the session keeps it (input.ts). */
export function acpBuyer(raw: unknown): Record<string, string> | null | undefined {
  return knownStringMembers(raw, "buyer", ACP_BUYER);
}

/**
 * ACP `fulfillment_address` as the session keeps and shows it (an Address of string members, or null; undefined: not
 * in the request). Its country and postal code are then read as the destination (index.ts `acpShippingInput`).
 */
export function acpAddress(raw: unknown): Record<string, string> | null | undefined {
  return knownStringMembers(raw, "fulfillment_address", ACP_ADDRESS);
}

export const ACP_ITEM_FIELDS: ItemFields = { id: (i) => `items[${i}].id`, quantity: (i) => `items[${i}].quantity` };

export function acpStatusOfSession(status: string): AcpStatus {
  if (status === "OPEN") return "not_ready_for_payment";
  if (status === "READY_FOR_PAYMENT") return "ready_for_payment";
  if (status === "COMPLETED") return "completed";
  if (status === "CANCELED" || status === "EXPIRED" || status === "FAILED") return "canceled";
  return "in_progress";
}

interface Money {
  subtotal_minor: number;
  discount_minor: number;
  shipping_minor: number;
  tax_minor: number;
  total_minor: number;
}

function totals(m: Money) {
  return [
    { type: "items_base_amount", display_text: "Item(s) total", amount: m.subtotal_minor },
    { type: "discount", display_text: "Discount", amount: m.discount_minor },
    { type: "subtotal", display_text: "Subtotal", amount: m.subtotal_minor - m.discount_minor },
    { type: "fulfillment", display_text: "Shipping", amount: m.shipping_minor },
    { type: "tax", display_text: "Tax", amount: m.tax_minor },
    { type: "total", display_text: "Total", amount: m.total_minor },
  ];
}

/** An absolute URL of ours: ACP's Link and Order URLs are `format: uri`, which a path is not (audit AD-1). */
export function publicUrl(siteUrl: string, path: string): string {
  return `${siteUrl.replace(/\/$/, "")}${path}`;
}

/**
 * The info message that carries the buyer's approval link while a payment waits for it. ACP 2025-09-29 has no member
 * for such a link: its Link `type` is one of terms_of_use, privacy_policy, seller_shop_policies, and the session
 * object allows no other members, so the link goes where the version allows free text (audit AD-1: a
 * `{type: "continue_url"}` link failed a strict client's validation of the whole session). Markdown, so the link is
 * one a client can show as it is, in CommonMark's autolink form (`<url>`), which an agent can also read off.
 */
export function acpApprovalMessage(url: string) {
  return { type: "info", content_type: "markdown", content: `The buyer must approve the payment at <${url}>, then complete the session again.` } as const;
}

/**
 * The ACP CheckoutSession object of a bridged session, shaped to ACP 2025-09-29's schema
 * (test/fixtures/acp-2025-09-29.schema.json; test/http/acp-schema-contract.test.ts validates real answers): a member
 * with nothing to show is left out (the schema allows `buyer`, `fulfillment_address`, `fulfillment_option_id` to be
 * absent, never null), URLs are absolute (`siteUrl`: the service's public base URL, as the approval link's), and
 * there is no `payment_provider`: its only allowed value is `stripe`, and the bridge takes no Stripe payment tokens
 * (its tokens are this service's sandbox ones), so a client told `stripe` would have the buyer delegate a card to
 * Stripe for a payment this service then declines; the member is optional, so a strict client accepts its absence.
 */
export function acpSession(
  s: BridgeSession,
  view: { cart: CartView | PreviewView; status: AcpStatus; siteUrl: string; order?: { id: string; ids: string[] } | null; notes?: SessionNote[]; continueUrl?: string },
) {
  const cart = view.cart;
  const buyer = s.meta.buyer as Record<string, string> | null | undefined;
  const address = s.meta.fulfillment_address as Record<string, string> | null | undefined;
  return {
    id: s.id,
    ...(buyer ? { buyer } : {}),
    status: view.status,
    currency: cart.currency.toLowerCase(),
    line_items: cart.items.map((l) => ({
      id: `li_${l.product_id}${l.variant_id ? `_${l.variant_id}` : ""}`,
      // A variant line's item is the variant (the id the agent sent), so the items can be sent back in an update.
      item: { id: itemIdOf(l), quantity: l.quantity },
      base_amount: l.unit_price_minor * l.quantity,
      discount: 0,
      subtotal: l.line_total_minor,
      tax: 0,
      total: l.line_total_minor,
    })),
    ...(address ? { fulfillment_address: address } : {}),
    ...acpFulfillment(s),
    totals: totals(cart.totals),
    // A partly paid session says which stores are paid (and `order` is the first paid one), so an agent reading it
    // does not buy them again (audit Y5); the other notes of session-state.ts `sessionNotes` alike.
    messages: [
      ...acpMessages(s),
      ...(view.continueUrl ? [acpApprovalMessage(view.continueUrl)] : []),
      ...(view.notes ?? []).map((n) => ({ type: "info", content_type: "plain", content: n.content })),
    ],
    links: [{ type: "terms_of_use", url: publicUrl(view.siteUrl, "/api/v1/agent/docs") }],
    ...(view.order ? { order: { id: view.order.id, checkout_session_id: s.id, permalink_url: publicUrl(view.siteUrl, `/api/v1/agent/orders/${view.order.id}`) } } : {}),
  };
}

export const ACP_FIELDS = { address: "fulfillment_address", option: "fulfillment_option_id" } as const;

/** The store's real options at the session's destination (shipping.ts), and the one picked. */
function acpFulfillment(s: BridgeSession) {
  const ship = sessionShipping(s);
  const options = ship.groups.flatMap((g) =>
    g.options.map((o) => ({
      type: "shipping",
      id: o.option_id,
      title: o.name,
      // ACP's FulfillmentOptionShipping has no store field (additionalProperties: false) and its `carrier` is a
      // carrier's name, which we do not know: the store goes into the subtitle, so a multi-store cart's options
      // still say whose they are.
      subtitle: `${g.merchant_slug}: ${o.min_days}-${o.max_days} business days`,
      subtotal: o.cost_minor,
      tax: 0,
      total: o.cost_minor,
    })),
  );
  const picked = s.meta.fulfillment_option_id;
  const selected = ship.groups.map((g) => g.selected_option_id).filter((id): id is string => id !== null);
  const id = typeof picked === "string" && selected.includes(picked) ? picked : selected[0];
  return { fulfillment_options: options, ...(id ? { fulfillment_option_id: id } : {}) };
}

/** What the session still needs before payment, as ACP messages (code `missing` / `invalid`, `param` the field). */
function acpMessages(s: BridgeSession): unknown[] {
  const missing = sessionShipping(s).missing;
  if (!missing) return [];
  const param = `$.${missing.field === "address" ? ACP_FIELDS.address : ACP_FIELDS.option}`;
  return [{ type: "error", code: missing.reason === "destination_not_served" ? "invalid" : "missing", param, content_type: "plain", content: missing.message }];
}

export function acpOrderOf(reply: CompleteReply): { id: string; ids: string[] } | null {
  return reply.status === "COMPLETED" ? { id: reply.order_id, ids: reply.order_ids } : null;
}

/** ACP error object for one of our errors. */
export function acpError(err: ActorError) {
  const spec = ERROR_TABLE[err.code];
  const type =
    err.code === "IDEMPOTENCY_KEY_CONFLICT" || err.code === "CHECKOUT_ALREADY_IN_PROGRESS"
      ? "request_not_idempotent"
      : spec.http >= 500
        ? "service_unavailable"
        : spec.http === 402
          ? "processing_error"
          : "invalid_request";
  const field = err.details?.field;
  // ACP's later revisions name this refusal: code `unsupported_api_version` and a top-level `supported_versions`
  // (review T-3); our details stay beside them
  const version = err.details?.reason === "unsupported_api_version" ? { code: "unsupported_api_version", supported_versions: err.details.supported_versions } : {};
  return {
    status: spec.http,
    body: { type, code: err.code, message: err.message, ...(typeof field === "string" ? { param: `$.${field}` } : {}), ...version, ...(err.details ? { details: err.details } : {}) },
  };
}
