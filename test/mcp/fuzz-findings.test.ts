/**
 * Regressions for what the MCP tool fuzz (fuzz-tools.test.ts) found and was fixed in gateway/mcp.
 *
 * F2-1: an own `__proto__` argument (JSON.parse keeps it as a plain key) of a write tool in a session was dropped by
 * the SDK's request schema before the tool's own schema saw it, so the call ran (the human asked, the wallet made)
 * where the same call without a session is INVALID_ARGUMENT "Unknown argument '__proto__'".
 * F2-4: issue_payment_mandate took a max_amount below the currency's smallest unit (1e-12 USD: a cap of 0 minor units,
 * the human asked to allow "1e-12 USD") and one above the most money can be (1e20 USD: a cap of 1e22 cents).
 * F2-5: negotiate_price with a bid above the most money can be asked the human, then failed in the database with the
 * generic "A value in the request is not acceptable" and no details.field.
 * F2-7: onx_create_return with a new idempotency_key and an amount above the order's total (2^53 cents) asked the
 * human to approve that refund, then was refused.
 */
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO, DEMO_PRODUCT, errorOf, rpc, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("a write tool's own __proto__ argument in a session is INVALID_ARGUMENT before the human is asked, as without a session", async () => {
  const args = JSON.parse('{"network":"eip155:84532","__proto__":{"x":1}}') as Record<string, unknown>;
  expect(Object.keys(args)).toEqual(["network", "__proto__"]);
  const sessionless = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "provision_wallet", arguments: args }, key.headers);
  expect(sessionless.body.result.structuredContent.error).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "__proto__" } });

  const before = agent.elicitations.length;
  const r = await agent.client.request({ method: "tools/call", params: { name: "provision_wallet", arguments: args } }, CallToolResultSchema);
  const e = errorOf(r);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.details.field).toBe("__proto__");
  expect(agent.elicitations.length).toBe(before);
  expect(errorOf(await agent.call("get_wallet")).code).toBe("PRECONDITION_NOT_MET"); // nothing was provisioned
}, 30_000);

test("a mandate's max_amount below the currency's smallest unit or above the most money can be is INVALID_ARGUMENT before the human is asked", async () => {
  for (const [max_amount, rule] of [
    [1e-12, "below the smallest unit of USD"],
    [1e20, "above the maximum amount"],
  ] as const) {
    const { result, asked } = await counted(agent, () => agent.call("issue_payment_mandate", { max_amount, currency: "USD" }));
    const e = errorOf(result);
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.details.field).toBe("max_amount");
    expect(e.message).toContain(rule);
    expect(asked).toBe(0);
  }
  // the smallest unit itself is a cap
  expect((await agent.call("issue_payment_mandate", { max_amount: 0.01, currency: "USD" })).isError).toBeFalsy();
}, 30_000);

test("a bid above the most money can be is INVALID_ARGUMENT on bid_price before the human is asked", async () => {
  const { result, asked } = await counted(agent, () => agent.call("negotiate_price", { product_id: DEMO_PRODUCT, bid_price: 1e20, currency: "USD" }));
  const e = errorOf(result);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.details.field).toBe("bid_price");
  expect(e.message).toContain("above the maximum amount");
  expect(asked).toBe(0);
}, 30_000);

test("a return with a new idempotency_key and an amount above the order's total is INVALID_ARGUMENT on amount before the human is asked", async () => {
  const order = await placeOrder(srv, key, DEMO_PRODUCT);
  const { result, asked } = await counted(agent, () => agent.call("onx_create_return", { order_id: order, amount: 2 ** 53, idempotency_key: crypto.randomUUID() }));
  const e = errorOf(result);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.details).toMatchObject({ field: "amount", total_minor: 9700 });
  expect(asked).toBe(0);
  // within the total, a new key still goes to the human and the store
  const ok = await counted(agent, () => agent.call("onx_create_return", { order_id: order, amount: 9700, idempotency_key: crypto.randomUUID() }));
  expect(ok.result.isError).toBeFalsy();
  expect(ok.asked).toBe(1);
}, 30_000);
