/**
 * The spec's per-tool limits (Limits §2) bind an operation, whichever name it is called by (audit B F3): the UCP
 * aliases ucp_search_catalog, ucp_create_cart and ucp_complete_checkout spend the bucket of search_products,
 * create_cart and complete_checkout (the tool's rateBucket), with the same X-RateLimit-* headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, DEMO_PRODUCT, rpc } from "./helpers.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: true } });
}, 60_000);
afterAll(async () => srv?.stop());

const call = (name: string, args: unknown, headers: Record<string, string>) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name, arguments: args }, headers);

describe("UCP aliases and the per-tool limits", () => {
  test("ucp_search_catalog shares search_products' 20 a minute: the same limit header, and 10 + 10 calls exhaust it", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const base = await call("search_products", { query: "lamp" }, key.headers);
      const alias = await call("ucp_search_catalog", { query: "lamp" }, key.headers);
      if (i === 0) {
        expect(base.headers.get("x-ratelimit-limit")).toBe("20");
        expect(alias.headers.get("x-ratelimit-limit")).toBe("20");
        expect(alias.headers.get("x-ratelimit-remaining")).toBe("18");
      }
      statuses.push(base.status, alias.status);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (const name of ["ucp_search_catalog", "search_products"]) {
      const over = await call(name, { query: "lamp" }, key.headers);
      expect(over.status).toBe(429);
      expect(over.headers.get("x-ratelimit-limit")).toBe("20");
      expect(over.headers.get("x-ratelimit-remaining")).toBe("0");
      expect(over.body.error.data.code).toBe("rate_limit_exceeded");
    }
  }, 60_000);

  test("ucp_complete_checkout shares complete_checkout's 10 a minute", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const args = () => ({ checkout_session_id: `cs_${crypto.randomUUID()}`, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    const first = await call("ucp_complete_checkout", args(), key.headers);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-limit")).toBe("10");
    for (let i = 0; i < 9; i++) expect((await call("complete_checkout", args(), key.headers)).status).toBe(200);
    for (const name of ["ucp_complete_checkout", "complete_checkout"]) {
      const over = await call(name, args(), key.headers);
      expect(over.status).toBe(429);
      expect(over.headers.get("x-ratelimit-limit")).toBe("10");
    }
  }, 60_000);

  test("ucp_create_cart is held to create_cart's 20 a minute", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const r = await call("ucp_create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }, key.headers);
    expect(r.status).toBe(200);
    expect(r.headers.get("x-ratelimit-limit")).toBe("20");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("19");
  }, 60_000);
});
