/**
 * Review R-8 (session 17): the merchant's twin of audit A-4 (0a13d93): an order status change's note Postgres cannot
 * store as sent (a lone UTF-16 surrogate, a NUL) was a bare 400 validation_error without details.field; now 400
 * naming note (gateway/rest/merchant-orders.ts).
 */import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
let token: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("an order status note Postgres cannot store", () => {
  test("a lone surrogate or a NUL in a status change's note is 400 naming note, not a bare validation_error", async () => {
    for (const note of ["x \ud800 y", "x \u0000 y"]) {
      const orderId = await placeOrder(srv, key, SHAMPOO);
      const r = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: { status: "fulfilled", note },
      });
      expect(r.status).toBe(400);
      expect(r.body.details?.field).toBe("note");
    }
  });
});

describe("an order status change with a key the route does not have", () => {
  test("is 400 naming it, and the order keeps its status (audit W-7's class)", async () => {
    const orderId = await placeOrder(srv, key, SHAMPOO);
    const r = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: { status: "fulfilled", nota: "packed" },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { field: "nota" } });
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(o!.status).toBe("paid");
  });
});
