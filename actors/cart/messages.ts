/**
 * Messages of the `cart/<cartId>` actor (TypeBox; the runtime validates bodies). REST (gateway/rest/cart.ts,
 * checkout.ts) and MCP (create_cart, apply_coupon, preview_checkout, complete_checkout) send exactly these.
 * Every message carries the caller's `keyId`: a cart answers only its owner (others get CART_NOT_FOUND).
 */
import { Type as T, type Static } from "@sinclair/typebox";
import type { LegOutcomeView } from "./checkout-machine.ts";
import { NonBlank } from "../store/schemas.ts";

const Uuid = T.String({ format: "uuid" });

/** Our bounds beyond the spec's (items >= 1, quantity >= 1): a cart is a basket, not a bulk order. */
export const MAX_CART_LINES = 100;
export const MAX_LINE_QUANTITY = 10_000;
/** The longest payment token a checkout takes (REST `payment_method`, the bridges' token members: gateway/bridge/common.ts `boundedToken`). */
export const PAYMENT_TOKEN_MAX_LENGTH = 100;

export const CartItemInput = T.Object({
  productId: Uuid,
  variantId: T.Optional(T.Union([Uuid, T.Null()])),
  quantity: T.Integer({ minimum: 1, maximum: MAX_LINE_QUANTITY }),
});
export type CartItemInput = Static<typeof CartItemInput>;

export const RailName = T.Union([T.Literal("card"), T.Literal("x402")]);

/** The buyer's destination and, optionally, the shipping option picked for the store it belongs to (actors/cart/shipping.ts). */
export const ShippingChoiceInput = T.Object({
  countryCode: T.String({ pattern: "^[A-Za-z]{2}$" }),
  postalCode: NonBlank(20), // white space only is no postal code: the gateways refuse it naming their field (helper D)
  optionId: T.Optional(Uuid),
});
export type ShippingChoiceInput = Static<typeof ShippingChoiceInput>;

/**
 * The limits a payment must respect, from a mandate the gateway verified (an AP2 payment mandate and its signed cart
 * mandate, an MCP payment_mandate). The gateway checks them on a cart it read in an earlier turn; the cart checks them
 * again in the paying turn, on the amounts it is about to charge (after its own final pricing, before any hold or
 * rail call), because anything that reprices in between (the agent's shipping pick, a price change) would otherwise
 * be charged outside them (review R4-5). A refusal is 403 MANDATE_LIMIT_EXCEEDED (actors/cart/payment-limits.ts).
 */
export const PaymentLimitsInput = T.Object({
  /** The mandate's currency: the session's must be it. */
  currency: T.String({ pattern: "^[A-Z]{3}$" }),
  /** The most the whole session may total, in minor units of `currency` (violated: amount). */
  maxTotalMinor: T.Optional(T.Integer({ minimum: 0 })),
  /** The exact total a signed cart mandate shows (violated: cart_contents). */
  exactTotalMinor: T.Optional(T.Integer({ minimum: 0 })),
  /** Merchant slugs the mandate pays: every leg's store must be one (violated: payee). */
  payees: T.Optional(T.Array(T.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
  /** Echoed in the refusal as `details.mandate` (and `details.cart_mandate`): what the caller checked against. */
  mandate: T.Optional(T.Record(T.String(), T.Unknown())),
  cartMandate: T.Optional(T.Record(T.String(), T.Unknown())),
});
export type PaymentLimitsInput = Static<typeof PaymentLimitsInput>;

const CompleteFields = {
  keyId: Uuid,
  /**
   * When the owner is no agent key (an OAuth principal: MCP `ownerId`), its own creation time in ms, set by the
   * gateway from what it verified (gateway/mcp/tools/commerce.ts `identityCreatedAt`): the risk gate dates the caller
   * by it (NEW_KEY_HIGH_AMOUNT; audit X-2). An agent key's is read from agent_keys; the later of both counts.
   */
  identityCreatedAt: T.Optional(T.Integer({ minimum: 0 })),
  /** A mandate's limits, checked on what this turn charges (above). */
  limits: T.Optional(PaymentLimitsInput),
  /** UUID v4. Omitted: the key already bound to the session, else one derived from the session id. */
  idempotencyKey: T.Optional(T.String()),
  /** A sandbox test token (`tok_approve`, …) or `MOCK`; omitted: MOCK where the store takes it, else the card on file (`tok_approve`). */
  paymentMethod: T.Optional(T.String({ minLength: 1, maxLength: PAYMENT_TOKEN_MAX_LENGTH })),
  /** Per-store override of `paymentMethod` (merchant slug → token), for multi-store carts. */
  paymentMethods: T.Optional(T.Record(T.String(), T.String({ minLength: 1, maxLength: PAYMENT_TOKEN_MAX_LENGTH }))),
  reconfirmedStateHash: T.Optional(T.String({ pattern: "^[0-9a-f]{64}$" })),
  /**
   * The state the human approved (MCP: the precheck's `session.state_hash` its question showed): a session whose
   * state to charge is another (re-previewed meanwhile) is refused, STATE_RECONFIRMATION_REQUIRED (payment-limits.ts).
   */
  approvedStateHash: T.Optional(T.String({ pattern: "^[0-9a-f]{64}$" })),
  rail: T.Optional(RailName),
  /**
   * The merchant's verified customer this checkout buys for (MCP X-Customer-Identity): that store's order carries
   * `buyerRef` (actors/store/buyer-ref.ts) as its buyer_ref, so the customer sees it. Other stores' legs do not.
   */
  buyer: T.Optional(T.Object({ storeSlug: T.String({ minLength: 1, maxLength: 63 }), buyerRef: T.String({ pattern: "^[0-9a-f]{64}$" }) })),
};

/**
 * What an edit carries from the cart it replaces (MCP update_cart_item / remove_cart_item): the coupon, applied to the
 * new cart only if it still applies to the new items (else the answer's `coupon_dropped` says why), and the shipping
 * destination with the picks that still serve it. Nothing here is taken on trust: it is what applyCoupon and
 * selectShipping would accept on the new cart.
 */
export const CarryOverInput = T.Object({
  couponCode: T.Optional(T.String({ minLength: 1, maxLength: 64 })),
  shipping: T.Optional(
    T.Object({
      countryCode: T.String({ pattern: "^[A-Za-z]{2}$" }),
      postalCode: T.String({ minLength: 1, maxLength: 20 }),
      /** merchant slug → picked option id */
      choices: T.Record(T.String({ minLength: 1, maxLength: 63 }), Uuid),
    }),
  ),
});
export type CarryOverInput = Static<typeof CarryOverInput>;

const ApplyCouponBody = T.Object({
  keyId: Uuid,
  code: T.String({ minLength: 1, maxLength: 64 }),
  /** The revision the caller read; a newer cart answers CART_NOT_MUTABLE (stale_revision). */
  expectedRevision: T.Optional(T.Integer({ minimum: 1 })),
});

export const CartMessages = {
  create: T.Object({ keyId: Uuid, items: T.Array(CartItemInput, { minItems: 1, maxItems: MAX_CART_LINES }), carryOver: T.Optional(CarryOverInput) }),
  get: T.Object({ keyId: Uuid }),
  /**
   * The cart as `get` reads it, for an edit that rebuilds it (MCP update_cart_item / remove_cart_item), refused as
   * every write to it is (replaced, expired, frozen by a live session, partly paid): the tool answers the cart's own
   * refusal, the one REST edits get, before the human is asked.
   */
  getForEdit: T.Object({ keyId: Uuid }),
  applyCoupon: ApplyCouponBody,
  /**
   * What applyCoupon would answer (the same refusals, the same applied/reason), without applying anything: MCP
   * apply_coupon asks the human only about a coupon that applies.
   */
  checkCoupon: ApplyCouponBody,
  /**
   * get_shipping_rates with a cart: record the destination (and a picked option) and answer every store's options.
   * Allowed while nothing is being paid; a live preview then needs redoing (the session goes back to OPEN).
   */
  selectShipping: T.Object({ keyId: Uuid, shipping: ShippingChoiceInput, expectedRevision: T.Optional(T.Integer({ minimum: 1 })) }),
  /**
   * Drops the destination and picked options `selectShipping` recorded (an ACP session's address cleared: review
   * each store quotes its domestic default again, or asks for a destination. Refused as `selectShipping` is
   * once a merchant of the checkout is paid (the destination is shared); a live preview then needs redoing. A cart
   * with no destination is answered as it is, nothing changed.
   */
  clearShipping: T.Object({ keyId: Uuid, expectedRevision: T.Optional(T.Integer({ minimum: 1 })) }),
  /** preview_checkout: create or refresh the cart's checkout session; returns totals and the state hash. */
  preview: T.Object({ keyId: Uuid, expectedRevision: T.Optional(T.Integer({ minimum: 1 })), shipping: T.Optional(ShippingChoiceInput) }),
  /** complete_checkout on a previewed session. */
  complete: T.Object({ ...CompleteFields, sessionId: T.String({ minLength: 1, maxLength: 100 }) }),
  /**
   * What `complete` with these arguments would refuse before anything is held or charged, answered without doing
   * it (MCP asks the human only once this passes). Writes nothing, except that a session whose merchant state moved
   * beyond reconfirmation fails here as it would in `complete` (STATE_EXECUTION_BLOCKED).
   */
  precheck: T.Object({
    ...CompleteFields,
    sessionId: T.String({ minLength: 1, maxLength: 100 }),
    /** `cancel`: what `cancel` would refuse instead (the session's status allows no cancel); default `complete`. */
    intent: T.Optional(T.Union([T.Literal("complete"), T.Literal("cancel")])),
  }),
  /** The one-call flow: complete the live session, or preview (approving the current state) and complete now. */
  checkout: T.Object({
    ...CompleteFields,
    shipping: T.Optional(ShippingChoiceInput),
    /**
     * The ACP/UCP bridge's complete: a cart whose last checkout session a merchant ended (its cancel of the pending
     * order, or its block of the key) is refused SESSION_INACTIVE `reason: canceled_by_merchant` in this turn,
     * instead of previewed anew (audit B-1: the bridge's own check runs before this turn, so a merchant cancel landing
     * between the two would otherwise be paid over).
     */
    refuseAfterMerchantCancel: T.Optional(T.Boolean()),
  }),
  /**
   * Ends the session, its unpaid orders canceled. `storeSlug`: a merchant's cancel of its own pending order, which
   * ends only that store's checkout: refused (409 ORDER_NOT_CANCELLABLE, reason shared_checkout) while another
   * store's leg of the session is not paid (docs/checkout.md, "A multi-store checkout is the buyer's").
   */
  cancel: T.Object({ keyId: Uuid, sessionId: T.String({ minLength: 1, maxLength: 100 }), storeSlug: T.Optional(T.String({ minLength: 1, maxLength: 63 })) }),
  /**
   * An edit made `replacedBy` from this cart (MCP update_cart_item / remove_cart_item): the cart becomes REPLACED and
   * refuses writes, previews and payments from now on. `expectedRevision` is the revision the edit was built from,
   * so of two edits racing from one cart only the first replaces it.
   */
  replace: T.Object({ keyId: Uuid, replacedBy: Uuid, expectedRevision: T.Integer({ minimum: 1 }) }),
  /** The owner throws an OPEN cart away (ABANDONED): an edit whose replacement lost the race discards its new cart. */
  discard: T.Object({ keyId: Uuid }),
  /**
   * The merchant's way out of a capture escalated for a human (order `reconciliation` set, session SETTLEMENT_UNKNOWN):
   * accept it as paid, or refund it through the rail. Sent by the merchant reconcile route after it checked that the
   * caller owns `storeSlug`; the cart checks that the order is its session's leg for that store.
   */
  resolveCapture: T.Object({
    sessionId: T.String({ minLength: 1, maxLength: 100 }),
    storeSlug: T.String({ minLength: 1, maxLength: 63 }),
    orderId: Uuid,
    action: T.Union([T.Literal("accept"), T.Literal("refund")]),
    userId: Uuid,
  }),
};

export type ResolveCaptureBody = Static<(typeof CartMessages)["resolveCapture"]>;

export interface ResolveCaptureView {
  order_id: string;
  merchant_slug: string;
  action: "accept" | "refund";
  order_status: string;
  reconciliation: null;
  /** null: nothing was captured (a leg of nothing), so nothing was accepted or refunded. */
  capture_reference: string | null;
  refund: { refund_id: string; status: "REFUNDED"; amount_minor: number; currency: string } | null;
  /** x402: the service cannot pull the payment back; the merchant refunds it from its wallet (no refund record). */
  refund_by_merchant?: true;
  checkout_session_id: string;
  checkout_status: string;
  cart_status: string;
}

export type CreateBody = Static<(typeof CartMessages)["create"]>;
export type CompleteBody = Static<(typeof CartMessages)["complete"]>;
export type CheckoutBody = Static<(typeof CartMessages)["checkout"]>;

/** applyCoupon's (and checkCoupon's) answer: a coupon that does not apply is an answer, not an error (the spec's 200). */
export interface CouponAnswer {
  applied: boolean;
  code: string;
  reason?: string;
  details?: Record<string, unknown>;
  discount_minor: number;
  cart: CartView;
}

/** create's answer: the cart, and for a carried-over coupon that does not apply to the new items, why it was dropped. */
export type CreatedCartView = CartView & { coupon_dropped?: { code: string; reason: string; details?: Record<string, unknown>; message: string } };

/** `precheck`'s answer: the cart (live totals) and the status of the session asked about. */
export interface PrecheckView {
  /** Priced as `complete` would charge it now (the session's approved pricing unless it needs reconfirming). */
  cart: CartView;
  /**
   * `state_hash`: the state those totals are, for `complete`'s `approvedStateHash`. `charges`: what a payment of that
   * state charges each store, one entry per store not yet paid (a partly paid session's captured stores are left out),
   * so the human's question can name every store and its amount.
   */
  session: { id: string; status: string; state_hash: string; charges: { merchant_slug: string; amount_minor: number }[] };
}

export interface MoneyView {
  subtotal: number;
  discount: number;
  shipping: number;
  tax: number;
  total: number;
  subtotal_minor: number;
  discount_minor: number;
  shipping_minor: number;
  tax_minor: number;
  total_minor: number;
}

export interface CartLineView {
  product_id: string;
  variant_id: string | null;
  merchant_slug: string;
  title: string;
  quantity: number;
  unit_price: number;
  unit_price_minor: number;
  list_price_minor: number;
  price_source: "list" | "negotiated";
  line_total: number;
  line_total_minor: number;
}

export interface CartView {
  id: string;
  cart_id: string;
  status: string;
  revision: number;
  currency: string;
  items: CartLineView[];
  coupon: { code: string; applied: boolean; reason?: string; discount_minor: number } | null;
  totals: MoneyView;
  merchants: string[];
  /** The buyer's destination and the option chosen per store; null until get_shipping_rates was called with the cart. */
  shipping: { country_code: string; postal_code: string; selected_options: Record<string, string> } | null;
  checkout_session_id: string | null;
  /** Status of that session (OPEN means: preview again before paying). */
  checkout_status: string | null;
  /** Status REPLACED: the cart to use instead. */
  replaced_by_cart_id?: string;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export interface MerchantTotalsView extends MoneyView {
  merchant_slug: string;
  shipping_quoted: boolean;
  /** The zone the shipping was quoted from when the cart has a destination (else the store's domestic default). */
  shipping_option: { option_id: string; name: string; min_days: number; max_days: number } | null;
}

export interface ShippingOptionView {
  option_id: string;
  name: string;
  cost: number;
  cost_minor: number;
  free: boolean;
  min_days: number;
  max_days: number;
}

export interface ShippingRatesView {
  cart_id: string;
  revision: number;
  currency: string;
  destination: { country_code: string; postal_code: string };
  merchants: {
    merchant_slug: string;
    shippable: boolean;
    /** null while the buyer still has to pick one of `options` (call again with option_id). */
    selected_option_id: string | null;
    options: ShippingOptionView[];
  }[];
  totals: MoneyView;
  /** Every store has a quote: preview_checkout will succeed on shipping. */
  ready_for_preview: boolean;
  checkout_session_id: string | null;
  checkout_status: string | null;
  next: string;
}

export interface PreviewView {
  checkout_session_id: string;
  cart_id: string;
  status: string;
  state_hash: string;
  currency: string;
  totals: MoneyView;
  merchants: MerchantTotalsView[];
  items: CartLineView[];
  coupon: CartView["coupon"];
  expires_at: string | null;
  /** Lines the merchant's stock no longer covers (completion would be blocked). */
  stock_warnings: { product_id: string; requested: number; available: number | null }[];
  /**
   * Refusals a payment of this preview will meet whatever the caller does next (a merchant below the agent-checkout
   * trust threshold: code NOT_ELIGIBLE). The preview stands; completing it answers the code.
   */
  warnings: PreviewWarning[];
}

export interface PreviewWarning {
  code: "NOT_ELIGIBLE";
  reason: "trust_below_agent_threshold" | "merchant_not_eligible";
  merchant_slug: string;
  message: string;
  trust_score?: number | null;
  threshold?: number;
}

export interface OrderRef {
  order_id: string;
  merchant_slug: string;
  status: string;
  total: number;
  total_minor: number;
  currency: string;
  capture_reference: string | null;
}

export interface CompletedView {
  status: "COMPLETED";
  checkout_session_id: string;
  cart_id: string;
  order_id: string;
  order_ids: string[];
  orders: OrderRef[];
  total: number;
  total_minor: number;
  currency: string;
  payment_rail: string;
  simulated: boolean;
  state_hash: string;
  risk: { mode: string; decision: string; signals: { rule_code: string; decision: string }[] };
}

export interface PendingView {
  status: "PENDING_EXTERNAL_CONFIRMATION";
  checkout_session_id: string;
  cart_id: string;
  /** Relative links of the sandbox processor; the gateway makes them absolute. */
  approval_urls: { merchant_slug: string; url: string }[];
  completed_store_ids: string[];
  /** Every store's leg: waiting for its buyer, captured, or rolled back in the same attempt (what the 402 shows). */
  stores: LegOutcomeView[];
  expires_at: string | null;
}

/** x402 settlement is not wired yet: the gateway answers the spec's 402 challenge with these amounts. */
export interface X402RequiredView {
  status: "X402_PAYMENT_REQUIRED";
  checkout_session_id: string;
  cart_id: string;
  currency: string;
  total_minor: number;
  legs: { merchant_slug: string; amount_minor: number }[];
  /** Stores of this session already paid (a 207's captured legs): a repeated request's payloads for them are ignored. */
  paid_merchant_slugs: string[];
}

export type CompleteReply = CompletedView | PendingView | X402RequiredView;
