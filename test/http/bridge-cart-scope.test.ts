/**
 * Creating a checkout from items creates a cart, so it needs the `cart` scope (spec: scope `cart` covers cart
 * creation) whatever the path: REST ACP/UCP creates, an ACP update with new items, POST /agent/checkout with another
 * protocol's body, and MCP ucp_create_checkout with line_items (audit B F7). A key of `search` + `checkout` is 403
 * `forbidden` naming the scope, and no cart is made.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store

let srv: TestServer;
let noCart: TestKey;
let full: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const admin = await login(srv);
  noCart = await createKey(srv, { scopes: ["search", "checkout"], tier: "ENTERPRISE", token: admin });
  full = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: admin });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown, k: TestKey) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: k.headers, body });
/** Carts the key owns (cart actors' stored state names the owning key). */
const cartsOf = async (k: TestKey) => (await srv.db.sql<{ n: string }[]>`SELECT count(*)::text AS n FROM actor_state WHERE kind = 'cart' AND strpos(state::text, ${k.id}) > 0`)[0]!.n;

describe("a key without the cart scope cannot create carts through the protocol bridges", () => {
  test("REST ACP and UCP creates (and /agent/checkout with their bodies) are 403 forbidden naming the cart scope", async () => {
    const acp = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] }, noCart);
    expect(acp.status).toBe(403);
    expect(acp.body).toMatchObject({ type: "invalid_request", code: "forbidden", details: { scope: "cart" } });
    const ucp = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }] }, noCart);
    expect(ucp.status).toBe(403);
    expect(ucp.body.messages[0]).toMatchObject({ type: "error", code: "forbidden", details: { scope: "cart" } });
    const viaCheckout = await post("/checkout", { line_items: [{ item: { id: BOARD }, quantity: 1 }] }, noCart);
    expect(viaCheckout.status).toBe(403);
    expect(await cartsOf(noCart)).toBe("0");
    // the same create with a key that has the cart scope makes its cart (and the count above would see it)
    expect((await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }] }, full)).status).toBe(201);
    expect(await cartsOf(full)).toBe("1");
  });

  test("MCP ucp_create_checkout with line_items is forbidden (cart scope) and creates no cart", async () => {
    const agent = await connect(srv, { headers: noCart.headers, elicit: accept });
    try {
      const r = await agent.call("ucp_create_checkout", { line_items: [{ product_id: BOARD, quantity: 1 }] });
      expect(errorOf(r)).toMatchObject({ code: "forbidden", details: { scope: "cart" } });
      expect(agent.elicitations).toHaveLength(0); // refused before the human is asked
      expect(await cartsOf(noCart)).toBe("0");
    } finally {
      await agent.close();
    }
  });
});
