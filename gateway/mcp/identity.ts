/**
 * End-customer identity on the MCP customer endpoint (`/{slug}/mcp/customer`).
 *
 * Design (small on purpose): the merchant vouches for its customer with an identity token, an EdDSA JWT signed by
 * the platform's signing keys on the merchant's behalf (`POST /api/v1/merchant/stores/{slug}/customer-tokens`,
 * merchant owner or operator only), `typ: customer-id+jwt`, audience `mcp-customer`, claims `sub` (the merchant's
 * customer id) and `store` (slug). The agent sends it as header `X-Customer-Identity`.
 *
 * - bad signature, malformed, expired, wrong audience/typ → IDENTITY_TOKEN_REJECTED with details.reason;
 * - valid but issued for another store → IDENTITY_TOKEN_STORE_MISMATCH.
 * The customer's orders are the store's orders whose buyer_ref is `customerBuyerRef(slug, sub)`: the digest a
 * recorded order with `buyer: <customer id>` carries, and the one an agent's checkout for this customer writes (on
 * the main or checkout endpoint, with the header). Customer ids compare case-insensitively (actors/store/buyer-ref.ts).
 */
import { Elysia, t } from "elysia";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { buyerKey, buyerRefOf } from "../../actors/store/buyer-ref.ts";
import { assertStoreWriter } from "../../actors/store/reads.ts";
import { ok } from "../envelope.ts";
import { tokenService } from "../identity.ts";
import { userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import type { Customer } from "./registry.ts";
import { strictJsonBody } from "../rest/strict-body.ts";

export const CUSTOMER_AUDIENCE = "mcp-customer";
export const CUSTOMER_TOKEN_TYP = "customer-id+jwt";
export const CUSTOMER_HEADER = "x-customer-identity";
export const DEFAULT_CUSTOMER_TOKEN_TTL = 3600;

/** The orders table's buyer_ref for a merchant customer id (hashed: raw ids never stored; actors/store/buyer-ref.ts). */
export function customerBuyerRef(slug: string, customerId: string): string {
  return buyerRefOf(slug, customerId);
}

/**
 * The customer's rate-limit identity (`customer:<slug>:<id>:mcp-customer`): the id folded as its orders are
 * (buyerKey), so ids that differ only in letter case, one customer's orders, share one bucket too.
 */
export function customerLimitId(slug: string, customer: Customer): string {
  return `${slug}:${buyerKey(customer.id)}`;
}

export async function issueCustomerToken(svc: Services, slug: string, customerId: string, ttlSeconds = DEFAULT_CUSTOMER_TOKEN_TTL): Promise<string> {
  const tokens = await tokenService(svc);
  return tokens.issueToken({ sub: customerId, aud: CUSTOMER_AUDIENCE, ttlSeconds, typ: CUSTOMER_TOKEN_TYP, extra: { store: slug } });
}

export async function verifyCustomerToken(svc: Services, token: string, slug: string): Promise<Customer> {
  const tokens = await tokenService(svc);
  let verified;
  try {
    verified = await tokens.verifyToken(token, { audience: CUSTOMER_AUDIENCE, typ: CUSTOMER_TOKEN_TYP });
  } catch (err) {
    const reason = err instanceof ActorError && err.code === "token_expired" ? "expired" : "invalid_signature_or_claims";
    throw fail("IDENTITY_TOKEN_REJECTED", "The customer identity token failed verification; ask the merchant for a fresh one.", { reason });
  }
  const store = verified.claims.store;
  if (typeof store !== "string") throw fail("IDENTITY_TOKEN_REJECTED", "The identity token names no store.", { reason: "missing_store_claim" });
  if (store !== slug) {
    throw fail("IDENTITY_TOKEN_STORE_MISMATCH", `The identity token was issued for store ${store}, not ${slug}.`, { tokenStore: store, endpointStore: slug });
  }
  return { id: verified.sub, buyerRef: customerBuyerRef(slug, verified.sub) };
}

/** The route's body, also its strict check (`strictJsonBody`): a misspelt `ttl` is 400 naming it, not a token of the default hour (audit W-7). */
const CustomerTokenBody = t.Object({
  customer_id: t.String({ minLength: 1, maxLength: 255, description: "The merchant's own customer id." }),
  ttl_seconds: t.Optional(t.Integer({ minimum: 60, maximum: 86_400 })),
});

/**
 * Merchant route that mints identity tokens for its customers. The session is checked by `userAuth` at the transform
 * stage, before the body is validated, as on every other merchant route (audit M-7: checked in the handler, a caller
 * without a session was answered 400 with the route's schema, and its multi-megabyte body validated, before the 401).
 */
export function customerTokenRoutes(svc: Services) {
  return new Elysia({ name: "mcp-customer-tokens" })
    .use(userAuth(svc))
    .post(
      "/api/v1/merchant/stores/:slug/customer-tokens",
      async ({ params, body, user, set }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const ttl = body.ttl_seconds ?? DEFAULT_CUSTOMER_TOKEN_TTL;
        const token = await issueCustomerToken(svc, params.slug, body.customer_id, ttl);
        set.status = 201;
        return ok({ token, token_type: CUSTOMER_TOKEN_TYP, expires_in: ttl, header: "X-Customer-Identity" });
      },
      {
        ...strictJsonBody(CustomerTokenBody),
        detail: { tags: ["merchant"], summary: "Mint an MCP customer identity token (X-Customer-Identity) for one of the store's customers" },
      },
    );
}
