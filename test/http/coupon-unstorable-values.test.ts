/**
 * Audit W-5: values of a coupon that Postgres cannot store are refused by the route naming the field, like every
 * other merchant value (docs/catalog.md), instead of reaching the database and coming back as the field-less "A
 * value in the request is not acceptable": a usageLimit above the integer column (2^31 - 1), an expiresAt with an
 * expanded year (+010000), and a coupon code with a NUL byte in the DELETE path (an unknown code: 404, or 400 naming it).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { couponFromInput } from "../../actors/store/settings.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
let srv: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const coupon = (over: Record<string, unknown>) =>
  srv.json(`/api/v1/merchant/stores/${SLUG}/coupons`, { method: "POST", headers: owner, body: { code: "W5TEST", kind: "fixed", value: 5, ...over } });

test("usageLimit above 2^31 - 1: 400 validation_error on usageLimit, no coupon", async () => {
  const r = await coupon({ usageLimit: 3_000_000_000 });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "usageLimit" } });
  const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM coupons WHERE store_slug = ${SLUG} AND code = 'W5TEST'`;
  expect(n!.n).toBe(0);
});

test("expiresAt with an expanded year: 400 validation_error on expiresAt", async () => {
  const r = await coupon({ expiresAt: "+010000-01-01T00:00:00Z" });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "expiresAt" } });
});

test("DELETE /coupons/{code} with a NUL byte: 404 not_found or 400 naming code", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/coupons/a%00`, { method: "DELETE", headers: owner });
  if (r.status === 404) expect(r.body).toMatchObject({ success: false, code: "not_found" });
  else {
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "code" } });
  }
});

test("usageLimit 2^31 - 1 is stored; a negative-year or past-9999-in-UTC expiresAt is 400 on expiresAt too", async () => {
  const okLimit = await coupon({ code: "W5MAX", usageLimit: 2_147_483_647 });
  expect(okLimit.status).toBe(201);
  expect(okLimit.body.data.usageLimit).toBe(2_147_483_647);
  for (const expiresAt of ["-000001-01-01T00:00:00Z", "9999-12-31T23:30:00-01:00"]) {
    const r = await coupon({ code: "W5YEAR", expiresAt });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "expiresAt" } });
  }
  const fine = await coupon({ code: "W5YEAR", expiresAt: "9999-12-31T23:30:00+01:00" });
  expect(fine.status).toBe(201);
});

test("DELETE /coupons/{code} with a NUL byte: 400 naming code; an unknown plain code stays 404", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/coupons/a%00`, { method: "DELETE", headers: owner });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "code" } });
  const unknown = await srv.json(`/api/v1/merchant/stores/${SLUG}/coupons/NOPE-NOT-HERE`, { method: "DELETE", headers: owner });
  expect(unknown.status).toBe(404);
});

test("couponFromInput (the dashboard form's check too) names usageLimit and expiresAt", () => {
  const base = { code: "FORM", kind: "fixed" as const, value: 5 };
  expect(() => couponFromInput({ ...base, usageLimit: 3_000_000_000 }, "USD")).toThrow(expect.objectContaining({ details: { field: "usageLimit" } }));
  expect(() => couponFromInput({ ...base, expiresAt: "+010000-01-01T00:00:00Z" }, "USD")).toThrow(expect.objectContaining({ details: { field: "expiresAt" } }));
});

test("the OpenAPI document states the bounds: usageLimit maximum, the code parameter's NUL pattern", async () => {
  const doc = await srv.json("/api/v1/openapi.json");
  const post = doc.body.paths["/api/v1/merchant/stores/{slug}/coupons"].post;
  const schema = post.requestBody.content["application/json"].schema;
  expect(schema.properties.usageLimit).toMatchObject({ minimum: 0, maximum: 2_147_483_647 });
  const del = doc.body.paths["/api/v1/merchant/stores/{slug}/coupons/{code}"].delete;
  expect(del.parameters.find((p: { name: string }) => p.name === "code").schema.pattern).toBe("^[^\\u0000]*$");
});

test("POST /orders: an order whose createdAt has an expanded negative year is rejected on its own on createdAt; the other is recorded", async () => {
  const base = { buyer: "bob@example.com", currency: "USD", status: "paid", items: [{ title: "Lamp", quantity: 1, unitPrice: 30 }] };
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, {
    method: "POST",
    headers: owner,
    body: { orders: [{ ...base, externalId: "W5-O-BAD", createdAt: "-000001-01-01T00:00:00Z" }, { ...base, externalId: "W5-O-GOOD" }] },
  });
  expect(r.status).toBe(201);
  expect(r.body.data.accepted).toBe(1);
  expect(r.body.data.rejected.map((x: { index: number; errors: { field: string }[] }) => [x.index, x.errors.map((e) => e.field)])).toEqual([[0, ["createdAt"]]]);
  const rows = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM merchant_order_refs WHERE external_id LIKE 'W5-O-%' ORDER BY 1`;
  expect(rows.map((x) => x.external_id)).toEqual(["W5-O-GOOD"]);
});
