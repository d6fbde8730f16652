/**
 * Refund requests with an idempotency key (audit D4): POST /agent/orders/{orderId}/refund takes the
 * `Idempotency-Key` header or `idempotency_key`; a retry answers the first request instead of creating another.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked, demo-store
const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const refund = (orderId: string, body: unknown, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: { ...key.headers, ...headers }, body });
const rows = async (orderId: string) =>
  srv.db.sql<{ id: string; status: string; amount_minor: number }[]>`SELECT id, status, amount_minor FROM order_refunds WHERE order_id = ${orderId} ORDER BY created_at`;

describe("POST /agent/orders/{orderId}/refund with an idempotency key", () => {
  test("a retried partial refund with the same key and body answers the first request and creates no second one", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const k = crypto.randomUUID();
    const a = await refund(orderId, { amount: 700, reason: "dent", idempotency_key: k });
    const b = await refund(orderId, { amount: 700, reason: "dent", idempotency_key: k });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.data).toEqual(a.body.data);
    expect(await rows(orderId)).toHaveLength(1);
  });

  test("the Idempotency-Key header works the same, also for a full refund retried after nothing is left to refund", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const k = crypto.randomUUID();
    const a = await refund(orderId, {}, { "idempotency-key": k });
    expect(a.status).toBe(201);
    const b = await refund(orderId, {}, { "idempotency-key": k.toUpperCase() });
    expect(b.status).toBe(201);
    expect(b.body.data.refund_id).toBe(a.body.data.refund_id);
    expect(await rows(orderId)).toHaveLength(1);
    // Without the key the same call is a new request, refused as nothing is left.
    expect((await refund(orderId, {})).status).toBe(409);
  });

  test("the same key with another amount or reason is 409 IDEMPOTENCY_KEY_CONFLICT naming the first request", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const k = crypto.randomUUID();
    const a = await refund(orderId, { amount: 300, idempotency_key: k });
    expect(a.status).toBe(201);
    const other = await refund(orderId, { amount: 400, idempotency_key: k });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ success: false, code: "IDEMPOTENCY_KEY_CONFLICT", details: { refund_id: a.body.data.refund_id } });
    const reason = await refund(orderId, { amount: 300, reason: "changed", idempotency_key: k });
    expect(reason.status).toBe(409);
    expect(await rows(orderId)).toHaveLength(1);
  });

  test("a key that is not a UUID v4, or a header and body that differ, is 400 before anything is written", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const bad = await refund(orderId, { amount: 100, idempotency_key: "retry-1" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, details: { field: "idempotency_key" } });
    const differ = await refund(orderId, { amount: 100, idempotency_key: crypto.randomUUID() }, { "idempotency-key": crypto.randomUUID() });
    expect(differ.status).toBe(400);
    expect(await rows(orderId)).toHaveLength(0);
  });

  test("a header and a body field that differ only in letter case are one key: the request is made once, not refused", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const k = crypto.randomUUID();
    const a = await refund(orderId, { amount: 200, idempotency_key: k }, { "idempotency-key": k.toUpperCase() });
    expect(a.status).toBe(201);
    const b = await refund(orderId, { amount: 200, idempotency_key: k.toUpperCase() }, { "idempotency-key": k });
    expect(b.status).toBe(201);
    expect(b.body.data.refund_id).toBe(a.body.data.refund_id);
    expect(await rows(orderId)).toHaveLength(1);
  });

  test("keys are per order: one key on two orders makes two requests", async () => {
    const k = crypto.randomUUID();
    const o1 = await placeOrder(srv, key, BOARD, "tok_approve");
    const o2 = await placeOrder(srv, key, BOARD, "tok_approve");
    expect((await refund(o1, { amount: 100, idempotency_key: k })).status).toBe(201);
    expect((await refund(o2, { amount: 100, idempotency_key: k })).status).toBe(201);
    expect(await rows(o1)).toHaveLength(1);
    expect(await rows(o2)).toHaveLength(1);
  });
});
