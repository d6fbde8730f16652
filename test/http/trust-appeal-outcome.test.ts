/**
 * Helper D (session 20): a merchant files a trust appeal (POST /api/v1/trust/appeal, 201 with its id and a review due
 * 72 h later) and an operator decides it with a note, but the merchant had no way to learn the outcome: the appeal
 * list and the decision were operator-only, and a second appeal only said 409 while the first was open.
 * GET /api/v1/trust/appeals?storeSlug= gives the store's owner (or an operator) the store's appeals with their status,
 * decision and note; another merchant's store is 403 as for filing (docs/decisions.md), an unknown one 404.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
let srv: TestServer;
let owner: string;
let admin: string;
const auth = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  srv = await startServer({ config: { RATE_LIMITS_ENABLED: false } });
  owner = await login(srv, merchantLogin(SLUG));
  admin = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

test("a merchant reads the decision and note of its store's trust appeal", async () => {
  const filed = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: SLUG, reason: "Our disputes were all won by us." } });
  expect(filed.status).toBe(201);
  const open = await srv.json(`/api/v1/trust/appeals?storeSlug=${SLUG}`, { headers: auth(owner) });
  expect(open.status).toBe(200);
  expect(open.body.data).toEqual([filed.body.data]);

  const resolved = await srv.json(`/api/v1/admin/trust/appeals/${filed.body.data.id}/resolve`, {
    method: "POST",
    headers: auth(admin),
    body: { decision: "rejected", note: "The disputes stand: see the processor's records." },
  });
  expect(resolved.status).toBe(200);
  const after = await srv.json(`/api/v1/trust/appeals?storeSlug=${SLUG}`, { headers: auth(owner) });
  expect(after.status).toBe(200);
  expect(after.body.data).toHaveLength(1);
  expect(after.body.data[0]).toMatchObject({
    id: filed.body.data.id,
    status: "resolved",
    decision: "rejected",
    decisionNote: "The disputes stand: see the processor's records.",
  });
  expect(after.body.data[0].resolvedAt).not.toBeNull();
});

test("another merchant's store is 403, an unknown store 404, a bad slug 400 and no token 401", async () => {
  const other = await login(srv, merchantLogin("northwind-outfitters"));
  const foreign = await srv.json(`/api/v1/trust/appeals?storeSlug=${SLUG}`, { headers: auth(other) });
  expect(foreign.status).toBe(403);
  expect(foreign.body).toMatchObject({ success: false, code: "forbidden" });
  const unknown = await srv.json("/api/v1/trust/appeals?storeSlug=no-such-store", { headers: auth(owner) });
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ success: false, code: "store_not_found" });
  const bad = await srv.json("/api/v1/trust/appeals?storeSlug=%00", { headers: auth(owner) });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ success: false, code: "validation_error" });
  const missing = await srv.json("/api/v1/trust/appeals", { headers: auth(owner) });
  expect(missing.status).toBe(400);
  const anon = await srv.json(`/api/v1/trust/appeals?storeSlug=${SLUG}`);
  expect(anon.status).toBe(401);
  // an operator reads any store's
  const op = await srv.json(`/api/v1/trust/appeals?storeSlug=${SLUG}`, { headers: auth(admin) });
  expect(op.status).toBe(200);
  expect(op.body.data.length).toBeGreaterThan(0);
});
