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
 * PENDING_EXTERNAL_CONFIRMATION of the session's own payment once the buyer decided at every link: index.ts
 * `liveState`), in_progress (IN_PROGRESS, PENDING_EXTERNAL_CONFIRMATION, SETTLEMENT_UNKNOWN; another route's payment
 * stays in_progress after its buyer decided), completed, canceled (the ACP cancel, or the merchant's cancel or block:
 * session-state.ts `merchantCanceled`); read from the cart's live session on every answer (session-state.ts).
 * Amounts are integer minor units and currencies lower-case, as ACP writes them. Errors are ACP's
 * `{type, code, message, param?}` with our HTTP status and our code.
 * Versions: every ACP route reads the request's `API-Version` (`acpVersioned`): a version we implement is served and
 * echoed, another is refused before any work; a request without the header is served as 2025-09-29.
 */
import { MAX_LINE_QUANTITY, type CartView, type CompleteReply, type PreviewView } from "../../actors/cart/messages.ts";
import { ActorError, ERROR_TABLE, fail } from "../../actors/runtime/errors.ts";
import { cutEcho, preview } from "../../infra/echo.ts";
import { asRecord, boundedToken, isItemId, itemIdOf, type Answer, type BridgeSession, type ItemFields, type ItemInput } from "./common.ts";
import { knownStringMembers, type MemberRules } from "./input.ts";
import { foreignPaymentWayOn, type SessionNote } from "./session-state.ts";
import { destinationOf, missingMessage, optionIdOf, sessionShipping, shownShipping, type Destination } from "./shipping.ts";

/**
 * The ACP API versions this bridge implements, oldest first, each in its own request and response shapes over the
 * same cart messages (docs/protocols.md "API version"): 2025-09-29 (`items`, `fulfillment_address`,
 * `fulfillment_option_id`, its Buyer; this file) and 2026-04-17 (`line_items`, `fulfillment_details`,
 * `selected_fulfillment_options[]`, its Buyer, `capabilities`, its statuses and Error: acp-2026-04-17.ts). The
 * versions between (2025-12-12, 2026-01-16, 2026-01-30) are refused: each has shapes of its own that neither
 * served version's are (docs/protocols.md has the table), so a client on one would have its fields refused or ignored.
 */
export const ACP_API_VERSIONS = ["2025-09-29", "2026-04-17"] as const;
export type AcpApiVersion = (typeof ACP_API_VERSIONS)[number];
/** The version a request without `API-Version` is served in (the first one served; ACP's clients always send it). */
export const ACP_DEFAULT_API_VERSION: AcpApiVersion = "2025-09-29";
/** The latest version served. */
export const ACP_LATEST_API_VERSION: AcpApiVersion = "2026-04-17";
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
      "ACP only: the request's API-Version names a version this server does not serve (or is not one YYYY-MM-DD version). Nothing ran. Send one of the top-level supported_versions (2025-09-29, 2026-04-17), or none.",
  },
  {
    code: "idempotency_conflict",
    http: 409,
    description:
      "ACP 2026-04-17 only (2025-09-29 answers IDEMPOTENCY_KEY_CONFLICT): this Idempotency-Key was used with a different request (another body, path or API-Version). Nothing ran. Send the first request again to get its answer, or use a new key.",
  },
  {
    code: "idempotency_in_flight",
    http: 409,
    description:
      "ACP 2026-04-17 only (2025-09-29 answers CHECKOUT_ALREADY_IN_PROGRESS): the first request with this Idempotency-Key is still running. Nothing ran for this one. Retry the same call after a moment; it then gets the first request's answer.",
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
  throw fail("INVALID_ARGUMENT", `${what}; this server implements ${supported}. Send API-Version: ${ACP_LATEST_API_VERSION} (or ${ACP_DEFAULT_API_VERSION}).`, {
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
 * version answered, and every answer of the work carries it, errors and idempotent replays included). The work gets
 * the version, and an error it throws is shaped in it (index.ts `respond` reads the echo: `acpServedVersion`).
 */
export function acpVersioned(request: Request, set: { headers: Record<string, string | number> }, work: (v: AcpApiVersion) => Promise<Answer>): () => Promise<Answer> {
  return async () => {
    const v = acpApiVersion(request.headers);
    set.headers[ACP_API_VERSION_HEADER.toLowerCase()] = v;
    return work(v);
  };
}

/** The version an answer is being served in (the echo `acpVersioned` set), or the default before one was chosen. */
export function acpServedVersion(headers: Record<string, string | number>): AcpApiVersion {
  const v = headers[ACP_API_VERSION_HEADER.toLowerCase()];
  return ACP_API_VERSIONS.find((a) => a === v) ?? ACP_DEFAULT_API_VERSION;
}

/**
 * The version a request names when it is one served, else the default: for the shape of a refusal thrown before the
 * route's work (error-shape.ts), where a version that is not served is refused in the default's shape anyway.
 */
export function acpRequestedVersion(headers: Headers): AcpApiVersion {
  const v = headers.get(ACP_API_VERSION_HEADER)?.trim();
  return ACP_API_VERSIONS.find((a) => a === v) ?? ACP_DEFAULT_API_VERSION;
}

export type AcpStatus = "not_ready_for_payment" | "ready_for_payment" | "in_progress" | "completed" | "canceled";

/**
 * What an ACP request says, in no version's words: each version's layer (`AcpShapes.read`) reads its own request
 * members into this, and index.ts maps it onto the session and its cart. A member left undefined was not in the
 * request; null clears it.
 */
export interface AcpInput {
  /** The items, and the request fields a refusal of one of them names. */
  items?: { list: ItemInput[]; fields: ItemFields };
  buyer?: Record<string, string> | null;
  /** The address the session keeps and shows, and the destination priced from it (null: none). */
  address?: { kept: Record<string, string> | null; dest: Destination | null };
  /** Who receives the goods (2026-04-17 `fulfillment_details` name, phone_number, email). */
  contact?: Record<string, string> | null;
  /** The fulfillment options picked (2025-09-29: one; 2026-04-17: one per store). */
  optionIds?: string[];
  /** The currency the client expects (2026-04-17 create `currency`), lower-case. */
  currency?: string;
}

/** What a session answer shows besides the session row (index.ts builds it from the cart's live state). */
export interface AcpView {
  cart: CartView | PreviewView;
  /** Our checkout status (OPEN, READY_FOR_PAYMENT, …, EXPIRED), read live. */
  live: string;
  canceled: boolean;
  siteUrl: string;
  order?: { id: string; ids: string[] } | null;
  notes?: SessionNote[];
  /** The buyer's approval link while the payment waits for it. */
  continueUrl?: string;
  /** The waiting payment was started through another route of this service, under that route's key (review S11). */
  foreign?: boolean;
}

/**
 * One ACP API version's mapping over the same actor messages: how its requests read and how its answers and errors
 * are shaped. acp-versions.ts holds one per served version; the routes (index.ts) only choose by `API-Version`.
 */
export interface AcpShapes {
  version: AcpApiVersion;
  /** The request fields an error or a missing step names (shipping.ts), and the complete's token (a refused one's `param`). */
  fields: { address: string; option: string; token: string };
  /** A create's (items required), an update's or a complete's request, checked before any cart work. */
  read(body: unknown, kind: "create" | "update" | "complete"): AcpInput;
  /** The request's buyer alone (checked before an update or complete claims the session). */
  buyer(body: unknown): Record<string, string> | null | undefined;
  /**
   * A complete's payment token (checked once the session is claimed and known active), and the request member it was
   * read from: a refusal of the token names that member (`param`), which may be other than `fields.token` when a
   * version reads an older member too (review R-3).
   */
  token(body: unknown): { token: string; field: string };
  /** Whether an update's request changes the items or the shipping (what `assertUpdatable` refuses once paid). */
  changes(body: unknown): { items: boolean; shipping: boolean };
  session(s: BridgeSession, view: AcpView): unknown;
  error(err: ActorError): { status: number; body: Record<string, unknown> };
}

/** ACP `items: [{id, quantity}]` (id: a product's or a variant's, common.ts `resolveItemIds`); a malformed list is INVALID_ARGUMENT naming the field. */
export function acpItems(raw: unknown, field = "items", quantityRequired = false): ItemInput[] {
  if (!Array.isArray(raw) || raw.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", `${field} must list at least one item.`, { field });
  return raw.map((it, i) => {
    const r = asRecord(it);
    if (typeof r.id !== "string" || !isItemId(r.id)) throw fail("INVALID_ARGUMENT", `${field}[].id must be a product id or <product id>:<variant id>.`, { field: `${field}[${i}].id` });
    const q = r.quantity ?? (quantityRequired ? undefined : 1);
    if (typeof q !== "number" || !Number.isInteger(q) || q < 1 || q > MAX_LINE_QUANTITY) {
      throw fail("INVALID_ARGUMENT", `${field}[].quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}.`, { field: `${field}[${i}].quantity` });
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
 * in the request). Its country and postal code are then read as the destination.
 */
export function acpAddress(raw: unknown): Record<string, string> | null | undefined {
  return knownStringMembers(raw, "fulfillment_address", ACP_ADDRESS);
}

/** The address kept and the destination priced from it (`field` names the address in a refusal). */
export function keptAddress(kept: Record<string, string> | null, field: string): { kept: Record<string, string> | null; dest: Destination | null } {
  return { kept, dest: kept === null ? null : destinationOf(kept.country, kept.postal_code, field) };
}

/** The members of a kept object (a buyer, an address) that a version's schema has, or undefined for none kept. */
export function membersOf(kept: unknown, members: readonly string[]): Record<string, string> | undefined {
  if (!kept || typeof kept !== "object") return undefined;
  const src = kept as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const m of members) if (typeof src[m] === "string") out[m] = src[m] as string;
  return out;
}

/** The members 2025-09-29's Buyer requires. */
const ACP_BUYER_REQUIRED = ["first_name", "last_name", "email"] as const;

/**
 * The buyer a 2025-09-29 answer shows. One a 2025-09-29 client sent is echoed as it sent it (the documented
 * deviation: the bridge asks only for what it uses). One written in 2026-04-17, whose Buyer requires only `email`, is
 * shown only as a valid 2025-09-29 Buyer (review R1-1: a session is one session in either version, and each answer
 * validates in the caller's): `first_name` / `last_name` from `full_name` ("Ada Lovelace": first word, the rest) when
 * it has neither, and left out while first_name, last_name or email is still missing.
 */
export function acp2025Buyer(kept: unknown, writtenIn: unknown): Record<string, string> | undefined {
  const buyer = membersOf(kept, ACP_BUYER_MEMBERS);
  if (!buyer || writtenIn !== "2026-04-17") return buyer;
  const full = asRecord(kept).full_name;
  if (buyer.first_name === undefined && buyer.last_name === undefined && typeof full === "string") {
    const [first, ...rest] = full.trim().split(/\s+/);
    if (first && rest.length > 0) Object.assign(buyer, { first_name: first, last_name: rest.join(" ") });
  }
  return ACP_BUYER_REQUIRED.every((m) => typeof buyer[m] === "string") ? buyer : undefined;
}

export const ACP_ITEM_FIELDS: ItemFields = { list: "items", id: (i) => `items[${i}].id`, quantity: (i) => `items[${i}].quantity` };

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

/** The cart's totals as ACP Totals (the same types in both versions). */
export function acpTotals(m: Money) {
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
 * `foreign`: the waiting payment was started through another route of this service under that route's own key, so
 * completing this session is the cart's key conflict; the message says the way on instead (review session 11).
 */
export function acpApprovalMessage(url: string, foreign = false) {
  const content = foreign
    ? `The buyer must approve a payment of this session's cart at <${url}>. ${foreignPaymentWayOn("acp")}`
    : `The buyer must approve the payment at <${url}>, then complete the session again under a new Idempotency-Key (the same key replays this answer).`;
  return { type: "info", content_type: "markdown", content } as const;
}

/** A line of the cart in ACP's terms (both versions). */
export function acpLines(cart: CartView | PreviewView) {
  return cart.items.map((l) => ({
    id: `li_${l.product_id}${l.variant_id ? `_${l.variant_id}` : ""}`,
    // A variant line's item is the variant (the id the agent sent), so the items can be sent back in an update.
    itemId: itemIdOf(l),
    title: l.title,
    merchantSlug: l.merchant_slug,
    quantity: l.quantity,
    unit: l.unit_price_minor,
    base: l.unit_price_minor * l.quantity,
    total: l.line_total_minor,
  }));
}

/** The store's real options at the session's destination (shipping.ts), each with its store, and the cart's picks. */
export function acpOptions(s: BridgeSession, cart: CartView | PreviewView) {
  const ship = shownShipping(s, cart);
  const options = ship.groups.flatMap((g) =>
    g.options.map((o) => ({
      id: o.option_id,
      title: o.name,
      // ACP's FulfillmentOptionShipping has no store field (additionalProperties: false) and its `carrier` is a
      // carrier's name, which we do not know: the store goes into the subtitle / description, so a multi-store
      // cart's options still say whose they are.
      text: `${g.merchant_slug}: ${o.min_days}-${o.max_days} business days`,
      cost: o.cost_minor,
    })),
  );
  const selected = ship.groups.flatMap((g) => (g.selected_option_id !== null ? [{ merchantSlug: g.merchant_slug, optionId: g.selected_option_id }] : []));
  return { options, selected };
}

/** What the session still needs before payment, as ACP messages (code `missing` / `invalid`, `param` the field), in the version's field names. */
export function acpMessages(s: BridgeSession, fields: { address: string; option: string }): unknown[] {
  const missing = sessionShipping(s).missing;
  if (!missing) return [];
  const param = `$.${missing.field === "address" ? fields.address : fields.option}`;
  const content = missingMessage(missing.reason, missing.merchant_slugs, fields);
  return [{ type: "error", code: missing.reason === "destination_not_served" ? "invalid" : "missing", param, content_type: "plain", content }];
}

/** The messages of a session answer: missing steps, the approval link, the session's notes (both versions). */
export function acpAllMessages(s: BridgeSession, view: AcpView, fields: { address: string; option: string }): unknown[] {
  return [
    ...acpMessages(s, fields),
    ...(view.continueUrl ? [acpApprovalMessage(view.continueUrl, view.foreign)] : []),
    // A partly paid session says which stores are paid (and `order` is the first paid one), so an agent reading it
    // does not buy them again (audit Y5); the other notes of session-state.ts `sessionNotes` alike.
    ...(view.notes ?? []).map((n) => ({ type: "info", content_type: "plain", content: n.content })),
  ];
}

/** 2025-09-29's request members a refusal or a missing step names: the address, the pick and the complete's token. */
export const ACP_FIELDS = { address: "fulfillment_address", option: "fulfillment_option_id", token: "payment_data.token" } as const;

/**
 * The ACP CheckoutSession object of a bridged session, shaped to ACP 2025-09-29's schema
 * (test/fixtures/acp-2025-09-29.schema.json; test/http/acp-schema-contract.test.ts validates real answers): a member
 * with nothing to show is left out (the schema allows `buyer`, `fulfillment_address`, `fulfillment_option_id` to be
 * absent, never null), URLs are absolute (`siteUrl`: the service's public base URL, as the approval link's), and
 * there is no `payment_provider`: its only allowed value is `stripe`, and the bridge takes no Stripe payment tokens
 * (its tokens are this service's sandbox ones), so a client told `stripe` would have the buyer delegate a card to
 * Stripe for a payment this service then declines; the member is optional, so a strict client accepts its absence.
 * A session written under 2026-04-17 shows only this version's members of its buyer and address.
 */
export function acpSession(s: BridgeSession, view: AcpView) {
  const cart = view.cart;
  const buyer = acp2025Buyer(s.meta.buyer, s.meta.buyer_version);
  const address = membersOf(s.meta.fulfillment_address, ACP_ADDRESS_MEMBERS);
  const { options, selected } = acpOptions(s, cart);
  const picked = s.meta.fulfillment_option_id;
  const pickedId = typeof picked === "string" && selected.some((p) => p.optionId === picked) ? picked : selected[0]?.optionId;
  return {
    id: s.id,
    ...(buyer ? { buyer } : {}),
    status: view.canceled ? "canceled" : acpStatusOfSession(view.live),
    currency: cart.currency.toLowerCase(),
    line_items: acpLines(cart).map((l) => ({
      id: l.id,
      item: { id: l.itemId, quantity: l.quantity },
      base_amount: l.base,
      discount: 0,
      subtotal: l.total,
      tax: 0,
      total: l.total,
    })),
    ...(address ? { fulfillment_address: address } : {}),
    fulfillment_options: options.map((o) => ({ type: "shipping", id: o.id, title: o.title, subtitle: o.text, subtotal: o.cost, tax: 0, total: o.cost })),
    ...(pickedId ? { fulfillment_option_id: pickedId } : {}),
    totals: acpTotals(cart.totals),
    messages: acpAllMessages(s, view, ACP_FIELDS),
    links: [{ type: "terms_of_use", url: publicUrl(view.siteUrl, "/api/v1/agent/docs") }],
    ...(view.order ? { order: { id: view.order.id, checkout_session_id: s.id, permalink_url: publicUrl(view.siteUrl, `/api/v1/agent/orders/${view.order.id}`) } } : {}),
  };
}

export function acpOrderOf(reply: CompleteReply): { id: string; ids: string[] } | null {
  return reply.status === "COMPLETED" ? { id: reply.order_id, ids: reply.order_ids } : null;
}

/** ACP error object for one of our errors (2025-09-29's `type` enum, with our details beside it). */
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
  // `param` is a JSONPath into the body: a field located elsewhere (the Idempotency-Key header) names none
  const location = err.details?.location;
  const field = typeof location !== "string" || location === "body" ? err.details?.field : undefined;
  // ACP's later revisions name this refusal: code `unsupported_api_version` and a top-level `supported_versions`
  // (review T-3); our details stay beside them
  const version = err.details?.reason === "unsupported_api_version" ? { code: "unsupported_api_version", supported_versions: err.details.supported_versions } : {};
  return {
    status: spec.http,
    body: { type, code: err.code, message: err.message, ...(typeof field === "string" ? { param: `$.${field}` } : {}), ...version, ...(err.details ? { details: err.details } : {}) } as Record<string, unknown>,
  };
}

/** The payment providers a 2025-09-29 `payment_data.provider` may name: its schema's enum (PaymentProvider). */
export const ACP_PAYMENT_PROVIDERS = ["stripe"] as const;

/**
 * 2025-09-29's `payment_data.provider`, checked before the payment: its schema's only value is `stripe`, which the
 * bridge accepts as the name clients send (the token is this service's sandbox one: docs/protocols.md "Schema"). Any
 * other value (`"adyen"`, `"sandbox"`, `42`) names a processor that would never see this payment: it was not read, and
 * the token was charged on our card rail as if the agent had asked for it. Absent or null stays accepted (clients
 * written before the check, a lenient server), as a missing provider was.
 */
export function acpProvider(paymentData: Record<string, unknown>): void {
  const provider = paymentData.provider;
  if (provider === undefined || provider === null) return;
  if (typeof provider === "string" && (ACP_PAYMENT_PROVIDERS as readonly string[]).includes(provider)) return;
  throw fail("INVALID_ARGUMENT", `payment_data.provider ${preview(provider)} is not a payment provider of this service: send "stripe" (ACP's provider value; payment_data.token is this service's sandbox payment token) or leave it out.`, {
    field: "payment_data.provider",
    allowed: [...ACP_PAYMENT_PROVIDERS],
  });
}

/** A complete's payment token (2025-09-29 `payment_data.token`), after its `provider` (`acpProvider`). */
function acpToken(body: unknown): { token: string; field: string } {
  const paymentData = asRecord(asRecord(body).payment_data);
  acpProvider(paymentData);
  const token = paymentData.token;
  if (typeof token !== "string" || token.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", `${ACP_FIELDS.token} is required.`, { field: ACP_FIELDS.token });
  return { token: boundedToken(token, ACP_FIELDS.token), field: ACP_FIELDS.token };
}

/** ACP 2025-09-29's requests and answers. */
export const ACP_2025_09_29: AcpShapes = {
  version: "2025-09-29",
  fields: ACP_FIELDS,
  read(body, kind) {
    const b = asRecord(body);
    const out: AcpInput = {};
    const buyer = acpBuyer(b.buyer);
    if (buyer !== undefined) out.buyer = buyer;
    if (kind === "complete") return out;
    if (b.items === undefined && b.line_items !== undefined) {
      // a 2026-04-17 body sent without its API-Version (served as this, the default): never silently ignored
      if (kind === "create") {
        throw fail("MISSING_REQUIRED_ARGUMENT", "items must list at least one item (line_items is ACP 2026-04-17's: send API-Version: 2026-04-17 with it).", { field: "items" });
      }
      // an update needs no items, so not "items must list …" (review R1-7): the member is the other version's
      throw fail("INVALID_ARGUMENT", "line_items is ACP 2026-04-17's; this request is served in 2025-09-29, which names the items items: send API-Version: 2026-04-17 with it, or send items.", {
        field: "line_items",
      });
    }
    if (kind === "create" || b.items !== undefined) out.items = { list: acpItems(b.items), fields: ACP_ITEM_FIELDS };
    const kept = acpAddress(b.fulfillment_address);
    if (kept !== undefined) out.address = keptAddress(kept, ACP_FIELDS.address);
    if (b.fulfillment_option_id !== undefined) out.optionIds = [optionIdOf(b.fulfillment_option_id, ACP_FIELDS.option)];
    return out;
  },
  changes(body) {
    const b = asRecord(body);
    return { items: b.items !== undefined, shipping: b.fulfillment_address !== undefined || b.fulfillment_option_id !== undefined };
  },
  buyer: (body) => acpBuyer(asRecord(body).buyer),
  token: acpToken,
  session: acpSession,
  error: acpError,
};
