/**
 * MCP get_checkout_status of a session that is not the caller's (another key's, or none at all) answers the tool's
 * own refusal, as complete_checkout and cancel_checkout do: CHECKOUT_SESSION_NOT_FOUND naming the session asked about.
 * It answered that code with the cart's message ("No cart with that id.") and `details.cart_id` (the cart's refusal
 * under a translated code; session 20, helper B).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO_PRODUCT, errorOf, type Connected } from "./helpers.ts";

let srv: TestServer;
let owner: TestKey;
let other: Connected;
let sessionId: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  owner = await createKey(srv, { scopes: ALL_SCOPES });
  const stranger = await createKey(srv, { scopes: ALL_SCOPES });
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: owner.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
  const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: owner.headers, body: { cartId: cart.body.data.id } });
  sessionId = pv.body.data.checkout_session_id;
  other = await connect(srv, { headers: stranger.headers });
}, 120_000);
afterAll(async () => {
  await other?.close();
  await srv?.stop();
});

test("another key's session and a session that never existed are refused as cancel_checkout refuses them, naming the session and not its cart", async () => {
  const unknown = `cs_${crypto.randomUUID().replace(/-/g, "")}_1`;
  for (const id of [sessionId, unknown]) {
    const status = errorOf(await other.call("get_checkout_status", { checkout_session_id: id }));
    const cancel = errorOf(await other.call("cancel_checkout", { checkout_session_id: id }));
    expect(status.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    expect(status.message).toBe(cancel.message);
    expect(status.details).toEqual({ checkout_session_id: id });
  }
});
