/**
 * Checkout: POST /agent/checkout/preview and POST /agent/checkout (InitiateCheckoutRequest). A one-call agent
 * sends `{cartId}` and gets the order; a careful agent previews, shows the totals and state hash to its human,
 * then completes with `checkout_session_id` (+ `reconfirmed_state_hash` when asked). Also the sandbox
 * processor's buyer-approval page (the link a 202 answer carries).
 */
import { Elysia, t } from "elysia";
import { approvalMessage } from "../../actors/cart/checkout-machine.ts";
import { cartActor, cartIdOfSession } from "../../actors/cart/index.ts";
import type { CompleteReply } from "../../actors/cart/messages.ts";
import { absoluteApprovalUrl, cardRail, SANDBOX_APPROVAL_PATH } from "../../actors/payments/card-rails.ts";
import { checkoutEnded, type SandboxIntentState } from "../../actors/payments/card-sandbox.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { ErrorEnvelope, errorBody, errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import { NON_BLANK_NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import { runX402Checkout, x402Deps, x402PaymentSources } from "../bridge/x402-checkout.ts";
import { BRIDGED_PLACEHOLDER, bridgedRequest, setAsideBridged } from "../bridge/detect.ts";
import { bridgeCheckout } from "../bridge/index.ts";
import type { Services } from "../services.ts";
import { requestIdempotencyKey } from "./idempotency-key.ts";
import { assignHeaders } from "../response-headers.ts";
import { strictBody, strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";

/**
 * An x402 payment (a body `x402_payload`, `pay_with_wallet`, a PAYMENT-SIGNATURE or X-PAYMENT header) on a request
 * whose rail is not x402 (none given means card) is refused before anything is held: the card rail ignored it and
 * charged the store's default method, so an agent that asked to pay from its wallet had its card charged (audit B-5;
 * the same class as A-10's ignored payment_methods key). `x402_config` alone pays nothing and stays ignored.
 */
function refuseX402PaymentOffRail(rail: string, body: { x402_payload?: unknown; pay_with_wallet?: boolean }, headers: Headers): void {
  if (rail === "x402") return;
  const sources = x402PaymentSources({ payload: body.x402_payload, payWithWallet: body.pay_with_wallet === true, headers });
  if (sources.length === 0) return;
  throw fail("INVALID_ARGUMENT", `This request carries an x402 payment (${sources.join(", ")}) but payment_rail is ${rail}: send payment_rail "x402" to pay with it, or leave it out to pay on the card rail.`, {
    field: "payment_rail",
    payment_rail: rail,
    payment_sources: sources,
  });
}

/** The spec's InitiateCheckoutRequest.x402_config (validateX402 checks it, with the x402 section's codes). */
const X402Config = t.Object(
  {
    merchant_wallet_address: t.String({ minLength: 1, description: "The merchant's pay-to address (GET /agent/merchants/{slug}/protocols)." }),
    network: t.String({ minLength: 1, description: "CAIP-2 chain id, e.g. eip155:84532." }),
    facilitator_url: t.String({ format: "uri", description: "The x402 facilitator (the merchant's, or one of its allowed_facilitators)." }),
    asset_address: t.Optional(t.String()),
    facilitator_version: t.Optional(t.Union([t.Literal("v1"), t.Literal("v2")])),
  },
  {
    description:
      "Required when payment_rail is x402 (also with pay_with_wallet); ignored on the card rail. The merchant's own configuration overrides it " +
      "(docs/x402.md). Refusals: missing (or a missing required member) 400 MISSING_REQUIRED_ARGUMENT, a wrong value 400 INVALID_ARGUMENT, " +
      "each with details.field.",
  },
);

/**
 * x402_config as the request schema states it: the object's shape for the document (audit S-4), checked by
 * validateX402 and not by the schema. t.Unknown ignores the object keywords when validating, so the route keeps the
 * spec's x402 codes (MISSING_REQUIRED_ARGUMENT / INVALID_ARGUMENT naming the member, docs/x402.md) instead of the
 * schema's validation_error, and a card checkout is not refused for a config it does not use.
 */
const X402ConfigDocumented = t.Unknown({ ...X402Config });

/**
 * The buyer's destination (and picked option) for the cart: what MCP's get_shipping_rates records. A merchant
 * offering more than one shipping method answers 409 PRECONDITION_NOT_MET until it is given
 * (details.required_step, details.options with option ids and costs); docs/checkout.md "Shipping".
 */
const ShippingChoice = t.Object(
  {
    country_code: t.String({ pattern: "^[A-Za-z]{2}$", description: "ISO 3166-1 alpha-2 of the buyer's address" }),
    // white space only is no postal code (it matched country-wide zones only): refused as the bridges refuse it (helper D)
    postal_code: t.String({ minLength: 1, maxLength: 20, pattern: NON_BLANK_NO_NUL_PATTERN }),
    option_id: t.Optional(t.String({ format: "uuid", description: "The shipping option to use for its merchant (details.options[].option_id of a 409)." })),
  },
  { description: "Ship to this destination; required before checkout when a merchant of the cart offers several shipping methods." },
);

function shippingChoice(s: typeof ShippingChoice.static | undefined) {
  return s ? { shipping: { countryCode: s.country_code, postalCode: s.postal_code, ...(s.option_id ? { optionId: s.option_id.toLowerCase() } : {}) } } : {};
}

const PreviewRequest = t.Object({ cartId: t.String({ format: "uuid" }), expected_revision: t.Optional(t.Integer({ minimum: 1 })), shipping: t.Optional(ShippingChoice) });

const CheckoutRequest = t.Object({
  cartId: t.String({ format: "uuid" }),
  payment_rail: t.Optional(t.Union([t.Literal("card"), t.Literal("x402")], { description: "card (default, the card-processor rail) or x402" })),
  payment_method: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Sandbox test token (tok_approve, tok_decline, …) or MOCK (demo store)." })),
  payment_methods: t.Optional(t.Record(t.String(), t.String({ minLength: 1, maxLength: 100 }), { description: "Per-merchant tokens for multi-store carts." })),
  idempotency_key: t.Optional(
    t.String({
      description:
        "UUID v4; or the Idempotency-Key header. One key per checkout session; repeat it on every retry, including with another payment " +
        "method after a 402 (details.idempotency_key_bound): another key on the session is 409 IDEMPOTENCY_KEY_CONFLICT.",
    }),
  ),
  idempotencyKey: t.Optional(t.String({ description: "The same as idempotency_key (either spelling; both must then be equal)." })),
  checkout_session_id: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  reconfirmed_state_hash: t.Optional(t.String({ pattern: "^[0-9a-f]{64}$" })),
  x402_payload: t.Optional(
    t.Unknown({ description: "x402 v2 PaymentPayload (or a map of them by merchant slug); not together with a PAYMENT-SIGNATURE or X-PAYMENT header or pay_with_wallet (400, see the 400 answer)." }),
  ),
  x402_config: t.Optional(X402ConfigDocumented),
  pay_with_wallet: t.Optional(t.Boolean({ description: "x402: pay from the agent's custodial wallet (POST /agent/wallet/provision)." })),
  shipping: t.Optional(ShippingChoice),
});

/**
 * The error envelope with this route's own words for one status (the document generator keeps them before its list
 * of codes, gateway/openapi/complete.ts): what an agent must do on answers whose code alone does not say it.
 */
const describedError = (description: string) => t.Object(ErrorEnvelope.properties, { description });

function validateX402(body: typeof CheckoutRequest.static): typeof X402Config.static {
  if (body.x402_config === undefined || body.x402_config === null) {
    // Required by the spec even though the merchant's configuration overrides it (docs/x402.md): say where the values are.
    throw fail(
      "MISSING_REQUIRED_ARGUMENT",
      "x402_config is required when payment_rail is x402, also with pay_with_wallet: copy merchant_wallet_address, network and facilitator_url " +
        "(or one of allowed_facilitators) from GET /api/v1/agent/merchants/{slug}/protocols; the merchant's configuration overrides them.",
      { field: "x402_config" },
    );
  }
  if (typeof body.x402_config !== "object" || Array.isArray(body.x402_config)) {
    // A string or an array is a wrong value, not a missing member (it used to be answered "merchant_wallet_address is required").
    throw fail("INVALID_ARGUMENT", "x402_config must be an object {merchant_wallet_address, network, facilitator_url, asset_address?, facilitator_version?}.", {
      field: "x402_config",
    });
  }
  const c = body.x402_config as Record<string, unknown>;
  const str = (k: string) => typeof c[k] === "string" && (c[k] as string).length > 0;
  for (const k of ["merchant_wallet_address", "network", "facilitator_url"]) {
    if (!(k in c)) throw fail("MISSING_REQUIRED_ARGUMENT", `x402_config.${k} is required.`, { field: `x402_config.${k}` });
    if (!str(k)) throw fail("INVALID_ARGUMENT", `x402_config.${k} must be a non-empty string.`, { field: `x402_config.${k}` });
  }
  try {
    new URL(c.facilitator_url as string);
  } catch {
    throw fail("INVALID_ARGUMENT", "x402_config.facilitator_url must be a URI.", { field: "x402_config.facilitator_url" });
  }
  if (c.asset_address !== undefined && typeof c.asset_address !== "string") throw fail("INVALID_ARGUMENT", "x402_config.asset_address must be a string.", { field: "x402_config.asset_address" });
  if (c.facilitator_version !== undefined && c.facilitator_version !== "v1" && c.facilitator_version !== "v2") {
    throw fail("INVALID_ARGUMENT", "x402_config.facilitator_version must be v1 or v2.", { field: "x402_config.facilitator_version" });
  }
  return c as unknown as typeof X402Config.static;
}

/**
 * The cart actor's shipping precondition names MCP's get_shipping_rates (its details.required_step, kept as is for
 * clients that branch on it); a REST agent is told the REST way instead: `shipping` on the preview.
 */
async function inRestTerms<R>(run: Promise<R>): Promise<R> {
  try {
    return await run;
  } catch (err) {
    if (!(err instanceof ActorError) || err.code !== "PRECONDITION_NOT_MET" || err.details?.required_step !== "get_shipping_rates") throw err;
    const slugs = ((err.details.merchant_slugs as string[] | undefined) ?? []).join(", ");
    throw fail(
      "PRECONDITION_NOT_MET",
      err.details.reason === "shipping_option_required"
        ? `Pick a shipping option for ${slugs}: send shipping {country_code, postal_code, option_id} with option_id one of details.options[].option_id on POST /api/v1/agent/checkout/preview (or on the one-call POST /api/v1/agent/checkout), then pay.`
        : `${slugs} quotes shipping by destination and method: send shipping {country_code, postal_code} on POST /api/v1/agent/checkout/preview to list its options (details.options), then send it again with shipping.option_id.`,
      err.details,
    );
  }
}

const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page the 202's buyer link opens (sandbox card processor): what is being paid, to whom, and two buttons that
 * post to /approve and /reject under the same link. Those answer a form post with a 303 back here, so the human sees
 * the outcome. `link`: the page's own path, token included (the token is what lets the buyer decide).
 */
function approvalPage(intent: { intentId: string; storeId: string; amountMinor: number; currency: string; state: string }, link: string): string {
  const amount = `${toMajor(intent.amountMinor, intent.currency)} ${intent.currency}`;
  const base = escapeHtml(link);
  const waiting = intent.state === "awaiting_approval";
  const ended = intent.state === "voided";
  const buttons = waiting
    ? `<form method="post" action="${base}/approve"><button type="submit">Approve the payment</button></form>
<form method="post" action="${base}/reject"><button type="submit">Refuse the payment</button></form>`
    : ended
      ? `<p role="alert">This checkout is no longer payable: it ended (canceled or expired) before the payment was made. Nothing was charged and nothing will be; there is nothing left to approve here.</p>`
      : `<p role="status">This payment is ${escapeHtml(intent.state.replace(/_/g, " "))}; there is nothing left to decide here.</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approve a payment (sandbox)</title></head>
<body><main>
<h1>Approve a payment</h1>
<p>An AI agent asks you to approve a card payment of <strong>${escapeHtml(amount)}</strong> to <strong>${escapeHtml(intent.storeId)}</strong>.
This is the sandbox card processor: no real money moves.</p>
<p>Payment <code>${escapeHtml(intent.intentId)}</code>, status: <strong>${ended ? "no longer payable (checkout ended)" : escapeHtml(intent.state.replace(/_/g, " "))}</strong>.</p>
${buttons}
</main></body></html>`;
}

const IntentId = t.String({ pattern: "^pi_[0-9a-f]{40}$" });
/**
 * The approval link's secret (card-sandbox.ts: 64 hex). No pattern: a token of another shape is simply wrong, and is
 * answered as a wrong token (404 not_found, as an unknown intent), not with a 400 that would tell the shapes apart.
 */
const ApprovalToken = t.String({ minLength: 1, maxLength: 128 });
/** The link's path: whoever holds it is the buyer (docs/checkout.md "Payment method"). */
const approvalLink = (p: { intentId: string; token: string }) => `${SANDBOX_APPROVAL_PATH}/${p.intentId}/${encodeURIComponent(p.token)}`;
/** The answer to an unknown intent and to a wrong token alike: nothing tells them apart. */
const noSuchPayment = (intentId: string) => fail("not_found", "No sandbox payment with that intent id.", { intent_id: intentId });

/**
 * The sandbox decision answer's status: `approved` (the agent's next complete_checkout with the same idempotency_key
 * captures), `captured` (it already did), `not_approved` (refused; that call answers PAYMENT_NOT_APPROVED).
 */
export type SandboxDecisionStatus = "approved" | "captured" | "not_approved";

export function decisionStatus(state: SandboxIntentState): SandboxDecisionStatus {
  if (state === "captured") return "captured";
  if (state === "approved") return "approved";
  // rejected, or not_approved once the agent's call heard the refusal (a decision leaves no other state behind)
  return "not_approved";
}

export function checkoutRoutes(svc: Services) {
  return new Elysia({ name: "checkout-routes" })
    .get(
      `${SANDBOX_APPROVAL_PATH}/:intentId/:token`,
      async ({ params, request }) => {
        const intent = await cardRail(svc.sql).describe(params.intentId, params.token);
        if (!intent) throw noSuchPayment(params.intentId);
        // The checkout ended unpaid (helper B, B-4): a refusal, 409 conflict, as the page a browser asks for (its text
        // says so) or as the error envelope for any other client.
        const ended = intent.state === "voided";
        if (ended && !(request.headers.get("accept") ?? "").includes("text/html")) throw checkoutEnded(params.intentId);
        // never framed (a page whose buttons move money must not be clickjacked), forms post only to itself; the URL
        // is a secret, so no Referer carries it anywhere
        return new Response(approvalPage(intent, approvalLink(params)), {
          status: ended ? 409 : 200,
          headers: {
            "content-type": "text/html; charset=utf-8",
            "cache-control": "no-store",
            "x-frame-options": "DENY",
            "referrer-policy": "no-referrer",
            "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
          },
        });
      },
      {
        params: t.Object({ intentId: IntentId, token: ApprovalToken }),
        response: errorResponses(400, 404, 409),
        detail: {
          tags: ["checkout"],
          summary: "Sandbox processor: the buyer's approval page (the 202's details.approval_url; HTML with approve and refuse buttons)",
          description:
            "The link is the capability: its token is a secret only the buyer's agent is given. A wrong token answers 404 not_found " +
            "exactly as an unknown intent does. Once the checkout ended unpaid (canceled, expired or failed) the payment is withdrawn: " +
            "409 conflict (details.state voided, reason checkout_ended), as an HTML page saying the checkout is no longer payable " +
            "when the client accepts text/html, else as the error envelope.",
        },
      },
    )
    .post(
      `${SANDBOX_APPROVAL_PATH}/:intentId/:token/:decision`,
      async ({ params, request }) => {
        // The sandbox processor's buyer page: approving or refusing here is what a human does at the link.
        const rail = cardRail(svc.sql);
        const form = (request.headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded");
        const back = () => new Response(null, { status: 303, headers: { location: approvalLink(params), "referrer-policy": "no-referrer" } });
        try {
          if (params.decision === "approve") await rail.approve(params.intentId, params.token);
          else await rail.reject(params.intentId, params.token);
        } catch (err) {
          // A button of a page opened before the checkout ended: back to the page, which now says it is no longer payable.
          if (form && err instanceof ActorError && err.details?.reason === "checkout_ended") return back();
          throw err;
        }
        // The page's own buttons (a form post): back to the page, which now shows the outcome.
        if (form) return back();
        // The intent's own state, as the page shows it: a lookup answers an approved, not yet captured intent as
        // still needs_buyer_approval (what a payment call must hear), which read here as "the approval did not take".
        const intent = await rail.describe(params.intentId, params.token);
        if (!intent) throw noSuchPayment(params.intentId);
        return ok({ intent_id: params.intentId, decision: params.decision, status: decisionStatus(intent.state) });
      },
      {
        params: t.Object({ intentId: IntentId, token: ApprovalToken, decision: t.Union([t.Literal("approve"), t.Literal("reject")]) }),
        // the page's buttons post an empty form: no body is the decision; a JSON key is 400 ({"decision": "reject"} to …/approve approved)
        ...noBody(),
        response: errorResponses(400, 404, 409),
        detail: {
          tags: ["checkout"],
          summary: "Sandbox processor: the buyer approves or refuses a payment (test rail only)",
          description:
            "POST to the approval link + /approve or /reject. A wrong token answers 404 not_found exactly as an unknown intent does; " +
            "a payment whose checkout ended unpaid (canceled, expired or failed) 409 conflict (details.state voided, reason checkout_ended): " +
            "nothing will be charged. " +
            "`status` is the payment's state after the decision: approved (the agent's next complete_checkout with the same " +
            "idempotency_key captures it), captured (that call already did), not_approved (refused: that call answers 402 PAYMENT_NOT_APPROVED).",
        },
      },
    )
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/checkout/preview",
      async ({ body, agent }) =>
        ok(
          await inRestTerms(
            svc.actors.ask(cartActor, body.cartId.toLowerCase(), "preview", {
              keyId: agent.keyId,
              ...(body.expected_revision ? { expectedRevision: body.expected_revision } : {}),
              ...shippingChoice(body.shipping),
            }),
          ),
        ),
      {
        ...strictJsonBody(PreviewRequest),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: {
          tags: ["checkout"],
          summary: "Preview checkout: session id, totals and the state hash to approve",
          description:
            "`shipping` records the buyer's destination (and a picked `option_id`) on the cart first. A merchant offering more than one " +
            "shipping method answers 409 PRECONDITION_NOT_MET (details.required_step, details.options) until the destination and an option " +
            "are given; a merchant that does not ship there answers 403 NOT_ELIGIBLE (details.reason destination_not_served). A session " +
            "awaiting the buyer's approval or a running payment answers 409 CHECKOUT_STATUS_INVALID (details.status). `warnings` lists " +
            "what a payment of this preview will refuse anyway (NOT_ELIGIBLE: a merchant below the agent-checkout trust threshold). A cart " +
            "replaced by an MCP edit answers 409 CART_NOT_MUTABLE (details.replaced_by_cart_id).",
          security: [{ agentApiKey: [] }],
        },
      },
    )
    .post(
      "/api/v1/agent/checkout/:sessionId/cancel",
      async ({ params, agent }) => {
        const cartId = cartIdOfSession(params.sessionId);
        if (!cartId) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session.", { checkout_session_id: params.sessionId });
        return ok(await svc.actors.ask(cartActor, cartId, "cancel", { keyId: agent.keyId, sessionId: params.sessionId }));
      },
      {
        params: t.Object({ sessionId: t.String({ minLength: 1, maxLength: 100 }) }),
        ...noBody(),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: {
          tags: ["checkout"],
          summary: "Cancel a checkout session (its pending orders canceled, stock released, the cart open again)",
          description:
            "404 CHECKOUT_SESSION_NOT_FOUND: a session id that does not exist or whose cart is another key's (the same answer for both). " +
            "409 SESSION_INACTIVE: the session already ended, or is past its expiry (details.status EXPIRED: an expired session " +
            "cannot be canceled; the same answer before and after its timer ended it); 409 CHECKOUT_STATUS_INVALID: its payment is running.",
          security: [{ agentApiKey: [] }],
        },
      },
    )
    .post(
      "/api/v1/agent/checkout",
      async ({ body, agent, set, request }) => {
        // Another agent-payment protocol (x-protocol header or body shape): answered by the bridge in its own shape.
        const other = bridgedRequest(request);
        if (other) return bridgeCheckout(svc, agent, other.protocol, request, other.body, set as { headers: Record<string, string | number> });
        // The same rule as the refund route: header and body equal ignoring case, a UUID v4, used lowercased.
        const key = requestIdempotencyKey(request.headers.get("idempotency-key") ?? undefined, body.idempotency_key, body.idempotencyKey);
        const rail = body.payment_rail ?? "card";
        refuseX402PaymentOffRail(rail, body, request.headers);
        const x402 = rail === "x402" ? validateX402(body) : null;
        const cartId = body.cartId.toLowerCase();
        if (x402) {
          // x402 v2: challenge, local checks, facilitator, per-store settlement (gateway/bridge/x402-checkout.ts).
          const answer = await runX402Checkout(x402Deps(svc), {
            keyId: agent.keyId,
            cartId,
            ...(body.checkout_session_id ? { sessionId: body.checkout_session_id } : {}),
            ...(key ? { idempotencyKey: key } : {}),
            ...(body.reconfirmed_state_hash ? { reconfirmedStateHash: body.reconfirmed_state_hash } : {}),
            payload: body.x402_payload,
            config: x402,
            payWithWallet: body.pay_with_wallet === true,
            headers: request.headers,
          });
          set.status = answer.status;
          assignHeaders(set.headers as Record<string, string | number>, answer.headers);
          return answer.body;
        }
        const common = {
          keyId: agent.keyId,
          rail,
          ...(key ? { idempotencyKey: key } : {}),
          ...(body.payment_method ? { paymentMethod: body.payment_method } : {}),
          ...(body.payment_methods ? { paymentMethods: body.payment_methods } : {}),
          ...(body.reconfirmed_state_hash ? { reconfirmedStateHash: body.reconfirmed_state_hash } : {}),
        };
        let reply: CompleteReply;
        if (body.checkout_session_id) {
          if (body.shipping) {
            throw fail("INVALID_ARGUMENT", "A previewed session pays what was previewed; send shipping with the preview (or without checkout_session_id).", { field: "shipping" });
          }
          if (cartIdOfSession(body.checkout_session_id) !== cartId) {
            throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session for this cart.", { checkout_session_id: body.checkout_session_id });
          }
          reply = await inRestTerms(svc.actors.ask(cartActor, cartId, "complete", { ...common, sessionId: body.checkout_session_id }));
        } else {
          reply = await inRestTerms(svc.actors.ask(cartActor, cartId, "checkout", { ...common, ...shippingChoice(body.shipping) }));
        }
        if (reply.status === "COMPLETED") return ok(reply);
        if (reply.status === "PENDING_EXTERNAL_CONFIRMATION") {
          const urls = reply.approval_urls.map((a) => ({ merchant_slug: a.merchant_slug, url: absoluteApprovalUrl(svc.siteUrl, a.url) }));
          set.status = 202;
          return errorBody("user_action_required", approvalMessage(reply.stores, "payment_methods"), {
            status: reply.status,
            checkout_session_id: reply.checkout_session_id,
            approval_url: urls[0]?.url,
            approval_urls: urls,
            completed_store_ids: reply.completed_store_ids,
            stores: reply.stores,
            expires_at: reply.expires_at,
          });
        }
        // Only the x402 flow (handled above) answers X402_PAYMENT_REQUIRED.
        throw fail("INTERNAL_ERROR", `unexpected checkout reply ${reply.status}`);
      },
      {
        body: CheckoutRequest,
        transform: [
          (ctx: { request: Request; body: unknown }) => {
            if (setAsideBridged(ctx.request, ctx.body)) ctx.body = { ...BRIDGED_PLACEHOLDER };
          },
          // our own shape: a key it does not have is 400 naming it, not dropped by the normaliser (a `paymentMethod`
          // naming a declining test token was dropped and the store's default method charged: A-10's and B-5's class;
          // the writes' strictBody, audit W-7). x402_payload and x402_config are checked by their own rules. A bridged
          // body was set aside above: its placeholder has no other key. A hook of its own, so the OpenAPI document
          // marks this body closed like every strict route's (strict-body.ts strictSchemaOf)
          strictBody(CheckoutRequest),
        ],
        response: {
          ...errorResponses(401, 402, 403, 404),
          400: describedError(
            "x402: one payment source per request (a body x402_payload, a PAYMENT-SIGNATURE header, an X-PAYMENT header, pay_with_wallet); " +
              "any two (both headers count as two) are INVALID_ARGUMENT with details.payment_sources naming them, refused before anything is sent; " +
              "any of them with a payment_rail other than x402 (none given means card) is INVALID_ARGUMENT with details.field payment_rail, refused before anything is held",
          ),
          409: describedError(
            "STATE_EXECUTION_BLOCKED: details.reasons[].code names what changed, e.g. out_of_stock, price_beyond_cut, or coupon_exhausted (with store_id and " +
              "coupon_code: another checkout took the coupon's last use); nothing charged: preview again (it shows what changed)",
          ),
          503: describedError(
            "UPSTREAM_UNAVAILABLE with details.status SETTLEMENT_UNKNOWN and checkout_session_id: the payment's outcome is not known yet (the " +
              "processor's answer was lost; x402: the settle timed out, or the transfer is not yet X402_CAPTURE_CONFIRMATIONS blocks deep) and " +
              "is being reconciled; call again with the same idempotency_key, and on x402 do not sign again (docs/x402.md)",
          ),
        },
        detail: {
          tags: ["checkout"],
          summary: "Complete a checkout (card rail by default; 202 when a human must act; 402 x402 challenge)",
          description:
            "Without checkout_session_id the current state is previewed and paid in one call; `shipping` (destination and option_id) " +
            "is recorded on the cart first. 409 PRECONDITION_NOT_MET (details.required_step): a merchant offering several shipping " +
            "methods has no destination or picked option yet (send `shipping`, see details.options), or a session whose shipping " +
            "changed after its preview (preview again). 409 CHECKOUT_STATUS_INVALID (details.status): an operation the session's " +
            "current status does not allow. 409 CHECKOUT_ALREADY_IN_PROGRESS: the same idempotency_key again; once the session is " +
            "COMPLETED its details carry the existing receipt (order_id, order_ids, orders[] with status, total, currency and " +
            "capture_reference, total, currency), nothing charged again. 409 STATE_RECONFIRMATION_REQUIRED: send " +
            "details.reconfirm_state_hash back as reconfirmed_state_hash with the same idempotency_key. 400 INVALID_ARGUMENT " +
            "(details.reason invalid_test_token, details.valid_tokens): a payment_method the sandbox processor does not know, refused " +
            "before anything is held. 404 CHECKOUT_SESSION_NOT_FOUND: a checkout_session_id that does not exist or is another key's, " +
            "or a session past its expiry (details.status EXPIRED, whatever the idempotency_key; the same answer before and after " +
            "its timer ended it): preview the cart again. 409 SESSION_INACTIVE: a session that ended canceled or failed.",
          security: [{ agentApiKey: [] }],
        },
      },
    );
}
