/**
 * ACP API version 2026-04-17's requests and answers over the same session and cart as 2025-09-29's (acp.ts): one
 * mapping layer, chosen by the request's `API-Version` (acp-versions.ts). Derived by reading the version's published
 * schema, agentic-commerce-protocol/agentic-commerce-protocol `spec/2026-04-17/json-schema/schema.agentic_checkout.json`
 * (commit 3535c13dd345c9a08068e958eab46f320c476435) and its OpenAPI document; test/fixtures/acp-2026-04-17.schema.json
 * is our own schema of the members served, which test/http/acp-2026-04-17-contract.test.ts validates answers against.
 *
 * What changed from 2025-09-29 (docs/protocols.md "API version" has the table):
 * - create and update name the items `line_items` (`Item`: `id`, optional `name`, `unit_amount`; no quantity in the
 *   schema, so an entry is one unit unless it carries `quantity`, and a repeated id adds up); `items: [{id, quantity}]`
 *   as the version's RFC and OpenAPI examples write it is read the same way. Create's `currency` is checked against
 *   the cart's, `capabilities` must be an object (nothing in it is used).
 * - the address is `fulfillment_details {name, phone_number, email, address}` (its Address adds `company`; each part
 *   the object names replaces the session's, one it leaves out stays), the pick
 *   `selected_fulfillment_options: [{type: "shipping", option_id, item_ids}]`, one per store (our options are per store;
 *   `item_ids` are not needed to place it); 2025-09-29's `fulfillment_address` / `fulfillment_option_id` are refused.
 * - its Buyer adds `full_name`, `customer_id` (kept) and `account_type`, `authentication_status`, `company`,
 *   `loyalty`, `tax_exemption` (checked, not kept); a buyer is shown only with an email (the schema requires one).
 * - complete's `payment_data` is `{handler_id, instrument: {type, credential: {type, token}}}` (2025-09-29's `token`
 *   is still read when there is no credential token, and a refusal of it names `payment_data.token`).
 * - the session adds `protocol.version`, `capabilities` (required; `{}`: no payment handler or intervention is
 *   declared), `selected_fulfillment_options`, `continue_url` (the buyer's approval link, with status
 *   `requires_escalation`), status `expired`; line items and options carry `totals[]`; `order.type` is `order`.
 * - its Error has no `request_not_idempotent` type and allows no other member: no `details`; the bridge's own
 *   Idempotency-Key conflict is code `idempotency_conflict` and a key whose first request still runs
 *   `idempotency_in_flight`, as the version names them; `type` follows the version's definitions (`error`).
 */
import { ERROR_TABLE, fail, type ActorError } from "../../actors/runtime/errors.ts";
import { asRecord, boundedToken, type BridgeSession, type ItemFields } from "./common.ts";
import {
  acpAllMessages,
  acpItems,
  acpLines,
  acpOptions,
  acpProvider,
  acpTotals,
  keptAddress,
  membersOf,
  publicUrl,
  type AcpInput,
  type AcpShapes,
  type AcpView,
} from "./acp.ts";
import { knownStringMembers, type MemberRules } from "./input.ts";
import { optionIdOf } from "./shipping.ts";

const VERSION = "2026-04-17" as const;
const SCHEMA = `ACP ${VERSION}`;

const FIELDS = { address: "fulfillment_details.address", option: "selected_fulfillment_options", token: "payment_data.instrument.credential.token" } as const;

/** The Buyer members kept and shown (strings); the others of the version's Buyer are checked and dropped. */
export const ACP_2026_BUYER_MEMBERS = ["first_name", "last_name", "full_name", "email", "phone_number", "customer_id"] as const;
export const ACP_2026_ADDRESS_MEMBERS = ["name", "line_one", "line_two", "city", "state", "country", "postal_code", "company"] as const;
const CONTACT_MEMBERS = ["name", "phone_number", "email"] as const;

const oneOf =
  (values: readonly string[]) =>
  (v: unknown, at: string): void => {
    if (v === undefined || v === null) return;
    if (typeof v !== "string" || !values.includes(v)) throw fail("INVALID_ARGUMENT", `${at} must be one of ${values.join(", ")}.`, { field: at });
  };
const anObject = (v: unknown, at: string): void => {
  if (v === undefined || v === null) return;
  if (typeof v !== "object" || Array.isArray(v)) throw fail("INVALID_ARGUMENT", `${at} must be an object.`, { field: at });
};

const BUYER: MemberRules = {
  what: `an ACP ${VERSION} Buyer`,
  strings: ACP_2026_BUYER_MEMBERS,
  checked: {
    account_type: oneOf(["guest", "registered", "business"]),
    authentication_status: oneOf(["authenticated", "guest", "requires_signin"]),
    company: anObject,
    loyalty: anObject,
    tax_exemption: anObject,
  },
  others: "refuse",
  schema: `${SCHEMA}'s Buyer`,
};
const ADDRESS: MemberRules = { what: `an ACP ${VERSION} Address`, strings: ACP_2026_ADDRESS_MEMBERS, others: "refuse", schema: `${SCHEMA}'s Address` };
const CONTACT: MemberRules = {
  what: `an ACP ${VERSION} FulfillmentDetails`,
  strings: CONTACT_MEMBERS,
  checked: { address: () => {} },
  others: "refuse",
  schema: `${SCHEMA}'s FulfillmentDetails`,
};

/** 2025-09-29 members this version replaced: refused with the way to say it now, never silently ignored. */
const REPLACED: Record<string, string> = {
  fulfillment_address: "fulfillment_details.address",
  fulfillment_option_id: "selected_fulfillment_options[] ({type: \"shipping\", option_id, item_ids})",
};

const itemFields = (field: string): ItemFields => ({ list: field, id: (i) => `${field}[${i}].id`, quantity: (i) => `${field}[${i}].quantity` });

/** `line_items` (the schema's), or `items` (the version's RFC examples); never both. */
function readItems(b: Record<string, unknown>, required: boolean): AcpInput["items"] {
  if (b.line_items !== undefined && b.items !== undefined) {
    throw fail("INVALID_ARGUMENT", "Send the items once: line_items (or items), not both.", { field: "items" });
  }
  const field = b.items !== undefined ? "items" : "line_items";
  const raw = b[field];
  if (raw === undefined && !required) return undefined;
  return { list: acpItems(raw, field), fields: itemFields(field) };
}

/**
 * `fulfillment_details`: who receives the goods (name, phone_number, email) and where (address). Each part the object
 * names replaces the session's, a part it leaves out stays (a contact-only update keeps the address and its shipping);
 * `address: null` clears the address, `fulfillment_details: null` both.
 */
function readDetails(raw: unknown, out: AcpInput): void {
  if (raw === undefined) return;
  if (raw === null) {
    out.contact = null;
    out.address = { kept: null, dest: null };
    return;
  }
  const contact = knownStringMembers(raw, "fulfillment_details", CONTACT);
  const r = asRecord(raw);
  if (CONTACT_MEMBERS.some((m) => m in r)) out.contact = contact ?? null;
  if ("address" in r) out.address = keptAddress(knownStringMembers(r.address, "fulfillment_details.address", ADDRESS) ?? null, FIELDS.address);
}

/** Whether an update's `fulfillment_details` changes the shipping (its address), not only the contact. */
function changesAddress(raw: unknown): boolean {
  return raw === null || (raw !== undefined && "address" in asRecord(raw));
}

/** `selected_fulfillment_options[]`: shipping picks (one per store); each option id one of the session's options. */
function readSelected(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const field = FIELDS.option;
  if (!Array.isArray(raw)) throw fail("INVALID_ARGUMENT", `${field} must be an array of {type: "shipping", option_id, item_ids}.`, { field });
  return raw.map((e, i) => {
    const at = `${field}[${i}]`;
    const r = asRecord(e);
    if (r.type !== "shipping") throw fail("INVALID_ARGUMENT", `${at}.type must be "shipping" (the only fulfillment this service offers).`, { field: `${at}.type` });
    if (r.item_ids !== undefined && !(Array.isArray(r.item_ids) && r.item_ids.every((x) => typeof x === "string"))) {
      throw fail("INVALID_ARGUMENT", `${at}.item_ids must be an array of line item ids.`, { field: `${at}.item_ids` });
    }
    return optionIdOf(r.option_id, `${at}.option_id`);
  });
}

/** 2025-09-29's token member, which this version's complete still reads when the request has no credential token. */
const LEGACY_TOKEN = "payment_data.token";

/**
 * A complete's token: `payment_data.instrument.credential.token`, or 2025-09-29's `payment_data.token` when the
 * request has no credential token; with the member it was read from, which a refusal of it names (review R-3: a
 * refused `payment_data.token` was named by the credential member, which the request did not have).
 */
function readToken(b: Record<string, unknown>): { token: string; field: string } {
  const pd = asRecord(b.payment_data);
  const credential = asRecord(asRecord(pd.instrument).credential).token;
  const field = credential == null && pd.token != null ? LEGACY_TOKEN : FIELDS.token;
  // the 2025-09-29 payment data, provider included: its provider is checked as that version checks it
  if (field === LEGACY_TOKEN) acpProvider(pd);
  const token = field === LEGACY_TOKEN ? pd.token : credential;
  if (typeof token !== "string" || token.length === 0) {
    const what = field === LEGACY_TOKEN ? `${LEGACY_TOKEN} must be a non-empty string` : `${FIELDS.token} is required`;
    throw fail("MISSING_REQUIRED_ARGUMENT", `${what} (this service's sandbox payment token).`, { field });
  }
  return { token: boundedToken(token, field), field };
}

function read(body: unknown, kind: "create" | "update" | "complete"): AcpInput {
  const b = asRecord(body);
  const out: AcpInput = {};
  const buyer = knownStringMembers(b.buyer, "buyer", BUYER);
  if (buyer !== undefined) out.buyer = buyer;
  if (kind === "complete") return out;
  for (const [old, now] of Object.entries(REPLACED)) {
    if (b[old] !== undefined) throw fail("INVALID_ARGUMENT", `${old} is ACP 2025-09-29's; in ${VERSION} send ${now}.`, { field: old });
  }
  const items = readItems(b, kind === "create");
  if (items) out.items = items;
  readDetails(b.fulfillment_details, out);
  const picked = readSelected(b.selected_fulfillment_options);
  if (picked && picked.length > 0) out.optionIds = picked;
  if (kind === "create") {
    if (b.currency !== undefined) {
      if (typeof b.currency !== "string" || !/^[A-Za-z]{3}$/.test(b.currency)) throw fail("INVALID_ARGUMENT", "currency must be an ISO 4217 code (e.g. usd).", { field: "currency" });
      out.currency = b.currency.toLowerCase();
    }
    anObject(b.capabilities, "capabilities");
  }
  return out;
}

/** The session's status in this version's enum (it adds requires_escalation, expired, …). */
export function acp20260417Status(view: AcpView): string {
  if (view.canceled) return "canceled";
  switch (view.live) {
    case "OPEN":
      return "not_ready_for_payment";
    case "READY_FOR_PAYMENT":
      return "ready_for_payment";
    case "COMPLETED":
      return "completed";
    case "EXPIRED":
      return "expired";
    case "CANCELED":
    case "FAILED":
      return "canceled";
    case "PENDING_EXTERNAL_CONFIRMATION":
      // the buyer acts at continue_url; with no link to show (nothing waits for a buyer) the payment runs
      return view.continueUrl ? "requires_escalation" : "in_progress";
    default:
      return "in_progress";
  }
}

const money = (type: string, display_text: string, amount: number) => ({ type, display_text, amount });

function session(s: BridgeSession, view: AcpView) {
  const cart = view.cart;
  const lines = acpLines(cart);
  const buyer = membersOf(s.meta.buyer, ACP_2026_BUYER_MEMBERS);
  const address = membersOf(s.meta.fulfillment_address, ACP_2026_ADDRESS_MEMBERS);
  const contact = membersOf(s.meta.fulfillment_contact, CONTACT_MEMBERS);
  const details = { ...(contact ?? {}), ...(address ? { address } : {}) };
  const { options, selected } = acpOptions(s, cart);
  return {
    id: s.id,
    protocol: { version: VERSION },
    capabilities: {},
    ...(buyer?.email ? { buyer } : {}),
    status: acp20260417Status(view),
    currency: cart.currency.toLowerCase(),
    line_items: lines.map((l) => ({
      id: l.id,
      item: { id: l.itemId, name: l.title, unit_amount: l.unit },
      quantity: l.quantity,
      name: l.title,
      unit_amount: l.unit,
      totals: [money("items_base_amount", "Item(s) total", l.base), money("subtotal", "Subtotal", l.total), money("tax", "Tax", 0), money("total", "Total", l.total)],
    })),
    ...(Object.keys(details).length > 0 ? { fulfillment_details: details } : {}),
    fulfillment_options: options.map((o) => ({
      type: "shipping",
      id: o.id,
      title: o.title,
      description: o.text,
      totals: [money("fulfillment", "Shipping", o.cost), money("tax", "Tax", 0), money("total", "Total", o.cost)],
    })),
    ...(selected.length > 0
      ? { selected_fulfillment_options: selected.map((p) => ({ type: "shipping", option_id: p.optionId, item_ids: lines.filter((l) => l.merchantSlug === p.merchantSlug).map((l) => l.id) })) }
      : {}),
    totals: acpTotals(cart.totals),
    messages: acpAllMessages(s, view, FIELDS),
    links: [{ type: "terms_of_use", url: publicUrl(view.siteUrl, "/api/v1/agent/docs") }],
    ...(view.continueUrl ? { continue_url: view.continueUrl } : {}),
    ...(view.order ? { order: { type: "order", id: view.order.id, checkout_session_id: s.id, permalink_url: publicUrl(view.siteUrl, `/api/v1/agent/orders/${view.order.id}`) } } : {}),
  };
}

/**
 * This version's Error `type`, by the version's own definitions (its Error description, review R1-5): `processing_error`
 * is an unexpected server-side failure, `service_unavailable` a temporary unavailability, `invalid_request` a
 * malformed request or an idempotency problem. So a 503 (overload, an actor or dependency unreachable: retry later)
 * is service_unavailable and any other 5xx (500, 501, 502) processing_error; a 402 is the buyer's or the instrument's
 * refusal (declined, not approved, an x402 payment required), not a server fault, so invalid_request (the way on is
 * another instrument or asking the buyer again), except a payment the processor failed and rolled back
 * (PAYMENT_FAILED_ROLLED_BACK), which is processing_error. Everything else is invalid_request.
 */
export function acp20260417ErrorType(err: ActorError): "invalid_request" | "processing_error" | "service_unavailable" {
  const http = ERROR_TABLE[err.code].http;
  if (http === 503) return "service_unavailable";
  if (http >= 500) return "processing_error";
  if (err.code === "PAYMENT_FAILED_ROLLED_BACK") return "processing_error";
  return "invalid_request";
}

/**
 * This version's codes for the bridge's own idempotency refusals (its Error description names idempotency_conflict
 * and idempotency_in_flight; idempotency_key_required is never answered: a request without a key is served, as the
 * 2025-09-29 bridge always did), and `unsupported_api_version`; every other code is ours.
 */
function errorCode(err: ActorError): string {
  if (err.details?.reason === "unsupported_api_version") return "unsupported_api_version";
  if (err.code === "IDEMPOTENCY_KEY_CONFLICT" && err.details?.field === "Idempotency-Key") return "idempotency_conflict";
  if (err.code === "CHECKOUT_ALREADY_IN_PROGRESS" && err.details?.reason === "idempotency_in_flight") return "idempotency_in_flight";
  return err.code;
}

/** This version's Error: `type` one of invalid_request, processing_error, service_unavailable; no other member than its own. */
function error(err: ActorError) {
  const spec = ERROR_TABLE[err.code];
  const type = acp20260417ErrorType(err);
  const field = err.details?.field;
  const code = errorCode(err);
  const versions = err.details?.reason === "unsupported_api_version" ? { supported_versions: err.details.supported_versions } : {};
  return { status: spec.http, body: { type, code, message: err.message, ...(typeof field === "string" && field !== "Idempotency-Key" ? { param: `$.${field}` } : {}), ...versions } as Record<string, unknown> };
}

export const ACP_2026_04_17: AcpShapes = {
  version: VERSION,
  fields: FIELDS,
  read,
  buyer: (body) => knownStringMembers(asRecord(body).buyer, "buyer", BUYER),
  token: (body) => readToken(asRecord(body)),
  changes(body) {
    const b = asRecord(body);
    return { items: b.line_items !== undefined || b.items !== undefined, shipping: changesAddress(b.fulfillment_details) || b.selected_fulfillment_options !== undefined };
  },
  session,
  error,
};
