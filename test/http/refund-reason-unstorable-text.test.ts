/**
 * Audit A: a refund reason with a lone UTF-16 surrogate (valid JSON: "x\ud800") is accepted 201 and stored altered
 * ("x\ufffd"), while the same request with an Idempotency-Key is a bare 400 (the jsonb copy of the request refuses it);
 * a NUL byte is a bare 400 without details.field. Catalog ingestion refuses both naming the field
 * (docs/catalog.md, `unstorableField`); the refund route should too, and never store text other than what was sent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
let orderId: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  orderId = await placeOrder(srv, key, SHAMPOO);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const refund = (reason: string, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: { ...key.headers, ...headers }, body: { amount: 1, reason } });

describe("refund reasons Postgres cannot store are refused naming the field", () => {
  test("a lone surrogate in the reason is 400 on reason, and nothing is stored", async () => {
    const r = await refund("broken \ud800 text");
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details?.field).toBe("reason");
    const rows = await srv.db.sql`SELECT reason FROM order_refunds WHERE order_id = ${orderId}`;
    expect(rows.length).toBe(0);
  });

  test("the same reason with an Idempotency-Key gets the same answer", async () => {
    const r = await refund("broken \ud800 text", { "idempotency-key": crypto.randomUUID() });
    expect(r.status).toBe(400);
    expect(r.body.details?.field).toBe("reason");
  });

  test("a NUL byte in the reason is 400 on reason", async () => {
    const r = await refund("nul \u0000 byte");
    expect(r.status).toBe(400);
    expect(r.body.details?.field).toBe("reason");
  });

  test("a cancel whose reason holds a NUL byte is 400 on reason before anything else is decided", async () => {
    const r = await srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: { reason: "nul \u0000 byte" } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details?.field).toBe("reason");
  });
});
