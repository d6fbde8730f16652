/**
 * Store settings over REST (gateway/rest/merchant-settings.ts): MCP tools, payment rails, coupons.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_TOOLS } from "../../gateway/mcp/tools/index.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const base = `/api/v1/merchant/stores/${STORE}`;

let srv: TestServer;
let owner: Record<string, string>;
let stranger: Record<string, string>;
let operator: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(STORE))}` };
  stranger = { authorization: `Bearer ${await login(srv, merchantLogin("maple-pine-home"))}` };
  operator = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) => srv.json(`${base}${path}`, { method, headers, body });
const storeRow = async () =>
  (await srv.db.sql<{ tools: string[] | null; methods: string[] }[]>`SELECT enabled_mcp_tools AS tools, payment_methods AS methods FROM stores WHERE slug = ${STORE}`)[0];

describe("PUT /merchant/stores/{slug}/mcp-tools", () => {
  test("the owner chooses registry tools: 200 with the sorted list, stored; null serves every tool again", async () => {
    const names = [ALL_TOOLS[1].name, ALL_TOOLS[0].name];
    const r = await call("PUT", "/mcp-tools", owner, { enabled: names });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { enabled: [...names].sort() } });
    expect((await storeRow()).tools).toEqual([...names].sort());
    const all = await call("PUT", "/mcp-tools", owner, { enabled: null });
    expect(all.status).toBe(200);
    expect(all.body.data.enabled).toBeNull();
    expect((await storeRow()).tools).toBeNull();
  });

  test("an unknown tool name is 400 validation_error naming it, and nothing changes", async () => {
    const r = await call("PUT", "/mcp-tools", owner, { enabled: [ALL_TOOLS[0].name, "drop_database"] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "enabled", unknown: ["drop_database"] } });
    expect((await storeRow()).tools).toBeNull();
  });

  test("another merchant gets 404 store_not_found; no token is 401; an operator may write", async () => {
    const r = await call("PUT", "/mcp-tools", stranger, { enabled: [] });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
    const anon = await call("PUT", "/mcp-tools", {}, { enabled: [] });
    expect(anon.status).toBe(401);
    const op = await call("PUT", "/mcp-tools", operator, { enabled: [] });
    expect(op.status).toBe(200);
    expect(op.body.data.enabled).toEqual([]);
    await call("PUT", "/mcp-tools", owner, { enabled: null });
  });
});

describe("PUT /merchant/stores/{slug}/payment-methods", () => {
  test("the owner sets card and x402: 200 in a fixed order, stored", async () => {
    const r = await call("PUT", "/payment-methods", owner, { methods: ["x402", "card"] });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { methods: ["card", "x402"] } });
    expect((await storeRow()).methods).toEqual(["card", "x402"]);
  });

  test("adding MOCK to a store that never had it is 400 validation_error; an unknown rail is 400", async () => {
    const mock = await call("PUT", "/payment-methods", owner, { methods: ["card", "MOCK"] });
    expect(mock.status).toBe(400);
    expect(mock.body).toMatchObject({ success: false, code: "validation_error", details: { field: "methods" } });
    const paypal = await call("PUT", "/payment-methods", owner, { methods: ["paypal"] });
    expect(paypal.status).toBe(400);
    expect(paypal.body.code).toBe("validation_error");
    expect((await storeRow()).methods).toEqual(["card", "x402"]);
  });

  test("another merchant gets 404 store_not_found", async () => {
    const r = await call("PUT", "/payment-methods", stranger, { methods: [] });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("store_not_found");
  });
});

describe("/merchant/stores/{slug}/coupons", () => {
  test("creating a percent coupon is 201, replacing it 200; the code is stored upper case and listed", async () => {
    const created = await call("POST", "/coupons", owner, { code: "spring10", kind: "percent", value: 10, minSpend: 25.5, usageLimit: 100 });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ code: "SPRING10", kind: "percent", value: 10, valueMinor: null, minSpend: 25.5, minSpendMinor: 2550, usageLimit: 100, usedCount: 0, active: true });
    const replaced = await call("POST", "/coupons", owner, { code: "SPRING10", kind: "percent", value: 15 });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ code: "SPRING10", value: 15, minSpend: 0, usageLimit: null });
    const list = await call("GET", "/coupons", owner);
    expect(list.status).toBe(200);
    expect(list.body.data.filter((c: { code: string }) => c.code === "SPRING10")).toHaveLength(1);
  });

  test("a fixed coupon takes a decimal amount in the store's currency", async () => {
    const r = await call("POST", "/coupons", owner, { code: "FIVE_OFF", kind: "fixed", value: 5, expiresAt: "2099-01-01T00:00:00Z" });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ code: "FIVE_OFF", kind: "fixed", value: 5, valueMinor: 500, expiresAt: "2099-01-01T00:00:00.000Z" });
    expect(r.body.data.currency).toMatch(/^[A-Z]{3}$/);
  });

  test("a percent above 100, a bad code or a missing kind is 400 validation_error", async () => {
    for (const body of [
      { code: "TOO_MUCH", kind: "percent", value: 150 },
      { code: "no spaces", kind: "percent", value: 5 },
      { code: "NOKIND", value: 5 },
    ]) {
      const r = await call("POST", "/coupons", owner, body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("validation_error");
    }
    const list = await call("GET", "/coupons", owner);
    expect(list.body.data.map((c: { code: string }) => c.code)).not.toContain("TOO_MUCH");
  });

  test("DELETE deactivates the coupon (it stays listed, inactive); an unknown code is 404 not_found", async () => {
    await call("POST", "/coupons", owner, { code: "GONE", kind: "percent", value: 5 });
    const r = await call("DELETE", "/coupons/gone", owner);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { code: "GONE", active: false } });
    const list = await call("GET", "/coupons", owner);
    expect(list.body.data.find((c: { code: string }) => c.code === "GONE")).toMatchObject({ active: false });
    const missing = await call("DELETE", "/coupons/NOPE", owner);
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("not_found");
  });

  test("another merchant gets 404 store_not_found on list, create and delete", async () => {
    for (const [method, path, body] of [
      ["GET", "/coupons", undefined],
      ["POST", "/coupons", { code: "STEAL", kind: "percent", value: 50 }],
      ["DELETE", "/coupons/SPRING10", undefined],
    ] as const) {
      const r = await call(method, path, stranger, body);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe("store_not_found");
    }
    const [c] = await srv.db.sql<{ active: boolean }[]>`SELECT active FROM coupons WHERE store_slug = ${STORE} AND code = 'SPRING10'`;
    expect(c.active).toBe(true);
  });
});
