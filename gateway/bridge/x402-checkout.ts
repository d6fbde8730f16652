/**
 * The x402 side of POST /api/v1/agent/checkout (x402 v2). The route hands over here when `payment_rail` is x402;
 * the answer is returned as data (status, headers, body) for the route to send.
 *
 * 1. Ask the cart for the amounts due (`checkout` without a payment): a session that is already done, waiting or
 *    reconciling answers for itself here — a repeated call after a settle timeout reconciles and returns the order.
 * 2. Per store: the merchant's x402 configuration (overrides `x402_config`), the requirements of its leg.
 * 3. No payment → 402 with a v2 `PAYMENT-REQUIRED` challenge (one `accepts` entry per store).
 * 4. A payment (`x402_payload`, the `PAYMENT-SIGNATURE`/`X-PAYMENT` header, or the agent's custodial wallet with
 *    `pay_with_wallet: true`) → local checks and the facilitator's /verify (x402-rail.ts); a refusal is a 402
 *    naming the reason, a facilitator that cannot be reached is a retryable 503; nothing has moved in either case.
 * 5. The cart completes with the prepared authorizations as the legs' tokens; the rail settles each store.
 *    200 + `PAYMENT-RESPONSE` when every store is paid; 207 with per-store results when some stores settled and
 *    others did not (those roll back and may be paid again with the same idempotency key).
 */
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { cartActor } from "../../actors/cart/index.ts";
import type { CompleteReply } from "../../actors/cart/messages.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import type { ActorCaller } from "../../actors/runtime/define-actor.ts";
import {
  buildPaymentRequired,
  encodePaymentResponse,
  paymentRequiredHeaders,
  parsePaymentPayload,
  PAYMENT_SIGNATURE_HEADER,
  readPaymentHeader,
  X_PAYMENT_HEADER,
} from "../../actors/payments/x402-challenge.ts";
import {
  legRequirements,
  loadStoreX402Configs,
  resolveX402Config,
  type CallerX402Config,
  type EffectiveX402Config,
  type X402Policy,
} from "../../actors/payments/x402-config.ts";
import {
  capturedIntentsOfCart,
  intentsOfToken,
  prepareX402Authorizations,
  X402_TOKEN_PREFIX,
  x402AskTimeoutMs,
  x402Timeouts,
  type LegToPay,
} from "../../actors/payments/x402-rail.ts";
import { walletActor } from "../../actors/wallet/index.ts";
import type { Sql } from "../../infra/db.ts";
import type { Logger } from "../../infra/log.ts";
import { errorBody, ok } from "../envelope.ts";

export interface X402CheckoutRequest {
  keyId: string;
  cartId: string;
  sessionId?: string;
  idempotencyKey?: string;
  reconfirmedStateHash?: string;
  /** The body's `x402_payload`: one payload, an array (one per store), or an object keyed by merchant slug. */
  payload?: unknown;
  config?: CallerX402Config;
  payWithWallet?: boolean;
  headers: Headers;
}

export interface X402Deps {
  sql: Sql;
  actors: ActorCaller;
  policy: X402Policy;
  extras: Map<string, unknown>;
  siteUrl: string;
  log: Logger;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

interface Leg {
  storeId: string;
  amountMinor: number;
  currency: string;
  config: EffectiveX402Config;
  requirements: PaymentRequirements;
}

const slugOf = (r: PaymentRequirements): string | undefined => {
  const v = r.extra?.merchantSlug;
  return typeof v === "string" ? v : undefined;
};

/**
 * Matches the offered payloads to the legs: by the merchant slug of `accepted`, else by payTo + amount. A payload for
 * a store of this session that is already paid (after a 207, the agent repeats its identical request) is left out and
 * named in `ignored`: it is never charged again (payments audit B2 F5).
 */
function assignPayloads(raw: unknown, legs: Leg[], paidSlugs: readonly string[] = []): { payloads: Map<string, PaymentPayload>; ignored: string[] } {
  const out = new Map<string, PaymentPayload>();
  const ignored: string[] = [];
  const parse = (value: unknown, where: string): PaymentPayload => {
    const p = parsePaymentPayload(value);
    if (!p.ok) throw fail("INVALID_ARGUMENT", `${where} is not an x402 v2 payment payload: ${p.error}`, { field: where });
    return p.value;
  };
  let list: { payload: PaymentPayload; slug?: string }[];
  if (Array.isArray(raw)) list = raw.map((v, i) => ({ payload: parse(v, `x402_payload[${i}]`) }));
  else if (raw && typeof raw === "object" && !("x402Version" in raw)) {
    list = Object.entries(raw as Record<string, unknown>).map(([slug, v]) => ({ payload: parse(v, `x402_payload.${slug}`), slug }));
  } else list = [{ payload: parse(raw, "x402_payload") }];
  // `[]` or `{}` offers no payment at all: the caller's mistake (400), not "no payment" (the 402 challenge), and
  // never a leg-less settlement (it was a 500, audit M2)
  if (list.length === 0) throw fail("INVALID_ARGUMENT", "x402_payload holds no payment payload.", { field: "x402_payload" });
  for (const item of list) {
    const accepted = item.payload.accepted;
    const named = item.slug ?? slugOf(accepted);
    if (named !== undefined && paidSlugs.includes(named) && !legs.some((l) => l.storeId === named)) {
      if (!ignored.includes(named)) ignored.push(named);
      continue;
    }
    // a payload keyed by a merchant this cart does not pay is a mistake too, not a hint to ignore (audit N8)
    if (item.slug !== undefined && !legs.some((l) => l.storeId === item.slug)) {
      throw fail("INVALID_ARGUMENT", `x402_payload names merchant ${item.slug}, which this cart does not pay.`, {
        field: `x402_payload.${item.slug}`,
        merchant_slug: item.slug,
        cart_merchants: legs.map((l) => l.storeId),
      });
    }
    const leg =
      legs.find((l) => l.storeId === (item.slug ?? slugOf(accepted))) ??
      legs.find((l) => !out.has(l.storeId) && accepted.payTo.toLowerCase() === l.requirements.payTo.toLowerCase() && accepted.amount === l.requirements.amount) ??
      (legs.length === 1 ? legs[0] : undefined);
    if (!leg) throw fail("INVALID_ARGUMENT", "an x402 payload matches no store of this cart", { field: "x402_payload", pay_to: accepted.payTo });
    if (out.has(leg.storeId)) throw fail("INVALID_ARGUMENT", `two x402 payloads for merchant ${leg.storeId}`, { field: "x402_payload", merchant_slug: leg.storeId });
    out.set(leg.storeId, item.payload);
  }
  return { payloads: out, ignored };
}

function challengeFor(deps: X402Deps, legs: Leg[], cartId: string, error: string) {
  const base = buildPaymentRequired({
    network: legs[0]!.requirements.network,
    asset: legs[0]!.config.asset,
    amount: legs[0]!.requirements.amount,
    payTo: legs[0]!.requirements.payTo,
    resource: { url: `${deps.siteUrl}/api/v1/agent/checkout`, description: `Checkout of cart ${cartId}`, mimeType: "application/json" },
    error,
  });
  // One entry per store: the exact requirements each leg is checked against.
  return { ...base, accepts: legs.map((l) => l.requirements) };
}

function paymentRequired(deps: X402Deps, legs: Leg[], cartId: string, sessionId: string, error: string, message: string, extra: Record<string, unknown> = {}): HttpAnswer {
  const challenge = challengeFor(deps, legs, cartId, error);
  return {
    status: 402,
    headers: paymentRequiredHeaders(challenge),
    body: errorBody("payment_required", message, {
      checkout_session_id: sessionId,
      cart_id: cartId,
      ...extra,
      x402: challenge,
      legs: legs.map((l) => ({ merchant_slug: l.storeId, amount_minor: l.amountMinor, currency: l.currency, amount: l.requirements.amount, pay_to: l.requirements.payTo })),
    }),
  };
}

async function completedAnswer(deps: X402Deps, reply: Extract<CompleteReply, { status: "COMPLETED" }>, tokenId?: string): Promise<HttpAnswer> {
  const intents = tokenId ? (await intentsOfToken(deps.sql, tokenId)).filter((i) => i.state === "captured") : [];
  const captured = intents.length > 0 ? intents : await capturedIntentsOfCart(deps.sql, reply.cart_id);
  const headers: Record<string, string> = {};
  const first = captured[0];
  if (first?.transaction) {
    headers["PAYMENT-RESPONSE"] = encodePaymentResponse({ success: true, transaction: first.transaction, network: first.network as PaymentRequirements["network"], payer: first.payer });
  }
  return {
    status: 200,
    headers,
    body: ok({ ...reply, x402: { settlements: captured.map((i) => ({ merchant_slug: i.storeId, transaction: i.transaction, network: i.network, payer: i.payer })) } }),
  };
}

/**
 * The x402 payments a request carries, by name: a body `x402_payload`, each payment header, `pay_with_wallet`. One
 * list for both refusals: two payments in one request (below) and a payment off the x402 rail (gateway/rest/checkout.ts).
 */
export function x402PaymentSources(req: { payload?: unknown; payWithWallet?: boolean; headers: Headers }): string[] {
  return [
    req.payload !== undefined && req.payload !== null ? "x402_payload" : null,
    // Each header is a source of its own: readPaymentHeader takes PAYMENT-SIGNATURE and would never look at an
    // X-PAYMENT sent with it, which then stayed valid for another cart (review RX-3).
    req.headers.get(PAYMENT_SIGNATURE_HEADER) !== null ? PAYMENT_SIGNATURE_HEADER : null,
    req.headers.get(X_PAYMENT_HEADER) !== null ? X_PAYMENT_HEADER : null,
    req.payWithWallet ? "pay_with_wallet" : null,
  ].filter((s): s is string => s !== null);
}

/**
 * At most one source of payment per request: a body `x402_payload`, a `PAYMENT-SIGNATURE` header, an `X-PAYMENT`
 * header, or `pay_with_wallet`; any two are refused, even two equal headers. With two, one used to win silently and
 * the other was never charged nor remembered, so it stayed valid and could pay another cart later (audit V, "Also
 * seen"): refused before anything is asked or sent.
 */
function refuseTwoPayments(req: X402CheckoutRequest): void {
  const sources = x402PaymentSources(req);
  if (sources.length > 1) {
    throw fail("INVALID_ARGUMENT", `One request carries one payment; this one has ${sources.join(" and ")}. Send only one.`, { field: "x402_payload", payment_sources: sources });
  }
}

export async function runX402Checkout(deps: X402Deps, req: X402CheckoutRequest): Promise<HttpAnswer> {
  refuseTwoPayments(req);
  const common = {
    keyId: req.keyId,
    rail: "x402" as const,
    ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    ...(req.reconfirmedStateHash ? { reconfirmedStateHash: req.reconfirmedStateHash } : {}),
  };
  // Any of these turns may settle (the paying one) or reconcile an unknown settlement (a repeat of the same key),
  // holding /settle up to its deadline: wait longer than that, so the agent gets the cart's own answer (503
  // SETTLEMENT_UNKNOWN) rather than a caller timeout naming the actor (payments audit B2 F3).
  const opts = { timeoutMs: x402AskTimeoutMs(x402Timeouts(deps.extras)) };
  const ask = (extra: { paymentMethod?: string; paymentMethods?: Record<string, string> }) =>
    withinDeadline(
      deps,
      req,
      req.sessionId
        ? deps.actors.ask(cartActor, req.cartId, "complete", { ...common, ...extra, sessionId: req.sessionId }, opts)
        : deps.actors.ask(cartActor, req.cartId, "checkout", { ...common, ...extra }, opts),
    );

  // 0. a /settle of this cart in flight right now (the session timer's re-send, or a concurrent call): its turn holds
  //    the cart up to the settle deadline, and this call would only queue behind it (review R4-2)
  await refuseWhileSettling(deps, req);
  // 1. what is due (or the session's own answer when it is already past that point)
  const due = await ask({});
  if (due.status === "COMPLETED") return completedAnswer(deps, due);
  if (due.status !== "X402_PAYMENT_REQUIRED") {
    throw fail("CHECKOUT_STATUS_INVALID", "This checkout is waiting for a buyer approval on another rail.", { status: due.status });
  }

  // 2. the merchants' configurations and each leg's requirements
  const legs = await legsOf(deps, req, due);

  // 3. the payment, from the body, the header or the custodial wallet
  let payloads: Map<string, PaymentPayload>;
  let ignored: string[] = [];
  const paidSlugs = due.paid_merchant_slugs ?? [];
  const fromHeader = readPaymentHeader(req.headers);
  if (req.payWithWallet) {
    payloads = new Map();
    for (const leg of legs) {
      const signed = await deps.actors.ask(walletActor, req.keyId, "signX402", {
        requirements: leg.requirements,
        resource: { url: `${deps.siteUrl}/api/v1/agent/checkout`, description: `Checkout of cart ${req.cartId}`, mimeType: "application/json" },
      });
      payloads.set(leg.storeId, signed as PaymentPayload);
    }
  } else if ((req.payload !== undefined && req.payload !== null) || fromHeader) {
    ({ payloads, ignored } = assignPayloads(req.payload ?? fromHeader, legs, paidSlugs));
  } else return paymentRequired(deps, legs, req.cartId, due.checkout_session_id, "Payment required", "x402 payment required.");
  // Stores already paid are named, so that a repeat after a 207 reads as what it is (nothing charged twice).
  const paidNote = ignored.length ? { paid_merchant_slugs: paidSlugs, ignored_payloads_for: ignored } : {};
  if (payloads.size === 0) {
    return paymentRequired(deps, legs, req.cartId, due.checkout_session_id, "Payment required", `x402 payment required for ${legs.map((l) => l.storeId).join(", ")}; ${ignored.join(", ")} ${ignored.length === 1 ? "is" : "are"} already paid and not charged again.`, {
      reason: "merchant_already_paid",
      ...paidNote,
    });
  }

  // 4. local checks, then the facilitator's /verify
  const toPay: LegToPay[] = legs.filter((l) => payloads.has(l.storeId)).map((l) => ({ ...l, payload: payloads.get(l.storeId) as PaymentPayload }));
  const prepared = await prepareX402Authorizations(deps.sql, {
    cartId: req.cartId,
    agentKeyId: req.keyId,
    resourceUrl: `${deps.siteUrl}/api/v1/agent/checkout`,
    legs: toPay,
    timeouts: x402Timeouts(deps.extras),
    log: deps.log,
  });
  if (!prepared.ok) {
    deps.log.info("x402 payment refused before settlement", { cartId: req.cartId, merchantSlug: prepared.storeId, reason: prepared.reason });
    return paymentRequired(deps, legs, req.cartId, due.checkout_session_id, prepared.reason, `x402 payment refused: ${prepared.message}`, {
      reason: prepared.reason,
      merchant_slug: prepared.storeId,
      ...paidNote,
    });
  }

  // 5. settle through the cart: each store's leg on the x402 rail
  const ref = `${X402_TOKEN_PREFIX}${prepared.tokenId}`;
  const paymentMethods = Object.fromEntries(prepared.prepared.map((slug) => [slug, ref]));
  let reply: CompleteReply;
  try {
    reply = await ask({ paymentMethods });
  } catch (err) {
    if (!(err instanceof ActorError) || err.code !== "PAYMENT_FAILED_ROLLED_BACK") throw err;
    const completed = (err.details?.completed_store_ids as string[] | undefined) ?? [];
    const intents = await intentsOfToken(deps.sql, prepared.tokenId);
    // What is due now: the cart priced the attempt anew, and a leg whose amount changed since the payload was checked
    // (a price, coupon or shipping change between the two turns) was refused by the rail before anything was sent.
    // The challenge for the unpaid stores carries these amounts, never the ones just refused.
    const dueNow = await legsDueNow(deps, req, ask, legs);
    const now = dueNow.length > 0 ? dueNow : legs;
    const changed = (l: Leg) => {
      const fresh = now.find((n) => n.storeId === l.storeId);
      return fresh !== undefined && fresh.amountMinor !== l.amountMinor;
    };
    // The rail's own reason for each leg it failed (the cart's details.stores[].reason): a refusal that wrote no intent
    // row (`nonce_reused` when another payment recorded this authorization first, `no_x402_authorization`) read
    // `settle_failed` without it (helper C, C-3).
    const railReasons = new Map(
      ((err.details?.stores as { store_id?: unknown; reason?: unknown }[] | undefined) ?? [])
        .filter((s) => typeof s.store_id === "string" && typeof s.reason === "string")
        .map((s) => [s.store_id as string, s.reason as string]),
    );
    const results = legs.map((l) => {
      const intent = intents.find((i) => i.storeId === l.storeId);
      const refusedAtVerify = prepared.refused.find((r) => r.storeId === l.storeId);
      if (completed.includes(l.storeId)) {
        return { merchant_slug: l.storeId, status: "captured", transaction: intent?.transaction ?? null };
      }
      const amountChanged = !intent && !refusedAtVerify && payloads.has(l.storeId) && changed(l);
      const railReason = payloads.has(l.storeId) ? railReasons.get(l.storeId) : undefined;
      return {
        merchant_slug: l.storeId,
        status: "failed",
        reason:
          refusedAtVerify?.reason ??
          intent?.errorReason ??
          railReason ??
          (amountChanged ? AMOUNT_CHANGED_REASON : payloads.has(l.storeId) ? "settle_failed" : "no_payment_for_store"),
      };
    });
    const amountsChanged = results.some((r) => "reason" in r && r.reason === AMOUNT_CHANGED_REASON);
    if (completed.length === 0) {
      const reason = results[0] && "reason" in results[0] ? String(results[0].reason) : "settle_failed";
      const railText = RAIL_REFUSAL_TEXT[reason];
      const message = amountsChanged
        ? "x402 payment refused: the cart's total changed since the payment was checked; nothing was captured. Sign the new challenge (PAYMENT-REQUIRED) and call again with the same idempotency_key."
        : railText
          ? `x402 payment refused: ${railText}; nothing was captured. Sign the new challenge (PAYMENT-REQUIRED) with a new authorization and call again with the same idempotency_key.`
          : err.message;
      return paymentRequired(deps, now, req.cartId, due.checkout_session_id, reason, message, {
        code_detail: err.code,
        results,
        ...paidNote,
      });
    }
    const orderIds = (err.details?.order_ids as string[] | undefined) ?? [];
    const unpaidNow = now.filter((l) => !completed.includes(l.storeId));
    const unpaid = unpaidNow.length > 0 ? unpaidNow : legs.filter((l) => !completed.includes(l.storeId));
    const challenge = challengeFor(deps, unpaid, req.cartId, "partial_settlement");
    const first = intents.find((i) => i.state === "captured" && i.transaction);
    return {
      status: 207,
      headers: {
        ...paymentRequiredHeaders(challenge),
        ...(first?.transaction
          ? { "PAYMENT-RESPONSE": encodePaymentResponse({ success: true, transaction: first.transaction, network: first.network as PaymentRequirements["network"], payer: first.payer }) }
          : {}),
      },
      body: ok({
        status: "PARTIALLY_COMPLETED",
        checkout_session_id: due.checkout_session_id,
        cart_id: req.cartId,
        order_ids: orderIds,
        completed_store_ids: completed,
        results,
        ...paidNote,
        retry: "Pay the failed stores with the same idempotency_key; paid stores are not charged again.",
        x402: challenge,
      }),
    };
  }
  if (reply.status === "COMPLETED") return completedAnswer(deps, reply, prepared.tokenId);
  throw fail("INTERNAL_ERROR", `unexpected checkout state ${reply.status}`);
}

/** The rail's refusal of a leg whose amount changed after its payload was checked (x402-rail.ts `charge`). */
const AMOUNT_CHANGED_REASON = "amount_changed_since_authorization";

/**
 * The agent's sentence for a rail refusal that happens before anything is sent to the facilitator and writes no intent
 * row (x402-rail.ts `charge`): nothing can have moved, and the same authorization would be refused again.
 */
const RAIL_REFUSAL_TEXT: Readonly<Record<string, string>> = {
  nonce_reused: "this authorization was already used by another payment (its nonce is spent or claimed)",
  no_x402_authorization: "no checked authorization for this store was found for the payment",
};

/** Each unpaid leg of `due` with its store's x402 configuration and the requirements its payload is checked against. */
async function legsOf(deps: X402Deps, req: X402CheckoutRequest, due: Extract<CompleteReply, { status: "X402_PAYMENT_REQUIRED" }>): Promise<Leg[]> {
  const configs = await loadStoreX402Configs(deps.sql, due.legs.map((l) => l.merchant_slug));
  const legs: Leg[] = [];
  for (const l of due.legs) {
    const config = await resolveX402Config({ storeSlug: l.merchant_slug, store: configs.get(l.merchant_slug), caller: req.config, policy: deps.policy, log: deps.log });
    legs.push({ storeId: l.merchant_slug, amountMinor: l.amount_minor, currency: due.currency, config, requirements: legRequirements(config, { storeId: l.merchant_slug, amountMinor: l.amount_minor, currency: due.currency }) });
  }
  return legs;
}

/**
 * After a rolled-back attempt, the unpaid legs as the cart prices them now, for the challenge of the answer. The
 * attempt's own legs (`before`) when the cart does not answer with a challenge (it should: the session is back to
 * READY_FOR_PAYMENT): the answer of the refused attempt is still given, not replaced by another error.
 */
async function legsDueNow(
  deps: X402Deps,
  req: X402CheckoutRequest,
  ask: (extra: Record<string, never>) => Promise<CompleteReply>,
  before: Leg[],
): Promise<Leg[]> {
  try {
    const due = await ask({});
    return due.status === "X402_PAYMENT_REQUIRED" ? await legsOf(deps, req, due) : before;
  } catch (err) {
    deps.log.info("x402 checkout: what is due after a rolled-back attempt could not be read; the attempt's amounts are answered", { cartId: req.cartId, error: err as Error });
    return before;
  }
}

/**
 * The cart's answer, or, when it did not come within the ask's deadline while a settlement of this cart is in flight
 * or unknown, the documented 503 SETTLEMENT_UNKNOWN the cart itself gives (review R4-2). The agent's repeat can wait
 * in the cart's mailbox behind the session timer's reconcile turn, which may hold a /settle re-send for its whole
 * deadline: the repeat's own turn then starts late, and the caller's timeout would otherwise reach the agent as
 * `actor_unavailable`. The repeat still runs later (it only reconciles); nothing is charged by answering early.
 */
async function withinDeadline<T>(deps: X402Deps, req: X402CheckoutRequest, asked: Promise<T>): Promise<T> {
  try {
    return await asked;
  } catch (err) {
    if (!(err instanceof ActorError) || err.code !== "actor_unavailable") throw err;
    const [inFlight] = await deps.sql<{ checkout_session_id: string | null }[]>`
      SELECT (SELECT o.checkout_session_id FROM orders o WHERE o.cart_id = i.cart_id::uuid AND o.store_slug = i.store_id
              ORDER BY o.created_at DESC LIMIT 1) AS checkout_session_id
      FROM x402_intents i WHERE i.cart_id = ${req.cartId} AND i.state IN ('settling', 'unknown') AND ${callersCart(deps.sql, req)} LIMIT 1`;
    if (!inFlight) throw err;
    deps.log.info("x402 checkout: the cart did not answer in time while a settlement is being reconciled; answered SETTLEMENT_UNKNOWN", { cartId: req.cartId });
    throw settlementUnknown(req, inFlight.checkout_session_id);
  }
}

/**
 * The intent's cart is the caller's: an order of that cart (written pending by the hold, before any /settle) under
 * the caller's key. The two early answers above read `x402_intents` before the cart actor, which checks ownership,
 * is asked: without this, another key naming the cart id got the owner's 503 with the owner's session id while its
 * settlement was in flight, instead of the cart's 404 (audit B-2). Compared as text: a key id need not be a uuid.
 */
const callersCart = (sql: Sql, req: X402CheckoutRequest) =>
  sql`EXISTS (SELECT 1 FROM orders o WHERE o.cart_id = i.cart_id::uuid AND o.agent_key_id::text = ${req.keyId})`;

const settlementUnknown = (req: X402CheckoutRequest, sessionId: string | null) =>
  fail("UPSTREAM_UNAVAILABLE", "The payment's settlement is still being reconciled. Call again with the same idempotency_key; do not sign a new payment.", {
    status: "SETTLEMENT_UNKNOWN",
    checkout_session_id: req.sessionId ?? sessionId,
    cart_id: req.cartId,
  });

/**
 * An intent of this cart `settling` (a /settle sent and not answered yet) within the settle deadline: answer the
 * documented 503 SETTLEMENT_UNKNOWN at once instead of waiting behind that turn. An older `settling` row (a process
 * that died mid-send) is left to the cart, which reconciles it.
 */
async function refuseWhileSettling(deps: X402Deps, req: X402CheckoutRequest): Promise<void> {
  const windowMs = x402Timeouts(deps.extras).settleMs + 5_000;
  const [row] = await deps.sql<{ checkout_session_id: string | null }[]>`
    SELECT (SELECT o.checkout_session_id FROM orders o WHERE o.cart_id = i.cart_id::uuid AND o.store_slug = i.store_id
            ORDER BY o.created_at DESC LIMIT 1) AS checkout_session_id
    FROM x402_intents i
    WHERE i.cart_id = ${req.cartId} AND i.state = 'settling' AND i.updated_at > now() - make_interval(secs => ${windowMs / 1000})
      AND ${callersCart(deps.sql, req)}
    LIMIT 1`;
  if (row) throw settlementUnknown(req, row.checkout_session_id);
}

/** The dependencies of the flow from the gateway's services. */
export function x402Deps(svc: { sql: Sql; actors: ActorCaller; config: { SPEC005_X402_CONFIG_ENFORCED: boolean; X402_FACILITATOR_ALLOWLIST: string; ALLOW_PRIVATE_URLS: boolean }; extras: Map<string, unknown>; siteUrl: string; log: Logger }): X402Deps {
  return {
    sql: svc.sql,
    actors: svc.actors,
    policy: { enforced: svc.config.SPEC005_X402_CONFIG_ENFORCED, allowlist: svc.config.X402_FACILITATOR_ALLOWLIST, allowPrivate: svc.config.ALLOW_PRIVATE_URLS },
    extras: svc.extras,
    siteUrl: svc.siteUrl,
    log: svc.log,
  };
}
