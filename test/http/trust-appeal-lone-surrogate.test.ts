/**
 * Audit W-10: text with a lone UTF-16 surrogate (broken Unicode, valid JSON) in a trust appeal's reason or in the
 * operator's resolution note is 400 validation_error naming the field, as every other merchant text is
 * (`unstorableField`; review R-8 for the order status note). It was stored silently altered: the surrogate became
 * U+FFFD ("bad score \ufffd please"), so the appeal on record is not what the merchant sent.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let owner: Record<string, string>;
let operator: Record<string, string>;
let other: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
  operator = { authorization: `Bearer ${await login(srv)}` };
  other = { authorization: `Bearer ${await login(srv, merchantLogin("northwind-outfitters"))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

test("POST /trust/appeal with a lone surrogate in reason: 400 on reason, no appeal", async () => {
  const r = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: owner, body: { storeSlug: "greenleaf-living", reason: "bad score \ud800 please review" } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "reason" } });
  const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM trust_appeals WHERE store_slug = 'greenleaf-living'`;
  expect(n!.n).toBe(0);
});

test("resolving an appeal with a lone surrogate in note: 400 on note, the appeal still open", async () => {
  const a = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: other, body: { storeSlug: "northwind-outfitters", reason: "bad score please review" } });
  expect(a.status).toBe(201);
  const r = await srv.json(`/api/v1/admin/trust/appeals/${a.body.data.id}/resolve`, { method: "POST", headers: operator, body: { decision: "rejected", note: "no \udc00" } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "note" } });
  const [row] = await srv.db.sql<{ status: string }[]>`SELECT status FROM trust_appeals WHERE id = ${a.body.data.id}`;
  expect(row!.status).toBe("open");
});
