/**
 * Universal Commerce Protocol (UCP) checkout → our carts (docs/protocols.md has the mapping).
 *
 *   POST /checkout-sessions                {line_items:[{item:{id}, quantity}], buyer?, fulfillment?} → 201 checkout
 *   PUT  /checkout-sessions/{id}           update: line_items (a new cart), buyer, fulfillment (destination, option)
 *   GET  /checkout-sessions/{id}
 *   POST /checkout-sessions/{id}/complete  {payment:{instruments:[{handler_id, credential:{token}}]}}
 *   POST /checkout-sessions/{id}/cancel
 *
 * Statuses: incomplete (OPEN), ready_for_complete (READY_FOR_PAYMENT; also PENDING_EXTERNAL_CONFIRMATION once the
 * buyer decided at every link on the session's own payment: index.ts `liveState`), complete_in_progress (IN_PROGRESS,
 * SETTLEMENT_UNKNOWN; PENDING_EXTERNAL_CONFIRMATION with no link: another route's payment, its buyer decided),
 * requires_escalation (PENDING_EXTERNAL_CONFIRMATION: a human must act at continue_url, always given), completed,
 * canceled. Errors are UCP `messages` of type error with our code.
 */
import { MAX_LINE_QUANTITY, type CartView, type PreviewView } from "../../actors/cart/messages.ts";
import { ActorError, ERROR_TABLE, fail } from "../../actors/runtime/errors.ts";
import { publicUrl } from "./acp.ts";
import { asRecord, boundedToken, isItemId, itemIdOf, type BridgeSession, type ItemFields, type ItemInput } from "./common.ts";
import { booleanMembersObject, knownStringMembers, type MemberRules } from "./input.ts";
import type { SessionNote } from "./session-state.ts";
import { destinationOf, optionIdOf, sessionShipping, shownShipping, type Destination } from "./shipping.ts";

export const UCP_VERSION = "2026-01-11";
export type UcpStatus = "incomplete" | "ready_for_complete" | "complete_in_progress" | "requires_escalation" | "completed" | "canceled";

/** UCP `line_items: [{item: {id}, quantity}]` (id: a product's or a variant's, common.ts `resolveItemIds`). */
export function ucpItems(raw: unknown): ItemInput[] {
  if (!Array.isArray(raw) || raw.length === 0) throw fail("MISSING_REQUIRED_ARGUMENT", "line_items must list at least one item.", { field: "line_items" });
  return raw.map((li, i) => {
    const r = asRecord(li);
    const id = asRecord(r.item).id;
    if (typeof id !== "string" || !isItemId(id)) throw fail("INVALID_ARGUMENT", "line_items[].item.id must be a product id or <product id>:<variant id>.", { field: `line_items[${i}].item.id` });
    const q = r.quantity ?? 1;
    if (typeof q !== "number" || !Number.isInteger(q) || q < 1 || q > MAX_LINE_QUANTITY) {
      throw fail("INVALID_ARGUMENT", `line_items[].quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}.`, { field: `line_items[${i}].quantity` });
    }
    return { itemId: id, quantity: q };
  });
}

export const UCP_ITEM_FIELDS: ItemFields = { list: "line_items", id: (i) => `line_items[${i}].item.id`, quantity: (i) => `line_items[${i}].quantity` };

/** A line's id and item id: a variant line is its variant (two variants of one product are two lines). */
const lineId = (l: { product_id: string; variant_id: string | null }) => `li_${l.product_id}${l.variant_id ? `_${l.variant_id}` : ""}`;

export function ucpStatusOfSession(status: string): UcpStatus {
  if (status === "OPEN") return "incomplete";
  if (status === "READY_FOR_PAYMENT") return "ready_for_complete";
  if (status === "PENDING_EXTERNAL_CONFIRMATION") return "requires_escalation";
  if (status === "COMPLETED") return "completed";
  if (status === "CANCELED" || status === "EXPIRED" || status === "FAILED") return "canceled";
  return "complete_in_progress";
}

/**
 * UCP create's `currency` (ISO 4217), upper-case, or undefined when the request has none. Read before the cart is made
 * (a malformed one changes nothing); whether it is the cart's is checked once the cart prices the items (index.ts
 * `ucpCreate`): it was not read at all, so a platform asking for a checkout in EUR got one in USD, 201, and its buyer
 * was shown amounts in a currency the platform had not asked for.
 */
export function ucpCurrency(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== "string" || !/^[A-Za-z]{3}$/.test(raw)) throw fail("INVALID_ARGUMENT", "currency must be an ISO 4217 code (e.g. USD).", { field: "currency" });
  return raw.toUpperCase();
}

/** The token of the first payment instrument (`payment.instruments[0].credential.token`). */
export function ucpPaymentToken(body: unknown): string {
  const instruments = asRecord(asRecord(body).payment).instruments;
  const first = Array.isArray(instruments) ? asRecord(instruments[0]) : {};
  const token = asRecord(first.credential).token;
  if (typeof token !== "string" || token.length === 0) {
    throw fail("MISSING_REQUIRED_ARGUMENT", `${UCP_FIELDS.token} is required.`, { field: UCP_FIELDS.token });
  }
  return boundedToken(token, UCP_FIELDS.token);
}

export const UCP_FIELDS = {
  address: "fulfillment.methods[0].destinations[0]",
  option: "fulfillment.methods[0].groups[0].selected_option_id",
  token: "payment.instruments[0].credential.token",
} as const;

/** UCP's Buyer members (source/schemas/shopping/types/buyer.json): strings, kept and echoed. */
export const UCP_BUYER_MEMBERS = ["first_name", "last_name", "full_name", "email", "phone_number"] as const;
/** The members of the Buyer Consent extension's `buyer.consent` at UCP_VERSION (booleans). */
export const UCP_CONSENT_MEMBERS = ["analytics", "preferences", "marketing", "sale_of_data"] as const;

/**
 * UCP's Buyer is `additionalProperties: true`: another member (an extension's, or the platform's own) is dropped, not
 * refused. `consent` (the Buyer Consent extension, dev.ucp.shopping.buyer_consent, published for 2026-01-11) is
 * checked for its type and dropped too: the service does not negotiate that extension (`ucp.capabilities` names only
 * checkout), collects no analytics and sells no data, so it has nothing to act on, and echoing consent back would
 * claim the extension is honoured.
 */
const UCP_BUYER: MemberRules = {
  what: "a UCP Buyer",
  strings: UCP_BUYER_MEMBERS,
  checked: { consent: booleanMembersObject("the Buyer Consent extension's consent", UCP_CONSENT_MEMBERS) },
  others: "drop",
  schema: "UCP's Buyer",
};

/** UCP `buyer` (a Buyer object, or null; undefined: not in the request), as the session keeps it (input.ts). */
export function ucpBuyer(raw: unknown): Record<string, string> | null | undefined {
  return knownStringMembers(raw, "buyer", UCP_BUYER);
}

/** An object member of the fulfillment input, or 400 naming it (`what` says what it should be). */
function objectAt(v: unknown, field: string, what: string): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw fail("INVALID_ARGUMENT", `${field} must be ${what}.`, { field });
  return v as Record<string, unknown>;
}

/** An optional array member of the fulfillment input (absent or null: none), or 400 naming it. */
function arrayAt(v: unknown, field: string, what: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw fail("INVALID_ARGUMENT", `${field} must be ${what}.`, { field });
  return v;
}

/**
 * UCP `fulfillment` of a create or update: the shipping method's destination (`address_country`, `postal_code`; the
 * one `selected_destination_id` names, else the first) and each group's `selected_option_id`. Undefined when the
 * request has no `fulfillment`; `dest` undefined when it names no destination (the session keeps its own). A
 * `fulfillment` that is not an object, `methods` that is not a non-empty array of objects, or `destinations` /
 * `groups` that are not arrays of objects are 400 INVALID_ARGUMENT naming the member (audit F-5: they were read as
 * "no destination", and an update with `fulfillment: 42` erased the session's destination while the cart kept
 * charging for it).
 */
export function ucpFulfillmentInput(raw: unknown): { dest: Destination | undefined; optionIds: string[] } | undefined {
  if (raw === undefined) return undefined;
  const shape = 'an object {methods: [{type: "shipping", destinations: [...], groups: [...]}]}';
  const f = objectAt(raw, "fulfillment", shape);
  const methods = f.methods;
  if (!Array.isArray(methods) || methods.length === 0) throw fail("INVALID_ARGUMENT", "fulfillment.methods must be a non-empty array of fulfillment methods.", { field: "fulfillment.methods" });
  const m = objectAt(methods[0], "fulfillment.methods[0]", "a fulfillment method (an object)");
  const dests = arrayAt(m.destinations, "fulfillment.methods[0].destinations", "an array of destinations").map((d, i) =>
    objectAt(d, `fulfillment.methods[0].destinations[${i}]`, "a destination (an object with address_country and postal_code)"),
  );
  const chosen = dests.find((d) => d.id !== undefined && d.id === m.selected_destination_id) ?? dests[0];
  const addr = chosen && chosen.address !== undefined ? asRecord(chosen.address) : chosen;
  const dest = addr ? destinationOf(addr.address_country ?? addr.country, addr.postal_code, UCP_FIELDS.address) : undefined;
  const groups = arrayAt(m.groups, "fulfillment.methods[0].groups", "an array of groups").map((g, i) => objectAt(g, `fulfillment.methods[0].groups[${i}]`, "a group (an object)"));
  const optionIds = groups.flatMap((g, i) =>
    g.selected_option_id === undefined || g.selected_option_id === null ? [] : [optionIdOf(g.selected_option_id, `fulfillment.methods[0].groups[${i}].selected_option_id`)],
  );
  return { dest, optionIds };
}

/** The UCP fulfillment extension's shape: one shipping method, a group (with its options) per store. */
function ucpFulfillment(s: BridgeSession, cart: CartView | PreviewView) {
  const items = cart.items;
  const ship = shownShipping(s, cart);
  const d = ship.destination;
  return {
    methods: [
      {
        id: "shipping_1",
        type: "shipping",
        line_item_ids: items.map(lineId),
        destinations: d ? [{ id: "dest_1", address_country: d.country_code, postal_code: d.postal_code }] : [],
        selected_destination_id: d ? "dest_1" : null,
        groups: ship.groups.map((g) => ({
          id: `grp_${g.merchant_slug}`,
          line_item_ids: items.filter((l) => l.merchant_slug === g.merchant_slug).map(lineId),
          options: g.options.map((o) => ({
            id: o.option_id,
            title: o.name,
            description: `${o.min_days}-${o.max_days} business days`,
            totals: [
              { type: "subtotal", amount: o.cost_minor },
              { type: "total", amount: o.cost_minor },
            ],
          })),
          selected_option_id: g.selected_option_id,
        })),
      },
    ],
  };
}

/** What the checkout still needs before complete, as UCP messages (the buyer must give an address or pick). */
function ucpMessages(s: BridgeSession): unknown[] {
  const missing = sessionShipping(s).missing;
  if (!missing) return [];
  return [
    {
      type: "error",
      code: missing.reason === "destination_not_served" ? "invalid" : "missing",
      path: `$.${missing.field === "address" ? UCP_FIELDS.address : UCP_FIELDS.option}`,
      content: missing.message,
      severity: "requires_buyer_input",
    },
  ];
}

export function ucpCheckout(
  s: BridgeSession,
  view: { cart: CartView | PreviewView; status: UcpStatus; siteUrl: string; order?: { id: string; ids: string[] } | null; notes?: SessionNote[]; continueUrl?: string },
) {
  const c = view.cart;
  return {
    ucp: { version: UCP_VERSION, capabilities: [{ name: "dev.ucp.shopping.checkout", version: UCP_VERSION }] },
    id: s.id,
    status: view.status,
    currency: c.currency,
    buyer: s.meta.buyer ?? null,
    line_items: c.items.map((l) => ({
      id: lineId(l),
      item: { id: itemIdOf(l), title: l.title, price: l.unit_price_minor },
      quantity: l.quantity,
      totals: [
        { type: "subtotal", amount: l.line_total_minor },
        { type: "total", amount: l.line_total_minor },
      ],
    })),
    totals: [
      { type: "subtotal", amount: c.totals.subtotal_minor },
      { type: "discount", amount: c.totals.discount_minor },
      { type: "fulfillment", amount: c.totals.shipping_minor },
      { type: "tax", amount: c.totals.tax_minor },
      { type: "total", amount: c.totals.total_minor },
    ],
    fulfillment: ucpFulfillment(s, c),
    payment: { handlers: [{ id: "sandbox_card", name: "dev.agent-commerce.sandbox_card", version: UCP_VERSION }], instruments: [] as unknown[] },
    links: [] as unknown[],
    // A partly paid checkout says which stores are paid, with their orders (`order` too), so an agent reading it does
    // not buy them again (audit Y5).
    messages: [...ucpMessages(s), ...(view.notes ?? []).map((n) => ({ type: "info", code: n.code, content: n.content, ...(n.details ? { details: n.details } : {}) }))],
    ...(view.continueUrl ? { continue_url: view.continueUrl } : {}),
    ...(view.order ? { order: { id: view.order.id, order_ids: view.order.ids, permalink_url: publicUrl(view.siteUrl, `/api/v1/agent/orders/${view.order.id}`) } } : {}),
  };
}

/**
 * UCP's severity of one of our errors: a retryable one is `recoverable` (the platform retries or reads the session);
 * a payment waiting for the buyer's approval at the link is `requires_buyer_review` (once the buyer has decided, the
 * platform completes again: `recoverable`, review RD-1); any other refusal needs the buyer's input (review RM-F2: a
 * payment running or unknown was labelled as if the buyer could act on it).
 */
function ucpSeverity(err: ActorError): "recoverable" | "requires_buyer_input" | "requires_buyer_review" {
  if (err.details?.reason === "payment_in_progress" && err.details.status === "PENDING_EXTERNAL_CONFIRMATION" && err.details.buyer_decided !== true) return "requires_buyer_review";
  return ERROR_TABLE[err.code].retryable ? "recoverable" : "requires_buyer_input";
}

export function ucpError(err: ActorError) {
  const spec = ERROR_TABLE[err.code];
  return {
    status: spec.http,
    body: {
      ucp: { version: UCP_VERSION },
      messages: [
        {
          type: "error",
          code: err.code,
          content: err.message,
          severity: ucpSeverity(err),
          // UCP's JSONPath to the request field at fault, as ACP's `param`.
          // not for a field located elsewhere (the Idempotency-Key header): a JSONPath names a body member
          ...(typeof err.details?.field === "string" && (typeof err.details.location !== "string" || err.details.location === "body")
            ? { path: `$.${err.details.field}` }
            : {}),
          ...(err.details ? { details: err.details } : {}),
        },
      ],
    },
  };
}
