/**
 * The protocol bridge's routes: ACP checkout sessions, UCP checkout sessions and AP2 payment mandates, each in its
 * own request and response shapes, all mapped onto the same cart/checkout actors (common.ts). POST
 * /api/v1/agent/checkout hands a request detected as one of these protocols (detect.ts) to `bridgeCheckout`.
 */
import { Elysia, t } from "elysia";
import { cartActor, cartIdOfSession } from "../../actors/cart/index.ts";
import type { CartView, CompleteReply, PreviewView } from "../../actors/cart/messages.ts";
import { absoluteApprovalUrl, cardRail } from "../../actors/payments/card-rails.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { ap2KeyConflict, bridgeKeyConflict, ROLLBACK_CODES, rollbackMessageFor } from "../../actors/cart/rollback-text.ts";
import { ok } from "../envelope.ts";
import { agentAuth, type AgentPrincipal } from "../plugins/auth.ts";
import { retryAfterOf } from "../plugins/errors.ts";
import { optionalObjectBody } from "../rest/optional-body.ts";
import type { Services } from "../services.ts";
import { ACP_DEFAULT_API_VERSION, ACP_FIELDS, acpOrderOf, acpServedVersion, acpVersioned, type AcpApiVersion, type AcpInput, type AcpShapes } from "./acp.ts";
import { acpShapes } from "./acp-versions.ts";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { verifyUserAuthorization } from "./ap2-auth.ts";
import { checkMandate, mandateLimits, parseAp2, type Ap2Mandate } from "./ap2.ts";
import {
  asRecord,
  bindMandate,
  completeCart,
  derivedUuidV4,
  getCart,
  isReplayedRefusal,
  loadSession,
  newCart,
  requestHash,
  requireCartScope,
  saveFollowedShipping,
  saveSession,
  withIdempotency,
  withSessionClaim,
  type Answer,
  type BridgeProtocol,
  type BridgeSession,
  type ItemFields,
  type ItemInput,
} from "./common.ts";
import {
  assertUpdatable,
  cartExpired,
  cartSessionLive,
  cancelLiveCartSession,
  foreignDecidedNote,
  foreignWaitingNote,
  expiredCartView,
  liveCheckoutStatus,
  merchantCanceled,
  merchantCanceledRefusal,
  cartRefusedAfterMerchantCancel,
  paidOrdersOf,
  retireCart,
  sessionNotes,
  type PaidOrders,
  type SessionNote,
} from "./session-state.ts";
import { bridgeShippingError, followCartDestination, priceCart, sessionDestination, type Destination } from "./shipping.ts";
import { assertStorableRequest } from "./input.ts";
import { UCP_FIELDS, UCP_ITEM_FIELDS, ucpBuyer, ucpCheckout, ucpCurrency, ucpError, ucpFulfillmentInput, ucpItems, ucpPaymentToken, ucpStatusOfSession, type UcpStatus } from "./ucp.ts";
import { isUuid } from "../../infra/uuid.ts";
import { assignHeaders } from "../response-headers.ts";

type SetLike = { status?: number | string; headers: Record<string, string | number> };

async function respond(set: SetLike, protocol: BridgeProtocol, work: () => Promise<Answer>): Promise<unknown> {
  try {
    const a = await work();
    set.status = a.status;
    if (a.headers) assignHeaders(set.headers, a.headers);
    return a.body;
  } catch (err) {
    // A refusal replayed under its Idempotency-Key says so, as a replayed success does (docs/protocols.md "Idempotency").
    if (isReplayedRefusal(err)) set.headers["idempotent-replayed"] = "true";
    if (!(err instanceof ActorError)) throw err;
    const said = forProtocol(err, protocol);
    if (protocol === "ap2") throw said; // AP2 has no HTTP error shape: our envelope
    // a cart's hold bound says when to come back, as on REST (audit B-2)
    const retryAfter = retryAfterOf(said);
    if (retryAfter !== undefined) set.headers["retry-after"] = retryAfter;
    // ACP's error in the version the request is served in (acp.ts `acpVersioned` echoed it)
    const e = protocol === "acp" ? acpShapes(acpServedVersion(set.headers)).error(said) : ucpError(said);
    set.status = e.status;
    return e.body;
  }
}

/**
 * The cart's answers that name REST/MCP's `idempotency_key` and calls, which no bridge exposes, in the protocol's
 * words (actors/cart/rollback-text.ts): a rolled-back payment's way on (review U-2), its `idempotency_key_bound`
 * detail dropped; and the cart's key conflict, whose ways (`details.next`, by the session's status: review S-2) each
 * protocol reaches by its own operations. Code, status and details stay as the cart gave them.
 */
function forProtocol(err: ActorError, protocol: BridgeProtocol): ActorError {
  if (err.code === "IDEMPOTENCY_KEY_CONFLICT" && Array.isArray(err.details?.next)) {
    // the cart's key conflict (the bridge's own Idempotency-Key conflict carries no `next` and keeps its text)
    const next = err.details.next as string[];
    const status = String(err.details.status);
    return new ActorError(err.code, protocol === "ap2" ? ap2KeyConflict(next, status) : bridgeKeyConflict(next, status, protocol), err.details);
  }
  if (!ROLLBACK_CODES.has(err.code)) return err;
  const { idempotency_key_bound: _bound, ...details } = err.details ?? {};
  return new ActorError(err.code, rollbackMessageFor(err.message, details.refused_at_approval_link === true, protocol), details);
}

const idemOf = (request: Request) => request.headers.get("idempotency-key");

/**
 * An Idempotency-Key's scope and request hash. An ACP request served in another version than the default is another
 * request (its answer is in that version's shape): the same key sent again in another version is the key conflict,
 * never a replay of an answer in the other version's shape. The default version's hash is the one recorded before
 * versions were served, so its records still replay.
 */
function scope(protocol: BridgeProtocol, agent: AgentPrincipal, request: Request, body: unknown, v?: AcpApiVersion) {
  const path = new URL(request.url).pathname;
  const versioned = v && v !== ACP_DEFAULT_API_VERSION ? `${path}#API-Version=${v}` : path;
  return { protocol, agentKeyId: agent.keyId, key: idemOf(request), hash: requestHash(request.method, versioned, body) };
}

/** What was paid, when the cart's checkout already finished (a repeated complete answers with the order). */
async function alreadyCompleted(err: unknown): Promise<{ id: string; ids: string[] } | null> {
  if (err instanceof ActorError && err.code === "CHECKOUT_ALREADY_IN_PROGRESS" && err.details?.status === "COMPLETED") {
    const ids = (err.details.order_ids as string[] | undefined) ?? [];
    return ids[0] ? { id: ids[0], ids } : null;
  }
  return null;
}

/**
 * What was paid, when the session's cart was paid through another route (REST, MCP) under that route's own key: the
 * cart refuses the session's key as a conflict, and the session's complete answers with the cart's orders instead.
 */
async function paidElsewhere(svc: Services, s: BridgeSession, err: unknown): Promise<{ id: string; ids: string[] } | null> {
  if (!(err instanceof ActorError) || err.code !== "IDEMPOTENCY_KEY_CONFLICT" || err.details?.status !== "COMPLETED") return null;
  const paid = await paidOrdersOf(svc, s.agentKeyId, s.cartId);
  return paid.order_ids[0] ? { id: paid.order_ids[0], ids: paid.order_ids } : null;
}

// ------------------------------------------------------------------------------------------------------- ACP

/**
 * What an ACP create or update says, onto the session's record (the version's words are read by its `AcpShapes`).
 * The buyer keeps the version that wrote it (`keepAcpBuyer`).
 */
function applyAcpInput(s: BridgeSession, input: AcpInput, version: AcpApiVersion): void {
  if (input.buyer !== undefined) keepAcpBuyer(s, input.buyer, version);
  if (input.address !== undefined) s.meta.fulfillment_address = input.address.kept;
  // No destination, no pick: the option picked for the old address is not kept for the next one (review A-8).
  if (input.address !== undefined && input.address.dest === null) delete s.meta.fulfillment_option_id;
  if (input.contact !== undefined) s.meta.fulfillment_contact = input.contact;
  if (input.optionIds?.length) s.meta.fulfillment_option_id = input.optionIds[0];
}

/**
 * An ACP buyer onto the session, with the version that wrote it: a 2026-04-17 Buyer needs only an email, so a
 * 2025-09-29 answer shows one written in 2026-04-17 only as a Buyer of its own version (acp.ts `acp2025Buyer`, review
 * R1-1), while a buyer a 2025-09-29 client sent is echoed as it sent it (docs/protocols.md).
 */
function keepAcpBuyer(s: BridgeSession, buyer: Record<string, string> | null, version: AcpApiVersion): void {
  s.meta.buyer = buyer;
  s.meta.buyer_version = version;
}

/**
 * Prices the session's cart with its destination (and a new pick) and records the shipping on the session. `status`:
 * our checkout status after it, OPEN while the shipping still needs an address or a pick.
 */
async function priceSession(
  svc: Services,
  s: BridgeSession,
  dest: Destination | null,
  optionIds: string[],
  fields: { address: string; option: string },
  clear = false,
): Promise<{ cart: CartView | PreviewView; status: string }> {
  const priced = await priceCart(svc, s.agentKeyId, s.cartId, dest, optionIds, fields, clear);
  s.meta.shipping = priced.shipping;
  // What an expired cart's session is shown in when nothing of it was paid (session-state.ts `expiredCartView`).
  s.meta.currency = priced.cart.currency;
  return { cart: priced.cart, status: priced.previewStatus ?? "OPEN" };
}

/**
 * Saves a claimed session after an update's cart work; a claim lost meanwhile (its lease ran out and another request
 * took the session) saves nothing and is the same 409 as a busy session.
 */
async function saveClaimed(svc: Services, s: BridgeSession): Promise<void> {
  if (await saveSession(svc, s)) return;
  throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "Another request on this checkout session took it over; read the session and retry.", { checkout_session_id: s.id, reason: "session_busy" });
}

/**
 * A completion's record of the order (read back by `get`). The approval link is not recorded: a read builds it from
 * the live state (`waitingApproval`), and the complete deletes a link an earlier build stored. It is written after
 * the payment, so it can only add to what the payment's answer says, never replace it (audit F-1: a buyer value the
 * database refused turned a captured payment into a 400): a lost claim or a failed write is logged, and the agent is
 * still told what the payment did. The request's own values were validated before
 * the payment and saved before it (`saveRequestValues`), so this write holds only what the payment produced; if it
 * is lost, a read still finds the order from the cart's paid orders (`orderOf`).
 */
async function saveAfterPayment(svc: Services, s: BridgeSession): Promise<void> {
  try {
    if (!(await saveSession(svc, s))) svc.log.warn("bridge session not saved after its payment: its claim was taken over", { protocol: s.protocol });
  } catch (err) {
    svc.log.error("bridge session not saved after its payment; the payment's answer stands", { protocol: s.protocol, error: err instanceof Error ? err.message : String(err) });
  }
}

/**
 * A complete's own values (ACP `buyer`) saved on the session before the payment: a write the database refuses is then
 * the request's refusal with nothing charged, not a failure after the money moved (audit F-1).
 */
async function saveRequestValues(svc: Services, s: BridgeSession): Promise<void> {
  await saveClaimed(svc, s);
}

/**
 * The cart a create made and could not keep (its pricing or the session's save refused): discarded, so no priced cart
 * the agent never heard of is left behind (audit F-3); a failure to discard is logged and the cart expires unused.
 */
async function discardNewCart(svc: Services, keyId: string, cartId: string): Promise<void> {
  await retireCart(svc, keyId, cartId).catch((e: unknown) => {
    svc.log.warn("bridge: the cart of a refused create was not discarded; it expires unused", { error: e instanceof Error ? e.message : String(e) });
  });
}

/**
 * The order a session shows: the completion's, else what was recorded at completion, else the cart's paid orders (a
 * partly paid session, or a completion whose record was not written).
 */
function orderOf(s: BridgeSession, paid: PaidOrders, done: { id: string; ids: string[] } | null): { id: string; ids: string[] } | null {
  return done ?? (s.meta.order as { id: string; ids: string[] } | undefined) ?? (paid.order_ids[0] ? { id: paid.order_ids[0], ids: paid.order_ids } : null);
}

/** What a session read shows of its cart now (`liveState`). */
interface LiveState {
  cart: CartView;
  status: string;
  paid: PaidOrders;
  notes: SessionNote[];
  /** The buyer's approval link, while the payment waits for it. */
  continueUrl?: string;
  /** The waiting payment was started through another route under that route's key (`waitingApproval`). */
  foreign?: boolean;
}

/**
 * What every session read shows, from the cart as it is now: the status from its live checkout session (never one
 * written down after an earlier call: audit Y3), and the cart's paid orders with a note (audit Y5, session-state.ts
 * `sessionNotes`). A cart idle for a day expires (docs/checkout.md R5-5) while the session and its orders stay: the
 * session then reads as ended, from its paid orders (review RM-F1), instead of the cart's 404 "create a new cart",
 * which told the agent to buy the paid goods again. `shown`: the approval link a complete's own answer carries (its
 * reply's), shown instead of asking the processor.
 */
async function liveState(svc: Services, s: BridgeSession, shown?: string): Promise<LiveState> {
  let cart: CartView | null = null;
  let gone: unknown = null;
  try {
    cart = await getCart(svc, s.agentKeyId, s.cartId);
  } catch (err) {
    if (!cartExpired(err)) throw err;
    gone = err;
  }
  const paid = await paidOrdersOf(svc, s.agentKeyId, s.cartId);
  // A merchant's cancel (or block) ended the session: it reads canceled, never "complete again" (audit B-1).
  if (merchantCanceled(cart, paid)) s.canceled = true;
  // The cart's destination changed through REST or MCP: the session shows it and its options (helper A, session 21),
  // quoted once, at the first answer that notices it (the cart view carries its destination: nothing more is read).
  if (cart) {
    const before = s.meta.shipping;
    if (await followCartDestination(svc, s, cart, shippingFieldsOf(s))) {
      await saveFollowedShipping(svc, s, before).catch((err: unknown) => {
        svc.log.warn("bridge: the session's followed destination was not saved; the next read quotes it again", { protocol: s.protocol, error: err instanceof Error ? err.message : String(err) });
      });
    }
  }
  if (!cart) {
    const ended = await expiredCartView(svc, s, paid);
    if (!ended) throw gone;
    return { cart: ended, status: "EXPIRED", paid, notes: sessionNotes(paid, false, s.canceled ? "canceled" : "expired") };
  }
  const live = liveCheckoutStatus(s, cart);
  const notes = sessionNotes(paid, cart.status === "COMPLETED", s.canceled ? "canceled" : "open");
  if (live !== "PENDING_EXTERNAL_CONFIRMATION") return { cart, status: live, paid, notes };
  // The link of the payment waiting now, on every read while the buyer has not decided (review RM-F6), asked of the
  // processor rather than read off the session (review RA-3); the complete's own answer shows the link it just got.
  const waiting = shown ? { url: shown, foreign: false } : await waitingApproval(svc, s, cart);
  // A payment started through another route (REST, MCP, AP2) under its own key: completing this session is the cart's
  // key conflict, so the session says the way on instead of "complete again" (docs/review.md session 11, left).
  const protocol = s.protocol === "ucp" ? "ucp" : "acp";
  if (waiting.url) {
    const more = waiting.foreign && protocol === "ucp" ? [foreignWaitingNote("ucp")] : [];
    return { cart, status: live, paid, notes: [...notes, ...more], continueUrl: waiting.url, foreign: waiting.foreign };
  }
  // Every store is decided but the payment is another route's (review R1-6): this session's complete would be the
  // cart's key conflict and its update is refused, so it reads as a payment running (ACP `in_progress`, UCP
  // `complete_in_progress`: the live PENDING_EXTERNAL_CONFIRMATION with no link), never as "complete me".
  if (waiting.foreign) return { cart, status: live, paid, notes: [...notes, foreignDecidedNote(protocol)], foreign: true };
  // Every store is decided but the agent has not completed again yet (review RD-1): nothing waits for the buyer, so
  // the session reads as what the agent does next (complete: UCP `ready_for_complete`, ACP `ready_for_payment`),
  // never `requires_escalation` without its continue_url (UCP: MUST be provided with that status).
  return { cart, status: "READY_FOR_PAYMENT", paid, notes: [...notes, BUYER_DECIDED] };
}

/** The request fields a session's shipping refusals name, in its protocol's terms. */
const shippingFieldsOf = (s: BridgeSession) => (s.protocol === "ucp" ? UCP_FIELDS : ACP_FIELDS);

/** The currency the session's create (or, for UCP, a later update) asked for, kept in its meta; undefined: none asked. */
const askedCurrencyOf = (s: BridgeSession): string | undefined => (typeof s.meta.asked_currency === "string" ? s.meta.asked_currency : undefined);

/** The note of a session whose buyer decided at every approval link while the agent has not completed again. */
const BUYER_DECIDED: SessionNote = {
  code: "buyer_decided",
  content: "The buyer has decided at the approval link; complete the session again under a new Idempotency-Key to finish the payment (the same key replays the earlier answer; a refusal is then answered as the payment's refusal).",
};

/**
 * An items update: our carts do not change items, so the session moves to a new cart with them, priced by `price`.
 * The cart it leaves is taken out of use before the move is saved (review RM-F3): left READY_FOR_PAYMENT it stayed
 * payable through REST, MCP or AP2 (its id is the session id's hex), such a payment never showed in the session, and
 * completing the session paid the same store again. When that cart refuses (a payment began on it meanwhile), the
 * new cart is discarded, the session stays where it was and the update is 409.
 */
async function moveToNewCart<T>(svc: Services, s: BridgeSession, items: ItemInput[], fields: ItemFields, price: (cart: CartView) => Promise<T>): Promise<T> {
  const from = s.cartId;
  const made = await newCart(svc, s.agentKeyId, items, fields);
  s.cartId = made.id;
  try {
    const priced = await price(made);
    await retireLeftCart(svc, s, from);
    return priced;
  } catch (err) {
    const unused = s.cartId;
    s.cartId = from;
    await retireCart(svc, s.agentKeyId, unused).catch((e: unknown) => {
      svc.log.warn("bridge: the new cart of a refused items update was not discarded; it expires unused", { error: e instanceof Error ? e.message : String(e) });
    });
    throw err;
  }
}

/** Retires the cart an items update leaves; a refusal is answered by what changed that cart (a payment through another route). */
async function retireLeftCart(svc: Services, s: BridgeSession, cartId: string): Promise<void> {
  try {
    await retireCart(svc, s.agentKeyId, cartId);
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    await assertSessionUpdatable(svc, { ...s, cartId }, { items: true, shipping: false }); // paid, paying or completed meanwhile: that refusal
    throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "The session's cart was previewed or paid through another route during this update; read the session and retry.", {
      checkout_session_id: s.id,
      reason: "cart_changed",
    });
  }
}

async function acpCreate(svc: Services, agent: AgentPrincipal, body: unknown, shapes: AcpShapes): Promise<Answer> {
  requireCartScope(agent, "an ACP checkout session");
  // Everything the request says is checked before the cart is made (audit F-3, F-4).
  assertStorableRequest(body);
  const input = shapes.read(body, "create");
  const items = input.items!;
  const cart = await newCart(svc, agent.keyId, items.list, items.fields);
  const s: BridgeSession = { id: `cs_${cart.id.replace(/-/g, "")}`, protocol: "acp", agentKeyId: agent.keyId, cartId: cart.id, meta: { buyer: null, fulfillment_address: null, completes: 0 }, canceled: false };
  applyAcpInput(s, input, shapes.version);
  // the currency asked for is kept (meta.asked_currency): an update's new line_items must stay in it (acpUpdate)
  if (input.currency !== undefined) s.meta.asked_currency = input.currency;
  let priced: { cart: CartView | PreviewView; status: string };
  try {
    const currency = cart.currency.toLowerCase();
    if (input.currency !== undefined && input.currency !== currency) {
      throw fail("INVALID_ARGUMENT", `currency ${input.currency} is not the session's: its items are priced in ${currency}.`, { field: "currency", currency });
    }
    priced = await priceSession(svc, s, input.address?.dest ?? null, input.optionIds ?? [], shapes.fields);
    await saveSession(svc, s);
  } catch (err) {
    await discardNewCart(svc, agent.keyId, cart.id);
    throw err;
  }
  return { status: 201, body: shapes.session(s, { cart: priced.cart, live: priced.status, canceled: false, siteUrl: svc.siteUrl }) };
}

/** An ACP session as it is now, in the version `shapes` serves (any session reads in any version: docs/protocols.md). */
async function acpView(svc: Services, s: BridgeSession, shapes: AcpShapes, done: { id: string; ids: string[] } | null = null, continueUrl?: string): Promise<unknown> {
  const live = await liveState(svc, s, continueUrl);
  return shapes.session(s, {
    cart: live.cart,
    live: live.status,
    canceled: s.canceled,
    siteUrl: svc.siteUrl,
    order: orderOf(s, live.paid, done),
    notes: live.notes,
    ...(live.continueUrl ? { continueUrl: live.continueUrl, foreign: live.foreign === true } : {}),
  });
}

/**
 * A complete's check that the session has not ended: canceled by its agent, or by its merchant (audit B-1: the cart's
 * next checkout would preview the ended cart session anew and charge the store that canceled the sale). The merchant's
 * cancel is read from the cart's orders (one statement; the cart itself only when there is one), and recorded on the
 * session, which holds the claim.
 */
async function assertCompletable(svc: Services, s: BridgeSession): Promise<void> {
  if (s.canceled) assertActive(s);
  const paid = await paidOrdersOf(svc, s.agentKeyId, s.cartId);
  if (paid.canceled_by_merchant.order_ids.length === 0) return;
  const cart = await getCart(svc, s.agentKeyId, s.cartId).catch((err: unknown) => {
    if (cartExpired(err)) return null;
    throw err;
  });
  if (!merchantCanceled(cart, paid)) return;
  s.canceled = true;
  await saveClaimed(svc, s);
  throw merchantCanceledRefusal(s, paid);
}

function assertActive(s: BridgeSession, cart?: CartView): void {
  if (s.canceled) throw fail("SESSION_INACTIVE", "The checkout session was canceled.", { checkout_session_id: s.id, status: "canceled" });
  if (cart?.status === "COMPLETED") throw fail("SESSION_INACTIVE", "The checkout session is completed.", { checkout_session_id: s.id, status: "completed" });
}

/** A write on a session whose cart expired: the session reads as ended (liveState), a new session starts again. */
function sessionExpired(s: BridgeSession): ActorError {
  return fail("SESSION_INACTIVE", "The checkout session's cart expired after a day without changes; create a new checkout session.", { checkout_session_id: s.id, status: "expired" });
}

/**
 * A complete's refusal in the session's terms: a cart that expired is the session's end (as for an update); a refused
 * payment token names the protocol's token member (audit B-4: the cart names REST's `payment_method`, which no ACP or
 * UCP request has); the hold bound's sessions are the protocol's session ids (`holdingInSessionIds`).
 */
async function completeRefusal(svc: Services, s: BridgeSession, err: unknown, fields: { address: string; option: string; token: string }): Promise<unknown> {
  if (!(err instanceof ActorError)) return err;
  if (err.code === "CART_NOT_MUTABLE" && err.details?.reason === "expired") return sessionExpired(s);
  // The cart's own refusal of a session its merchant ended after `assertCompletable` read the orders (audit B-1's
  // race): answered and recorded as that check does.
  if (cartRefusedAfterMerchantCancel(err)) {
    const paid = await paidOrdersOf(svc, s.agentKeyId, s.cartId);
    s.canceled = true;
    await saveClaimed(svc, s);
    return merchantCanceledRefusal(s, paid);
  }
  if (err.details?.field === "payment_method") {
    const message = err.message.startsWith("payment_method ") ? `${fields.token}${err.message.slice("payment_method".length)}` : err.message;
    return new ActorError(err.code, message, { ...err.details, field: fields.token });
  }
  if (err.code === "rate_limit_exceeded" && Array.isArray(err.details?.checkout_session_ids)) return holdingInSessionIds(svc, s, err);
  return bridgeShippingError(err, fields);
}

/**
 * The hold bound's 429 (actors/cart/hold-guard.ts) lists the caller's holding checkouts by the cart's own session ids
 * (`cs_<cart hex>_<n>`), which an ACP/UCP client never saw (audit B-2): listed instead as the ids of this protocol's
 * sessions on those carts; a checkout started through another route (REST, MCP, another protocol) has none and is
 * only counted (`holding`). The client cancels one of them, or waits `Retry-After`.
 */
async function holdingInSessionIds(svc: Services, s: BridgeSession, err: ActorError): Promise<ActorError> {
  const carts = (err.details!.checkout_session_ids as unknown[]).flatMap((id) => {
    const cart = typeof id === "string" ? cartIdOfSession(id) : null;
    return cart ? [cart] : [];
  });
  const rows = carts.length
    ? await svc.sql<{ id: string }[]>`
        SELECT id FROM bridge_sessions WHERE protocol = ${s.protocol} AND agent_key_id = ${s.agentKeyId} AND cart_id = ANY(${carts}::uuid[]) ORDER BY id`
    : [];
  const { checkout_session_id: _own, ...details } = err.details!;
  return new ActorError(err.code, err.message, { ...details, checkout_session_ids: rows.map((r) => r.id), checkout_session_id: s.id });
}

/** An update's checks on the session's current cart (claimed, so nothing pays it or moves it meanwhile). */
async function assertSessionUpdatable(svc: Services, s: BridgeSession, change: { items: boolean; shipping: boolean }): Promise<void> {
  const cart = await getCart(svc, s.agentKeyId, s.cartId).catch((err: unknown) => {
    throw cartExpired(err) ? sessionExpired(s) : err;
  });
  assertActive(s, cart);
  const paid = await paidOrdersOf(svc, s.agentKeyId, s.cartId);
  // a session its merchant ended takes no changes: new items would move it to a new, payable cart (audit B-1)
  if (merchantCanceled(cart, paid)) throw merchantCanceledRefusal(s, paid);
  // While the payment is PENDING_EXTERNAL_CONFIRMATION, whether a buyer is still asked (the refusal's wording and UCP severity).
  const waiting = cart.checkout_status === "PENDING_EXTERNAL_CONFIRMATION" ? await waitingApproval(svc, s, cart) : null;
  assertUpdatable(s, cart, paid, change, waiting !== null && !waiting.url, waiting?.foreign === true);
  // A destination the cart took through REST or MCP is the session's before the update prices anything: a pick or new
  // items are quoted for where the cart ships, never moved back to the session's old address (the update saves it).
  await followCartDestination(svc, s, cart, shippingFieldsOf(s));
}

async function acpUpdate(svc: Services, agent: AgentPrincipal, id: string, body: unknown, shapes: AcpShapes): Promise<Answer> {
  // Checked before the session is claimed and its cart touched: a refused update changes nothing (audit F-2).
  assertStorableRequest(body);
  shapes.buyer(body);
  return withSessionClaim(svc, "acp", id, agent.keyId, async (s) => {
    await assertSessionUpdatable(svc, s, shapes.changes(body));
    const input = shapes.read(body, "update");
    applyAcpInput(s, input, shapes.version);
    const picks = input.optionIds ?? [];
    const price = async (): Promise<{ cart: CartView | PreviewView; status: string } | null> => {
      if (!input.items && input.address === undefined && picks.length === 0) return null;
      const dest = input.address !== undefined ? input.address.dest : sessionDestination(s);
      // An address cleared (2025-09-29 `fulfillment_address: null`, 2026-04-17 `fulfillment_details.address: null` or
      // `fulfillment_details: null`) clears the cart's destination and quote too (review A-8).
      return priceSession(svc, s, dest, picks, shapes.fields, input.address !== undefined && input.address.dest === null);
    };
    let priced: { cart: CartView | PreviewView; status: string } | null;
    if (input.items) {
      requireCartScope(agent, "an ACP checkout session");
      // The destination moves with the session; a pick is made again (the new items may ship from other stores).
      if (picks.length === 0) delete s.meta.fulfillment_option_id;
      const itemsField = input.items.fields.list;
      priced = await moveToNewCart(svc, s, input.items.list, input.items.fields, (made) => {
        assertAcpAskedCurrency(s, made, itemsField);
        return price();
      });
    } else priced = await price();
    await saveClaimed(svc, s);
    return { status: 200, body: priced ? shapes.session(s, { cart: priced.cart, live: priced.status, canceled: false, siteUrl: svc.siteUrl }) : await acpView(svc, s, shapes) };
  });
}

/**
 * New line_items of an ACP update against the currency the session's create asked for (2026-04-17 `currency`, kept in
 * meta.asked_currency): items priced in another are 400 INVALID_ARGUMENT on the items' field, their new cart discarded
 * and the session left on its cart (moveToNewCart), as UCP's update (session 22). They moved a session created for
 * `usd` to `eur`, 200, and its platform, which had asked for dollars, was shown amounts in euro cents. A session whose
 * create asked no currency (2025-09-29 has none) follows its items, as UCP's does.
 */
function assertAcpAskedCurrency(s: BridgeSession, made: Pick<CartView, "currency">, itemsField: string): void {
  const asked = askedCurrencyOf(s);
  const its = made.currency.toLowerCase();
  if (asked !== undefined && asked !== its) {
    throw fail("INVALID_ARGUMENT", `${itemsField} are priced in ${its}, not in ${asked}, the currency this checkout session was created for; create a new session for them.`, {
      field: itemsField,
      currency: its,
      asked_currency: asked,
    });
  }
}

async function acpComplete(svc: Services, agent: AgentPrincipal, id: string, body: unknown, shapes: AcpShapes): Promise<Answer> {
  // Checked before anything is paid (audit F-1): a buyer the session cannot keep is the request's 400, nothing charged.
  assertStorableRequest(body);
  const buyer = shapes.buyer(body);
  return withSessionClaim(svc, "acp", id, agent.keyId, async (s) => {
    await assertCompletable(svc, s);
    const { token, field: tokenField } = shapes.token(body);
    if (buyer !== undefined) {
      keepAcpBuyer(s, buyer, shapes.version);
      await saveRequestValues(svc, s);
    }
    let reply: CompleteReply;
    try {
      reply = await completeCart(svc, agent.keyId, s.cartId, { paymentMethod: token, idempotencyKey: derivedUuidV4(`acp:${s.id}`), refuseAfterMerchantCancel: true });
    } catch (err) {
      const done = (await alreadyCompleted(err)) ?? (await paidElsewhere(svc, s, err));
      if (!done) throw await completeRefusal(svc, s, err, { ...shapes.fields, token: tokenField });
      s.meta.order = done;
      return { status: 200, body: await acpView(svc, s, shapes, done) };
    }
    // A link stored by an earlier build is never shown again (reads build it from the live state).
    delete s.meta.continue_url;
    if (reply.status === "PENDING_EXTERNAL_CONFIRMATION") {
      await saveAfterPayment(svc, s);
      // The approval link is in an info message of the answer (acp.ts `acpApprovalMessage`), as on every read.
      return { status: 200, body: await acpView(svc, s, shapes, null, replyApprovalUrl(svc, reply)) };
    }
    const order = acpOrderOf(reply);
    s.meta.order = order;
    await saveAfterPayment(svc, s);
    return { status: 200, body: await acpView(svc, s, shapes, order) };
  }, { countComplete: true });
}

/**
 * The buyer's approval link of the payment the session's cart waits for now, built from the live state on every read
 * (review RA-3): the cart's pending orders of its live checkout session carry the intent of their current attempt,
 * and the processor answers that intent's link while the buyer has not decided (and gives an intent recorded before
 * migration 0084 its token). Nothing is read from the session row, so a post-payment write that was lost, or a link
 * stored before the token existed, never shows: a read shows the link that works now, or none. With several stores
 * waiting, the first undecided one in the cart's merchant order: once the buyer decided at one link, the next read
 * shows the next store's (a protocol answer has room for one link); once every store is decided there is none, and
 * the agent completes again.
 */
async function waitingApproval(svc: Services, s: BridgeSession, cart: CartView): Promise<{ url?: string; foreign: boolean }> {
  if (!cart.checkout_session_id) return { foreign: false };
  const rows = await svc.sql<{ store_slug: string; intent_id: string }[]>`
    SELECT store_slug, intent_id FROM orders
    WHERE cart_id = ${s.cartId} AND agent_key_id = ${s.agentKeyId} AND checkout_session_id = ${cart.checkout_session_id}
      AND status = 'pending' AND payment_rail = 'card' AND intent_id IS NOT NULL`;
  const rank = (slug: string) => (cart.merchants.indexOf(slug) + cart.merchants.length + 1) % (cart.merchants.length + 1);
  rows.sort((a, b) => rank(a.store_slug) - rank(b.store_slug) || a.store_slug.localeCompare(b.store_slug));
  const foreign =
    rows.length > 0 &&
    !rows.some((r) => sessionsOwnIntent(s, cart.checkout_session_id!, r.store_slug, r.intent_id)) &&
    (!mayPassOwnIntentAttempts(s) || (await boundToAnotherKey(svc, s, cart.checkout_session_id)));
  const rail = cardRail(svc.sql);
  for (const r of rows) {
    const url = await rail.undecidedApprovalUrl(r.intent_id);
    if (url) return { url: absoluteApprovalUrl(svc.siteUrl, url), foreign };
  }
  return { foreign };
}

/**
 * How many payment attempts of one store `sessionsOwnIntent` looks through: the fast answer for a session's usual
 * handful; past them (audit B-6: every declined complete is one more attempt) the cart answers (`boundToAnotherKey`).
 */
const OWN_INTENT_ATTEMPTS = 64;

/**
 * Whether the session may have made more attempts than `sessionsOwnIntent` recomputes, so that a waiting payment none
 * of them names could still be its own: only then is the cart asked (`boundToAnotherKey`). A store's leg makes at most
 * one new attempt per checkout call under the session's key (actors/cart/checkout-machine.ts `prepareLegsForCharge`),
 * and the session counts its completes (`meta.completes`, counted by the complete's claim before any cart work:
 * common.ts `withSessionClaim`; over the session's life, every cart it moved to, so never less than a checkout
 * session's attempts). So a session with at most OWN_INTENT_ATTEMPTS completes is decided without the cart; one
 * created before the count (no `completes`) is asked as before. Before review R-2 the cart was asked on every read
 * and update of a session whose cart waited on another route's payment (a cart turn pricing the cart each time).
 */
function mayPassOwnIntentAttempts(s: BridgeSession): boolean {
  const n = s.meta.completes;
  return typeof n !== "number" || n > OWN_INTENT_ATTEMPTS;
}

/**
 * Whether a payment intent is one the session's own complete made: intents are derived from the cart's checkout
 * session, the key it pays under, the store and the attempt (actors/payments/rail.ts `deriveIntentId`), and a session
 * always pays under the key derived from its id; an intent of another key was started through another route. True
 * is certain; false only means none of the first OWN_INTENT_ATTEMPTS attempts (`boundToAnotherKey` decides then).
 */
function sessionsOwnIntent(s: BridgeSession, checkoutSessionId: string, storeSlug: string, intentId: string): boolean {
  const key = derivedUuidV4(`${s.protocol}:${s.id}`);
  for (let attempt = 1; attempt <= OWN_INTENT_ATTEMPTS; attempt++) if (deriveIntentId(checkoutSessionId, key, storeSlug, attempt) === intentId) return true;
  return false;
}

/**
 * Whether the cart's checkout session is bound to another key than the session's own, asked of the cart: a checkout
 * session is bound to the key of its first complete and never rebound (actors/cart/checkout-machine.ts
 * `decideComplete`), so its `precheck` under the session's key (which writes nothing for a payment waiting on the
 * buyer) refuses exactly another key's payment, IDEMPOTENCY_KEY_CONFLICT. Asked only when `sessionsOwnIntent` found
 * none of the first attempts and the session may have made more (`mayPassOwnIntentAttempts`: more than
 * OWN_INTENT_ATTEMPTS completes, or a session older than the count; audit B-6, whose session's own approved payment
 * read as another route's). Any other refusal leaves it foreign, as before.
 */
async function boundToAnotherKey(svc: Services, s: BridgeSession, checkoutSessionId: string): Promise<boolean> {
  try {
    await svc.actors.ask(cartActor, s.cartId, "precheck", { keyId: s.agentKeyId, sessionId: checkoutSessionId, idempotencyKey: derivedUuidV4(`${s.protocol}:${s.id}`) });
    return false;
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    return true;
  }
}

/** The link a complete's own answer shows: the payment it just asked the buyer to approve. */
const replyApprovalUrl = (svc: Services, reply: CompleteReply): string | undefined =>
  reply.status === "PENDING_EXTERNAL_CONFIRMATION" && reply.approval_urls[0] ? absoluteApprovalUrl(svc.siteUrl, reply.approval_urls[0].url) : undefined;

/**
 * Ends the cart's checkout session (its unpaid orders canceled; paid stores stay paid) and marks the session canceled.
 * An expired cart has no live session left to end (it ended unpaid before the cart could expire).
 */
async function cancelCartSession(svc: Services, s: BridgeSession): Promise<void> {
  const cart = await getCart(svc, s.agentKeyId, s.cartId).catch((err: unknown) => {
    if (cartExpired(err)) return null;
    throw err;
  });
  if (!cart) {
    s.canceled = true;
    await saveClaimed(svc, s);
    return;
  }
  if (cart.status === "COMPLETED") throw fail("CHECKOUT_STATUS_INVALID", "A completed checkout cannot be canceled.", { checkout_session_id: s.id, status: "COMPLETED" });
  // A session that already ended (a partly paid one its merchant canceled, audit B-1) has nothing left to end.
  if (cart.checkout_session_id && cart.status === "CHECKOUT" && cartSessionLive(cart)) {
    await cancelLiveCartSession(svc, s.cartId, s.agentKeyId, cart.checkout_session_id);
  }
  s.canceled = true;
  await saveClaimed(svc, s);
}

async function acpCancel(svc: Services, agent: AgentPrincipal, id: string, shapes: AcpShapes): Promise<Answer> {
  return withSessionClaim(svc, "acp", id, agent.keyId, async (s) => {
    if (!s.canceled) await cancelCartSession(svc, s);
    return { status: 200, body: await acpView(svc, s, shapes) };
  });
}

// ------------------------------------------------------------------------------------------------------- UCP

async function ucpCreate(svc: Services, agent: AgentPrincipal, body: unknown): Promise<Answer> {
  requireCartScope(agent, "a UCP checkout");
  // Everything the request says is checked before the cart is made (audit F-3, F-4, F-5).
  assertStorableRequest(body);
  const b = asRecord(body);
  const items = ucpItems(b.line_items);
  const buyer = ucpBuyer(b.buyer);
  const ship = ucpFulfillmentInput(b.fulfillment);
  const currency = ucpCurrency(b.currency);
  const cart = await newCart(svc, agent.keyId, items, UCP_ITEM_FIELDS);
  // the currency asked for is kept (meta.asked_currency): an update's new line_items must stay in it (ucpUpdate)
  const s: BridgeSession = {
    id: `ucp_${cart.id.replace(/-/g, "")}`,
    protocol: "ucp",
    agentKeyId: agent.keyId,
    cartId: cart.id,
    meta: { buyer: buyer ?? null, completes: 0, ...(currency !== undefined ? { asked_currency: currency } : {}) },
    canceled: false,
  };
  let priced: { cart: CartView | PreviewView; status: string };
  try {
    // as ACP's create (2026-04-17 `currency`): the checkout is in the items' currency, and another one asked for is
    // refused with the cart discarded, never a 201 in a currency the platform did not ask for
    assertUcpCurrency(currency, cart);
    priced = await priceSession(svc, s, ship?.dest ?? null, ship?.optionIds ?? [], UCP_FIELDS);
    await saveSession(svc, s);
  } catch (err) {
    await discardNewCart(svc, agent.keyId, cart.id);
    throw err;
  }
  return { status: 201, body: ucpCheckout(s, { cart: priced.cart, status: ucpStatusOfSession(priced.status), siteUrl: svc.siteUrl }) };
}

/** A UCP checkout's `currency` (asked for) against the cart's: another one is 400 on `$.currency` naming the cart's. */
function assertUcpCurrency(asked: string | undefined, cart: Pick<CartView, "currency">): void {
  const its = cart.currency.toUpperCase();
  if (asked !== undefined && asked !== its) {
    throw fail("INVALID_ARGUMENT", `currency ${asked} is not the checkout's: its items are priced in ${its}.`, { field: "currency", currency: its });
  }
}

/** UCP update (PUT): new line_items move the session to a new cart; `fulfillment` sets the destination and picks. */
async function ucpUpdate(svc: Services, agent: AgentPrincipal, id: string, body: unknown): Promise<Answer> {
  // Checked before the session is claimed and its cart touched: a refused update changes nothing (audit F-2, F-5).
  assertStorableRequest(body);
  const buyer = ucpBuyer(asRecord(body).buyer);
  const currency = ucpCurrency(asRecord(body).currency);
  return withSessionClaim(svc, "ucp", id, agent.keyId, async (s) => {
    const b = asRecord(body);
    await assertSessionUpdatable(svc, s, { items: b.line_items !== undefined, shipping: b.fulfillment !== undefined });
    const ship = ucpFulfillmentInput(b.fulfillment);
    const items = b.line_items !== undefined ? ucpItems(b.line_items) : null;
    // As create (helper D, session 21): the currency this update asks for, else the one its create asked for, is the
    // cart's the update leaves the session on; another is 400 on $.currency in UCP's shape and nothing changes (new
    // line_items: their new cart is discarded before it is priced, the session stays on its cart).
    const asked = currency ?? askedCurrencyOf(s);
    if (currency !== undefined && !items) assertUcpCurrency(currency, await getCart(svc, s.agentKeyId, s.cartId));
    if (buyer !== undefined) s.meta.buyer = buyer;
    if (currency !== undefined) s.meta.asked_currency = currency;
    // A fulfillment naming no destination (only a pick) keeps the session's (audit F-5).
    const price = async (): Promise<{ cart: CartView | PreviewView; status: string } | null> =>
      items || ship ? priceSession(svc, s, ship?.dest ?? sessionDestination(s), ship?.optionIds ?? [], UCP_FIELDS) : null;
    let priced: { cart: CartView | PreviewView; status: string } | null;
    if (items) {
      requireCartScope(agent, "a UCP checkout");
      priced = await moveToNewCart(svc, s, items, UCP_ITEM_FIELDS, (made) => {
        assertUcpCurrency(asked, made);
        return price();
      });
    } else priced = await price();
    await saveClaimed(svc, s);
    return { status: 200, body: priced ? ucpCheckout(s, { cart: priced.cart, status: ucpStatusOfSession(priced.status), siteUrl: svc.siteUrl }) : await ucpView(svc, s) };
  });
}

async function ucpView(svc: Services, s: BridgeSession, extra: { continueUrl?: string } = {}): Promise<unknown> {
  const live = await liveState(svc, s, extra.continueUrl);
  // a payment waiting with no link to show (another route's, its buyer decided: `liveState`) runs; requires_escalation MUST carry continue_url
  const running = live.status === "PENDING_EXTERNAL_CONFIRMATION" && !live.continueUrl;
  const status: UcpStatus = s.canceled ? "canceled" : running ? "complete_in_progress" : ucpStatusOfSession(live.status);
  return ucpCheckout(s, { cart: live.cart, status, siteUrl: svc.siteUrl, order: orderOf(s, live.paid, null), notes: live.notes, ...(live.continueUrl ? { continueUrl: live.continueUrl } : {}) });
}

async function ucpComplete(svc: Services, agent: AgentPrincipal, id: string, body: unknown): Promise<Answer> {
  assertStorableRequest(body);
  return withSessionClaim(svc, "ucp", id, agent.keyId, async (s) => {
    await assertCompletable(svc, s);
    const token = ucpPaymentToken(body);
    let reply: CompleteReply;
    try {
      reply = await completeCart(svc, agent.keyId, s.cartId, { paymentMethod: token, idempotencyKey: derivedUuidV4(`ucp:${s.id}`), refuseAfterMerchantCancel: true });
    } catch (err) {
      const done = (await alreadyCompleted(err)) ?? (await paidElsewhere(svc, s, err));
      if (!done) throw await completeRefusal(svc, s, err, UCP_FIELDS);
      s.meta.order = done;
      return { status: 200, body: await ucpView(svc, s) };
    }
    // A link stored by an earlier build is never shown again (reads build it from the live state).
    delete s.meta.continue_url;
    if (reply.status === "PENDING_EXTERNAL_CONFIRMATION") {
      await saveAfterPayment(svc, s);
      const url = replyApprovalUrl(svc, reply);
      return { status: 200, body: await ucpView(svc, s, url ? { continueUrl: url } : {}) };
    }
    if (reply.status === "COMPLETED") s.meta.order = { id: reply.order_id, ids: reply.order_ids };
    await saveAfterPayment(svc, s);
    return { status: 200, body: await ucpView(svc, s) };
  }, { countComplete: true });
}

async function ucpCancel(svc: Services, agent: AgentPrincipal, id: string): Promise<Answer> {
  return withSessionClaim(svc, "ucp", id, agent.keyId, async (s) => {
    if (!s.canceled) await cancelCartSession(svc, s);
    return { status: 200, body: await ucpView(svc, s) };
  });
}

// ------------------------------------------------------------------------------------------------------- AP2

async function ap2Pay(svc: Services, agent: AgentPrincipal, body: unknown): Promise<Answer> {
  // The mandate's id is kept on its binding (`bindMandate`): text the database cannot store is refused first.
  assertStorableRequest(body);
  const b = asRecord(body);
  // absent (neither spelling sent) is the missing argument, as every other required member (helper F, session 22)
  if (b.cart_id === undefined && b.cartId === undefined) throw fail("MISSING_REQUIRED_ARGUMENT", "cart_id is required: the uuid of one of your carts.", { field: "cart_id" });
  const cartId = typeof b.cart_id === "string" ? b.cart_id : typeof b.cartId === "string" ? b.cartId : undefined;
  if (!cartId || !isUuid(cartId)) {
    throw fail("INVALID_ARGUMENT", "cart_id must be the uuid of one of your carts.", { field: "cart_id" });
  }
  const mandate = parseAp2(body);
  // The user's signature over this very mandate comes before its limits: an unsigned limit limits nothing.
  const signer = await verifyUserAuthorization(svc.sql, agent.keyId, body, svc.clock.now(), mandate.expiresAt);
  const cart = await getCart(svc, agent.keyId, cartId.toLowerCase());
  let reply: CompleteReply;
  const idempotencyKey = derivedUuidV4(`ap2:${agent.keyId}:${mandate.paymentMandateId}`);
  const now = svc.clock.now();
  try {
    // A finished cart answers for itself (the mandate was checked when it was paid).
    if (cart.status !== "COMPLETED") checkMandate(mandate, cart, now);
    else if (mandate.expiresAt !== null && now >= mandate.expiresAt) return await expiredMandateOnPaidCart(svc, agent, mandate, cart, idempotencyKey, now);
    // A mandate pays one cart: bound once it is inside the limits (a refused one binds nothing), before any charge,
    // so a declined attempt keeps it too (a new attempt needs a new token, so a new mandate anyway).
    const boundCart = await bindMandate(svc, agent.keyId, signer.thumbprint, mandate.paymentMandateId, cart.id, signer.until);
    if (boundCart !== cart.id) {
      throw fail("MANDATE_LIMIT_EXCEEDED", "This payment mandate was presented for another cart; a mandate pays one cart.", {
        violated: "cart",
        mandate: { payment_mandate_id: mandate.paymentMandateId },
        mandate_cart_id: boundCart,
        cart_id: cart.id,
      });
    }
    // The limits go with the payment: the cart may be repriced after the read above (a shipping pick), and only
    // the cart's own paying turn sees the total it charges (review R4-5).
    reply = await completeCart(svc, agent.keyId, cart.id, { paymentMethod: mandate.token, idempotencyKey, limits: mandateLimits(mandate, cart) });
  } catch (err) {
    const done = await alreadyCompleted(err);
    if (!done) throw err;
    return { status: 200, body: ok(ap2Receipt(mandate.paymentMandateId, await getCart(svc, agent.keyId, cart.id), done.ids, "SUCCESS")) };
  }
  if (reply.status === "PENDING_EXTERNAL_CONFIRMATION") {
    const waiting = await getCart(svc, agent.keyId, cart.id);
    return { status: 202, body: ok({ ...ap2Receipt(mandate.paymentMandateId, waiting, [], "PENDING"), approval_urls: reply.approval_urls.map((a) => absoluteApprovalUrl(svc.siteUrl, a.url)) }) };
  }
  if (reply.status !== "COMPLETED") throw fail("INTERNAL_ERROR", `unexpected checkout state ${reply.status}`);
  return { status: 200, body: ok(ap2Receipt(mandate.paymentMandateId, cart, reply.order_ids, "SUCCESS", { currency: reply.currency, value: reply.total })) };
}

/**
 * An expired mandate presented for a paid cart: a replay of the payment it made, or a mandate that never paid this cart.
 * It binds and claims nothing (its binding may be gone: the retention job deletes a binding a grace after its mandate's
 * expiry, infra/retention.ts), so the answer comes from the cart alone, whether the rows are there or not: the cart's
 * checkout session keeps the key this mandate pays under (derived from the agent key and the mandate id), so the same
 * mandate gets its receipt (200, as before) and any other the expiry refusal a cart not paid yet gets.
 */
async function expiredMandateOnPaidCart(svc: Services, agent: AgentPrincipal, mandate: Ap2Mandate, cart: CartView, idempotencyKey: string, now: number): Promise<Answer> {
  try {
    await completeCart(svc, agent.keyId, cart.id, { paymentMethod: mandate.token, idempotencyKey, limits: mandateLimits(mandate, cart) });
  } catch (err) {
    const done = await alreadyCompleted(err);
    if (done) return { status: 200, body: ok(ap2Receipt(mandate.paymentMandateId, cart, done.ids, "SUCCESS")) }; // `cart` was read COMPLETED
    if (!(err instanceof ActorError && err.code === "IDEMPOTENCY_KEY_CONFLICT")) throw err;
  }
  // checkMandate refuses it for the expiry (the cart's status is not read there)
  checkMandate(mandate, cart, now);
  throw fail("INTERNAL_ERROR", "an expired mandate passed its limits");
}

/**
 * AP2's PaymentReceipt, with our order ids. Its amount is what the payment charged (`charged`: the cart's completed
 * reply), else the total of `cart` as read after the payment turn: never the cart read before it, which a repricing
 * the mandate allows (a cheaper option picked meanwhile) made an amount the payment never captured (helper E).
 */
function ap2Receipt(mandateId: string, cart: CartView, orderIds: string[], status: "SUCCESS" | "PENDING", charged?: { currency: string; value: number }) {
  return {
    payment_mandate_id: mandateId,
    timestamp: new Date().toISOString(),
    payment_id: orderIds[0] ?? null,
    amount: charged ?? { currency: cart.currency, value: cart.totals.total },
    payment_status: status === "SUCCESS" ? { merchant_confirmation_id: orderIds[0] ?? null, psp_confirmation_id: orderIds[0] ?? null } : { pending: true },
    order_ids: orderIds,
    cart_id: cart.id,
  };
}

// ---------------------------------------------------------------------------------------------------- routes

/** POST /api/v1/agent/checkout, detected as another protocol: create (ACP, UCP) or pay a mandate (AP2). */
/**
 * POST /agent/checkout handing a request to the bridge. The answer is a Response so it passes through in the
 * bridge's own shape: a plain body would be checked against the REST route's response schema, and a bridged error
 * (ACP `{type, code, message, param}`, UCP's) is not our error envelope, so the client got 400 "Invalid response
 * field 'success'" instead of the bridge's answer. The route's `set` headers (x-protocol, rate limits) are merged
 * into it by the framework.
 */
export async function bridgeCheckout(svc: Services, agent: AgentPrincipal, protocol: BridgeProtocol, request: Request, body: unknown, set: SetLike): Promise<Response> {
  set.headers["x-protocol"] = protocol;
  const run = protocol === "ucp" ? () => ucpCreate(svc, agent, body) : () => ap2Pay(svc, agent, body);
  // an ACP create here is read in its API-Version as on the ACP route (acp.ts `acpVersioned`)
  const work =
    protocol === "acp"
      ? acpVersioned(request, set, (v) => withIdempotency(svc, scope(protocol, agent, request, body, v), () => acpCreate(svc, agent, body, acpShapes(v))))
      : () => withIdempotency(svc, scope(protocol, agent, request, body), run);
  const answer = await respond(set, protocol, work);
  const status = typeof set.status === "number" ? set.status : 200;
  return Response.json(answer, { status });
}

const sec = [{ agentApiKey: [] }];
const Id = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }) });
const AnyBody = t.Optional(t.Unknown());
/**
 * Every bridged body is an optional JSON object, read by our parser: Elysia's own made a truncated JSON body "no
 * body", and an update then changed nothing with 200 (review R3-5). Its refusals answer in the protocol's error
 * shape (error-shape.ts). Per route, not `onParse`: a plugin's parse hook leaves an empty parse list on the routes
 * of the next module, which the OpenAPI generator reads as "no media type".
 */
const anyBody = { body: AnyBody, parse: optionalObjectBody };

export function bridgeRoutes(svc: Services) {
  const acp = "/api/v1/agent/acp/checkout_sessions";
  const ucp = "/api/v1/agent/ucp/checkout-sessions";
  const tagged = (summary: string, tag: string) => ({ detail: { tags: [tag], summary, security: sec } });
  return new Elysia({ name: "bridge-routes" })
    .use(agentAuth(svc))
    // every ACP route in the request's API-Version (acp.ts `acpVersioned`: refused before any work if not ours, echoed)
    .post(acp, ({ agent, body, request, set }) => respond(set, "acp", acpVersioned(request, set, (v) => withIdempotency(svc, scope("acp", agent, request, body, v), () => acpCreate(svc, agent, body, acpShapes(v))))), { ...anyBody, ...tagged("ACP: create a checkout session", "bridge") })
    .get(`${acp}/:id`, ({ agent, params, request, set }) => respond(set, "acp", acpVersioned(request, set, async (v) => ({ status: 200, body: await acpView(svc, await loadSession(svc, "acp", params.id, agent.keyId), acpShapes(v)) }))), { params: Id, ...tagged("ACP: get a checkout session", "bridge") })
    .post(`${acp}/:id`, ({ agent, params, body, request, set }) => respond(set, "acp", acpVersioned(request, set, (v) => withIdempotency(svc, scope("acp", agent, request, body, v), () => acpUpdate(svc, agent, params.id, body, acpShapes(v))))), { params: Id, ...anyBody, ...tagged("ACP: update a checkout session", "bridge") })
    .post(`${acp}/:id/complete`, ({ agent, params, body, request, set }) => respond(set, "acp", acpVersioned(request, set, (v) => withIdempotency(svc, scope("acp", agent, request, body, v), () => acpComplete(svc, agent, params.id, body, acpShapes(v))))), { params: Id, ...anyBody, ...tagged("ACP: complete a checkout session", "bridge") })
    .post(`${acp}/:id/cancel`, ({ agent, params, body, request, set }) => respond(set, "acp", acpVersioned(request, set, (v) => withIdempotency(svc, scope("acp", agent, request, body, v), () => acpCancel(svc, agent, params.id, acpShapes(v))))), { params: Id, ...anyBody, ...tagged("ACP: cancel a checkout session", "bridge") })
    .post(ucp, ({ agent, body, request, set }) => respond(set, "ucp", () => withIdempotency(svc, scope("ucp", agent, request, body), () => ucpCreate(svc, agent, body))), { ...anyBody, ...tagged("UCP: create a checkout session", "bridge") })
    .get(`${ucp}/:id`, ({ agent, params, set }) => respond(set, "ucp", async () => ({ status: 200, body: await ucpView(svc, await loadSession(svc, "ucp", params.id, agent.keyId)) })), { params: Id, ...tagged("UCP: get a checkout session", "bridge") })
    .put(`${ucp}/:id`, ({ agent, params, body, request, set }) => respond(set, "ucp", () => withIdempotency(svc, scope("ucp", agent, request, body), () => ucpUpdate(svc, agent, params.id, body))), { params: Id, ...anyBody, ...tagged("UCP: update a checkout session", "bridge") })
    .post(`${ucp}/:id/complete`, ({ agent, params, body, request, set }) => respond(set, "ucp", () => withIdempotency(svc, scope("ucp", agent, request, body), () => ucpComplete(svc, agent, params.id, body))), { params: Id, ...anyBody, ...tagged("UCP: complete a checkout session", "bridge") })
    .post(`${ucp}/:id/cancel`, ({ agent, params, body, request, set }) => respond(set, "ucp", () => withIdempotency(svc, scope("ucp", agent, request, body), () => ucpCancel(svc, agent, params.id))), { params: Id, ...anyBody, ...tagged("UCP: cancel a checkout session", "bridge") })
    .post("/api/v1/agent/ap2/payment-mandates", ({ agent, body, request, set }) => respond(set, "ap2", () => withIdempotency(svc, scope("ap2", agent, request, body), () => ap2Pay(svc, agent, body))), { ...anyBody, ...tagged("AP2: pay a cart under a payment mandate", "bridge") });
}
