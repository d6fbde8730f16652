/**
 * Audit W-7, the agent routes: a key an agent POST body does not have (a misspelling), at any level, is 400
 * validation_error naming it (`details.location` body, `details.field`, `details.allowed`), checked before anything
 * runs; the right spelling still works. The gateway's TypeBox normaliser dropped such keys before validation, so a
 * misspelt optional key was a silent 200 with other terms than the agent sent: a shipping estimate's `qty` quoted one
 * unit, a search's `sortBy` came back in relevance order, a wallet's `netwrok` was provisioned on the default network,
 * a coupon's `expectedRevision` applied it to whatever the cart had become; a cart line's `variantId` (for
 * `variant_id`) was answered as a line naming no variant.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { expectUnknownKey } from "../helpers/unknown-key.ts";

let srv: TestServer;
let key: TestKey;
const P = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants
const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants
let variant: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  [{ variant }] = await srv.db.sql<{ variant: string }[]>`SELECT variants->0->>'id' AS variant FROM products WHERE id = ${HEADPHONES}`;
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown, k: TestKey = key) => srv.json(`/api/v1/agent/${path}`, { method: "POST", headers: k.headers, body });

const cartCount = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;

describe("a misspelt key on an agent POST body: 400 naming it, the right spelling works", () => {
  test("POST /agent/cart with a line's variantId (for variant_id): 400 on items.0.variantId and no cart", async () => {
    const before = await cartCount();
    const r = await post("cart", { items: [{ product_id: HEADPHONES, quantity: 1, variantId: variant }] });
    expectUnknownKey(r, "items.0.variantId", ["product_id", "quantity", "variant_id"]);
    expect(await cartCount()).toBe(before);
    const ok = await post("cart", { items: [{ product_id: HEADPHONES, quantity: 1, variant_id: variant }] });
    expect(ok.status).toBe(201);
    expect(ok.body.data.items[0]).toMatchObject({ product_id: HEADPHONES, variant_id: variant });
  });

  test("POST /agent/cart with a top-level key beside items: 400 naming it", async () => {
    expectUnknownKey(await post("cart", { items: [{ product_id: P, quantity: 1 }], currency: "USD" }), "currency", ["items"]);
  });

  test("POST /agent/apply-coupon and /agent/cart/apply-coupon with expectedRevision (for expected_revision): 400 naming it", async () => {
    const cart = await post("cart", { items: [{ product_id: P, quantity: 1 }] });
    expect(cart.status).toBe(201);
    for (const path of ["apply-coupon", "cart/apply-coupon"]) {
      const r = await post(path, { cartId: cart.body.data.id, code: "WELCOME10", expectedRevision: 1 });
      expectUnknownKey(r, "expectedRevision", ["cartId", "code", "expected_revision"]);
    }
    const ok = await post("apply-coupon", { cartId: cart.body.data.id, code: "NO-SUCH-CODE", expected_revision: cart.body.data.revision });
    expect(ok.status).toBe(200);
  });

  test("POST /agent/shipping-estimate with qty (for quantity): 400 naming it (it quoted one unit)", async () => {
    const allowed = ["productId", "postalCode", "countryCode", "quantity", "variantId"];
    expectUnknownKey(await post("shipping-estimate", { productId: P, postalCode: "94107", countryCode: "US", qty: 5 }), "qty", allowed);
    const ok = await post("shipping-estimate", { productId: P, postalCode: "94107", countryCode: "US", quantity: 5 });
    expect(ok.status).toBe(200);
  });

  test("POST /agent/negotiate with product_id beside productId: 400 naming it", async () => {
    const r = await post("negotiate", { productId: P, product_id: P, merchantSlug: "demo-store", bidPrice: 1, currency: "USD" });
    expectUnknownKey(r, "product_id", ["productId", "merchantSlug", "bidPrice", "currency"]);
    const ok = await post("negotiate", { productId: P, merchantSlug: "demo-store", bidPrice: 1, currency: "USD" });
    expect(ok.status).toBe(200);
  });

  test("POST /agent/recommendations with limt (for limit): 400 naming it (it answered the default 5)", async () => {
    expectUnknownKey(await post("recommendations", { productId: P, limt: 2 }), "limt", ["productId", "limit"]);
    const ok = await post("recommendations", { productId: P, limit: 2 });
    expect(ok.status).toBe(200);
    expect(ok.body.data.limit).toBe(2);
  });

  test("POST /agent/compare with MCP's product_ids beside productIds: 400 naming it", async () => {
    expectUnknownKey(await post("compare", { productIds: [P], product_ids: [P] }), "product_ids", ["productIds"]);
    expect((await post("compare", { productIds: [P] })).status).toBe(200);
  });

  test("POST /agent/search with sortBy (for sort): 400 naming it (it came back in relevance order); deduplicate is still taken", async () => {
    const allowed = ["query", "filters", "sort", "page", "limit", "deduplicate"];
    expectUnknownKey(await post("search", { query: "mug", sortBy: "price_asc" }), "sortBy", allowed);
    const ok = await post("search", { query: "mug", sort: "price_asc", deduplicate: true });
    expect(ok.status).toBe(200);
    // any other value of deduplicate is ignored, never a 400 (the spec reads it from the raw body)
    expect((await post("search", { query: "mug", deduplicate: "yes" })).status).toBe(200);
  });

  test("POST /agent/search: a filter at the top level keeps its own answer (where it goes), an unknown filter its own", async () => {
    const top = await post("search", { query: "mug", max_price: 10 });
    expect(top.status).toBe(400);
    expect(top.body.details).toEqual({ location: "body", field: "max_price", expected: "filters.maxPrice" });
    const inner = await post("search", { query: "mug", filters: { max_price: 10 } });
    expect(inner.status).toBe(400);
    expect(inner.body.error).toContain("unknown filter");
  });

  test("POST /agent/orders/{id}/cancel with reasn (for reason): 400 naming it; the right spelling reaches the order (404)", async () => {
    const id = crypto.randomUUID();
    expectUnknownKey(await post(`orders/${id}/cancel`, { reasn: "changed my mind" }), "reasn", ["reason"]);
    const r = await post(`orders/${id}/cancel`, { reason: "changed my mind" });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("ORDER_NOT_FOUND");
  });

  test("POST /agent/wallet/provision with netwrok: 400 naming it and no wallet (it was made on the default network)", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    expectUnknownKey(await post("wallet/provision", { netwrok: "eip155:8453" }, k), "netwrok", ["network"]);
    expect((await srv.json("/api/v1/agent/wallet", { headers: k.headers })).status).toBe(404);
    const ok = await post("wallet/provision", { network: "eip155:8453" }, k);
    expect(ok.status).toBe(201);
    expect(ok.body.data.network).toBe("eip155:8453");
  });

  test("an unknown key is refused only after the key is checked: without a key it is 401", async () => {
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", body: { items: [{ product_id: HEADPHONES, quantity: 1, variantId: variant }] } });
    expect(r.status).toBe(401);
  });
});
