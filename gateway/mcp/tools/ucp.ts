/**
 * The UCP MCP binding's tool set (`ucp_*`), mapped onto the same actors and reads as the native tools: catalog
 * search/lookup/product, cart create/get/update, checkout create/get/update/complete/cancel, order get. Names and
 * argument spellings follow UCP; behaviour, confirmation and errors are the native tools'.
 */
import { Type as T } from "@sinclair/typebox";
import { BRIDGE_SCOPES } from "../../../actors/agent/access.ts";
import { cartActor } from "../../../actors/cart/index.ts";
import { findEligibleProducts, toProductDetail } from "../../../actors/store/reads.ts";
import { defineTool, type AnyTool, type ToolContext } from "../registry.ts";
import * as c from "./commerce.ts";
import * as d from "./discovery.ts";
import { AnyObject, Open, Strict, Uuid } from "./schemas.ts";

/** Same behaviour as a native tool under a UCP name (schemas, confirmation and errors included). */
function alias(name: string, title: string, base: AnyTool, extra = ""): AnyTool {
  return { ...base, name, title, description: `UCP binding of ${base.name}. ${base.description}${extra}` };
}

/**
 * A UCP checkout tool is a delegated checkout through a payment protocol bridge, like the REST ACP/UCP/AP2 routes:
 * it takes `checkout` or the bridge-only `checkout:delegate` (docs/access.md, Scopes). The native checkout tools
 * keep `checkout` alone.
 */
function bridged(tool: AnyTool): AnyTool {
  return { ...tool, scopes: BRIDGE_SCOPES };
}

export const ucpSearchCatalog = alias("ucp_search_catalog", "UCP: search catalog", d.searchProducts);
export const ucpGetProduct = alias("ucp_get_product", "UCP: get product", d.getProductDetails);
export const ucpCreateCart = alias("ucp_create_cart", "UCP: create cart", c.createCart);
export const ucpGetCart = alias("ucp_get_cart", "UCP: get cart", c.getCart);
export const ucpGetOrder = alias("ucp_get_order", "UCP: get order", c.getOrder);
export const ucpCancelCheckout = bridged(alias("ucp_cancel_checkout", "UCP: cancel checkout", c.cancelCheckout));
export const ucpGetCheckout = bridged(alias("ucp_get_checkout", "UCP: get checkout", c.getCheckoutStatus));

export const ucpLookupCatalog = defineTool({
  name: "ucp_lookup_catalog",
  title: "UCP: lookup catalog",
  description: "UCP catalog lookup: products of this store by id (1 to 50 ids). Unknown ids are listed in not_found.",
  group: "discovery",
  input: T.Object({ ids: T.Array(Uuid, { minItems: 1, maxItems: 50 }) }, Strict),
  output: T.Object({ products: T.Array(AnyObject), not_found: T.Array(T.String()) }, Open),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  async handler(a, ctx) {
    const ids = [...new Set(a.ids.map((i) => i.toLowerCase()))];
    const found = await findEligibleProducts(ctx.svc.sql, ids);
    const mine = ids.filter((id) => found.get(id)?.store.slug === ctx.store.slug);
    return {
      products: mine.map((id) => toProductDetail(found.get(id)!.product, found.get(id)!.store, ctx.now)),
      not_found: ids.filter((id) => !mine.includes(id)),
    };
  },
});

export const ucpUpdateCart = defineTool({
  ...c.updateCartItem,
  name: "ucp_update_cart",
  title: "UCP: update cart",
  description: `UCP binding of update_cart_item (quantity 0 is not allowed: use remove_cart_item). ${c.updateCartItem.description}`,
});

/** The scopes create_cart accepts: ucp_create_checkout from line_items makes a cart, so it needs one of them too. */
const CART_SCOPES = c.createCart.scopes ?? ["cart"];

/** A ucp_create_checkout call that makes a cart (line_items without cart_id), read from its unvalidated arguments. */
function createsCart(args: unknown): boolean {
  const a = args !== null && typeof args === "object" ? (args as Record<string, unknown>) : {};
  return a.line_items !== undefined && a.cart_id === undefined;
}

export const ucpCreateCheckout = defineTool({
  name: "ucp_create_checkout",
  title: "UCP: create checkout",
  description:
    "UCP checkout creation: from a cart_id (preview_checkout) or straight from line_items (create_cart then " +
    "preview_checkout in one call; asks the human for the cart). Returns the checkout with its id, totals and state hash.",
  group: "checkout",
  input: T.Object(
    {
      cart_id: T.Optional(T.String({ minLength: 1, maxLength: 60 })),
      line_items: T.Optional(T.Array(T.Object({ product_id: Uuid, quantity: T.Integer({ minimum: 1, maximum: 10_000 }), variant_id: T.Optional(Uuid) }, Strict), { minItems: 1, maxItems: 100 })),
    },
    Strict,
  ),
  output: T.Object({ checkout_session_id: T.String(), state_hash: T.String(), totals: AnyObject }, Open),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  auth: "key",
  scopes: BRIDGE_SCOPES,
  sandboxRefused: true,
  confirmation: false,
  // creating the cart from line_items asks the human, as create_cart does
  mayAsk: true,
  rateBucket: "ucp_create_checkout",
  errors: {
    MISSING_REQUIRED_ARGUMENT: "neither cart_id nor line_items",
    INVALID_ARGUMENT: "both cart_id and line_items",
    CART_NOT_FOUND: "as preview_checkout: unknown or another caller's cart_id, or a cart none of whose items is this store's",
    PRECONDITION_NOT_MET: "as preview_checkout: a merchant with more than one shipping method before get_shipping_rates (details.required_step)",
  },
  // creating the cart from line_items needs create_cart's scope too (this tool's own is checkout or
  // checkout:delegate): an OAuth token without it gets the dispatcher's insufficient_scope challenge (audit A-2)
  argumentScopes: (args) => (createsCart(args) ? CART_SCOPES : undefined),
  async handler(a, ctx: ToolContext) {
    const { fail } = await import("../../../actors/runtime/errors.ts");
    if (!a.cart_id && !a.line_items) throw fail("MISSING_REQUIRED_ARGUMENT", "Pass cart_id or line_items.", { field: "cart_id" });
    if (a.cart_id && a.line_items) throw fail("INVALID_ARGUMENT", "Pass cart_id or line_items, not both.", { field: "line_items" });
    let cartId = a.cart_id ? c.cartIdArg(a.cart_id) : null;
    if (!cartId) {
      // an API key without it: the tool error (a key's scopes are chosen at its creation, there is nothing to step up to)
      if (ctx.caller && !CART_SCOPES.some((s) => ctx.caller!.scopes.includes(s))) {
        throw fail("forbidden", `The credential lacks the "cart" scope needed to create a cart from line_items.`, { scope: CART_SCOPES[0], acceptedScopes: [...CART_SCOPES] });
      }
      // creating a cart is a write: the same human confirmation as create_cart
      await ctx.confirm(await c.createCart.summarize!({ items: a.line_items! }, ctx));
      const created = (await c.createCart.handler({ items: a.line_items! }, ctx)) as { id: string };
      cartId = created.id;
    } else {
      await c.assertCartOfThisStore(ctx, cartId);
    }
    return ctx.svc.actors.ask(cartActor, cartId, "preview", { keyId: c.ownerId(ctx) });
  },
});

export const ucpUpdateCheckout = defineTool({
  name: "ucp_update_checkout",
  title: "UCP: update checkout",
  description: "UCP checkout update: re-price the checkout's cart (refreshes totals and the state hash after the merchant's state moved). Pass the cart's expected_revision to refuse a changed cart.",
  group: "checkout",
  input: T.Object({ checkout_session_id: T.String({ minLength: 1, maxLength: 100 }), expected_revision: T.Optional(T.Integer({ minimum: 1 })) }, Strict),
  output: T.Object({ checkout_session_id: T.String(), state_hash: T.String() }, Open),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  auth: "key",
  scopes: BRIDGE_SCOPES,
  sandboxRefused: true,
  confirmation: false,
  errors: {
    PRECONDITION_NOT_MET: "as preview_checkout: a merchant with more than one shipping method before get_shipping_rates (details.required_step)",
    CHECKOUT_STATUS_INVALID: "as preview_checkout: while the buyer approves, a payment runs or awaits settlement (details.status)",
    CHECKOUT_SESSION_NOT_FOUND: "as complete_checkout",
  },
  async handler(a, ctx) {
    const cartId = c.sessionCart(a.checkout_session_id);
    await c.assertCartOfThisStore(ctx, cartId, () => c.noSuchSession(a.checkout_session_id));
    return ctx.svc.actors.ask(cartActor, cartId, "preview", {
      keyId: c.ownerId(ctx),
      ...(a.expected_revision ? { expectedRevision: a.expected_revision } : {}),
    });
  },
});

export const ucpCompleteCheckout = defineTool({
  ...c.completeCheckout,
  scopes: BRIDGE_SCOPES,
  name: "ucp_complete_checkout",
  title: "UCP: complete checkout",
  description: `UCP binding of complete_checkout. ${c.completeCheckout.description}`,
});
