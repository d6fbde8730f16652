/**
 * Carts: POST /agent/cart, GET /agent/cart/{id}, POST /agent/apply-coupon (and /agent/cart/apply-coupon, the same
 * handler). Each route is one `cart/<id>` message; the actor checks ownership (another key's cart is 404).
 */
import { Elysia, t } from "elysia";
import { cartActor } from "../../actors/cart/index.ts";
import { MAX_CART_LINES, MAX_LINE_QUANTITY } from "../../actors/cart/messages.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";

const CartItem = t.Object({
  product_id: t.String({ format: "uuid" }),
  quantity: t.Integer({ minimum: 1, maximum: MAX_LINE_QUANTITY }),
  variant_id: t.Optional(t.String({ format: "uuid" })),
});

// The bodies' schemas, each also the route's `strictJsonBody`: a misspelt key is 400 naming it, not dropped (audit W-7):
// `variantId` for `variant_id` bought the default variant, a misspelt `expected_revision` applied the coupon to
// whatever the cart had become.
const CreateCart = t.Object({ items: t.Array(CartItem, { minItems: 1, maxItems: MAX_CART_LINES }) });

const ApplyCoupon = t.Object({
  cartId: t.String({ format: "uuid" }),
  code: t.String({ minLength: 1, maxLength: 64 }),
  expected_revision: t.Optional(t.Integer({ minimum: 1, description: "The cart revision you read; a newer cart answers 409 CART_NOT_MUTABLE." })),
});

export function cartRoutes(svc: Services) {
  const applyCoupon = async ({ body, agent }: { body: typeof ApplyCoupon.static; agent: { keyId: string } }) => {
    const r = await svc.actors.ask(cartActor, body.cartId.toLowerCase(), "applyCoupon", {
      keyId: agent.keyId,
      code: body.code,
      ...(body.expected_revision === undefined ? {} : { expectedRevision: body.expected_revision }),
    });
    return ok(r);
  };
  const couponDoc = {
    ...strictJsonBody(ApplyCoupon),
    response: errorResponses(400, 401, 403, 404, 409),
    detail: { tags: ["cart"], summary: "Apply a merchant coupon (200 applied or rejected; 409 when the cart is not open)", security: [{ agentApiKey: [] }] },
  };
  return new Elysia({ name: "cart-routes" })
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/cart",
      async ({ body, agent, set }) => {
        const id = crypto.randomUUID();
        const view = await svc.actors.ask(cartActor, id, "create", {
          keyId: agent.keyId,
          items: body.items.map((i) => ({ productId: i.product_id, quantity: i.quantity, ...(i.variant_id ? { variantId: i.variant_id } : {}) })),
        });
        set.status = 201;
        return ok(view);
      },
      {
        ...strictJsonBody(CreateCart),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["cart"], summary: "Create a cart (one currency per cart)", security: [{ agentApiKey: [] }] },
      },
    )
    .get("/api/v1/agent/cart/:id", async ({ params, agent }) => ok(await svc.actors.ask(cartActor, params.id.toLowerCase(), "get", { keyId: agent.keyId })), {
      params: t.Object({ id: t.String({ format: "uuid" }) }),
      response: errorResponses(400, 401, 403, 404),
      detail: { tags: ["cart"], summary: "Read your cart with live totals", security: [{ agentApiKey: [] }] },
    })
    .post("/api/v1/agent/apply-coupon", applyCoupon, couponDoc)
    .post("/api/v1/agent/cart/apply-coupon", applyCoupon, couponDoc);
}
