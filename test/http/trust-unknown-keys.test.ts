/**
 * Audit W-7 (session 17), the trust routes: a key their body schemas do not have was dropped by the gateway's
 * normaliser: `recompte: true` on an appeal's resolution recomputed nothing, a misspelt `slg` on the operator's
 * recompute recomputed every store instead of one. Now 400 validation_error naming the key (strictBody).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let operator: Record<string, string>;
let merchant: Record<string, string>;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  operator = { authorization: `Bearer ${await login(srv)}` };
  merchant = { authorization: `Bearer ${await login(srv, merchantLogin("maple-pine-home"))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("an appeal, its resolution and a recompute with an unknown key are 400 naming it", async () => {
  const bad = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: merchant, body: { storeSlug: "maple-pine-home", reason: "our delivery data is wrong", evidence: "x" } });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ code: "validation_error", details: { field: "evidence" } });
  const appeal = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: merchant, body: { storeSlug: "maple-pine-home", reason: "our delivery data is wrong" } });
  expect(appeal.status).toBe(201);
  const resolve = await srv.json(`/api/v1/admin/trust/appeals/${appeal.body.data.id}/resolve`, { method: "POST", headers: operator, body: { decision: "rejected", note: "checked", recompte: true } });
  expect(resolve.status).toBe(400);
  expect(resolve.body).toMatchObject({ code: "validation_error", details: { field: "recompte" } });
  const recompute = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: operator, body: { slg: "maple-pine-home" } });
  expect(recompute.status).toBe(400);
  expect(recompute.body).toMatchObject({ code: "validation_error", details: { field: "slg" } });
}, 60_000);
