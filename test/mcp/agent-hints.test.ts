/**
 * Answers that tell an agent what to do instead (audit E, [MCP] LOW items): a credential of ours sent in the wrong
 * place, an argument spelled the UCP way, and the sandbox card tokens given in the answer itself rather than as a
 * pointer to a document the agent cannot fetch.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SANDBOX_TOKENS } from "../../actors/payments/card-sandbox.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO, DEMO_PRODUCT, errorOf, rpc, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

describe("a credential sent in the wrong place", () => {
  const call = (authorization: string) =>
    rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization });

  test("an agent key as a bearer token is 401 saying agent keys go in X-Agent-Api-Key", async () => {
    const r = await call(`Bearer ${key.key}`);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toContain("X-Agent-Api-Key");
    expect(r.body.error.data).toMatchObject({ code: "unauthorized", reason: "agent_key_as_bearer", header: "X-Agent-Api-Key" });
    expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // tools/list verifies the credential too, with the same answer
    const list = await rpc(srv, `/${DEMO}/mcp`, "tools/list", {}, { authorization: `Bearer ${key.key}` });
    expect(list.status).toBe(401);
    expect(list.body.error.data.reason).toBe("agent_key_as_bearer");
  });

  test("a login session JWT as an MCP access token is 401 saying to get one from /oauth/token", async () => {
    const session = await login(srv);
    const r = await call(`Bearer ${session}`);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toContain("not an MCP access token");
    expect(r.body.error.data).toMatchObject({ code: "unauthorized", reason: "session_jwt_as_access_token", token_endpoint: "/api/v1/oauth/token" });
  });

  test("any other bad bearer token is still plain invalid token", async () => {
    const r = await call("Bearer not-a-token");
    expect(r.status).toBe(401);
    expect(r.body.error.message).toBe("invalid token");
  });
});

describe("argument names", () => {
  test("ucp_create_cart with line_items names the unknown argument beside the missing items", async () => {
    const e = errorOf(await agent.call("ucp_create_cart", { line_items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    expect(e.code).toBe("MISSING_REQUIRED_ARGUMENT");
    expect(e.message).toContain("'items'");
    expect(e.message).toContain("'line_items'");
    expect(e.details).toEqual({ field: "items", unknown: ["line_items"], allowed: ["items"] });
  });

  test("a missing argument without an unknown one is answered as before", async () => {
    const e = errorOf(await agent.call("ucp_create_cart", {}));
    expect(e.code).toBe("MISSING_REQUIRED_ARGUMENT");
    expect(e.details).toEqual({ field: "items" });
  });
});

describe("get_payment_methods", () => {
  test("lists every sandbox card token with what complete_checkout answers for it", async () => {
    const c = await connect(srv, { path: "/northwind-outfitters/mcp", headers: key.headers });
    try {
      const out = structured(await c.call("get_payment_methods"));
      const card = out.methods.find((m: any) => m.id === "card");
      expect(card.description).not.toContain("docs/checkout.md");
      const tokens = card.test_tokens.map((t: any) => t.payment_method);
      expect(tokens.sort()).toEqual(Object.values(SANDBOX_TOKENS).filter((t) => t !== "MOCK").sort());
      for (const t of card.test_tokens) expect(t.result.length).toBeGreaterThan(10);
    } finally {
      await c.close();
    }
  });
});
