/**
 * POST /api/v1/merchant/stores/{slug}/customer-tokens checks the caller's session before its body, as every other
 * merchant route does (audit M-7; gateway/plugins/auth.ts userAuth, at the transform stage). It checked the bearer token
 * in its handler, after Elysia had validated the body: a caller without a session was answered 400 with the route's
 * schema instead of 401, and an anonymous body up to the 8 MiB merchant limit was validated before it was refused.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const ROUTE = "/api/v1/merchant/stores/demo-store/customer-tokens";
let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (body: string, headers: Record<string, string> = {}) => srv.fetch(ROUTE, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

test("without a session a body that breaks the schema is 401 unauthorized, not 400, as on the catalog route", async () => {
  const r = await post(JSON.stringify({ customer_id: 5 }));
  expect(r.status).toBe(401);
  expect(((await r.json()) as { code: string }).code).toBe("unauthorized");
  const catalog = await srv.fetch("/api/v1/merchant/stores/demo-store/catalog", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ products: "nope" }) });
  expect(catalog.status).toBe(401);
});

test("without a session a customer id far past its 255-character bound is refused 401 before it is validated", async () => {
  const r = await post(JSON.stringify({ customer_id: "x".repeat(64 * 1024) }));
  expect(r.status).toBe(401);
  expect(((await r.json()) as { code: string }).code).toBe("unauthorized");
});

test("with the store's session a broken body is still 400 and a good one mints a token (201)", async () => {
  const auth = { authorization: `Bearer ${await login(srv)}` };
  const bad = await post(JSON.stringify({ customer_id: 5 }), auth);
  expect(bad.status).toBe(400);
  const good = await post(JSON.stringify({ customer_id: "cust-1" }), auth);
  expect(good.status).toBe(201);
  expect(((await good.json()) as { data: { token_type: string } }).data.token_type).toBe("customer-id+jwt");
});
