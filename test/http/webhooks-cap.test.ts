/**
 * The 20-endpoint cap per store holds under concurrent creation: the count and the insert run in one transaction
 * under a per-store advisory lock (actors/webhook/index.ts `register`), not as a count in the gateway followed by
 * an insert in a fresh `webhook/<uuid>` actor, which let 30 concurrent creations make 28 endpoints (audit A3-4).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);

let srv: TestServer;
let token: string;

beforeAll(async () => {
  srv = await startServer();
  token = await login(srv);
});

afterAll(async () => {
  await srv?.stop();
});

const create = (n: number) =>
  srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url: `http://127.0.0.1:9/hooks/${n}`, events: ["order.created"] },
  });

test("30 concurrent creations on one store make exactly 20 endpoints; the other 10 are 409 conflict", async () => {
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => create(i)));
  const statuses = results.map((r) => r.status).sort();
  expect(statuses.filter((s) => s === 201)).toHaveLength(20);
  expect(statuses.filter((s) => s === 409)).toHaveLength(10);
  for (const r of results.filter((x) => x.status === 409)) {
    expect(r.body).toMatchObject({ success: false, code: "conflict", error: "A store may have at most 20 webhook endpoints." });
  }
  const [{ n }] = await srv.running.services.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM webhook_endpoints WHERE store_slug = 'demo-store' AND deleted_at IS NULL`;
  expect(n).toBe(20);
  const list = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { headers: { authorization: `Bearer ${token}` } });
  expect(list.status).toBe(200);
  expect(list.body.data).toHaveLength(20);
});

test("after one endpoint is deleted, exactly one more can be created", async () => {
  const list = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { headers: { authorization: `Bearer ${token}` } });
  const del = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${list.body.data[0].id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
  expect(del.status).toBe(200);
  const results = await Promise.all([create(100), create(101), create(102)]);
  expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
});
