/**
 * `checkout.abandoned` of a multi-store session that expires with one leg paid (audit D7, repro R11): only the merchant
 * whose leg was not paid hears of it, with its own leg's total and only its own slug.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living
let offset = 0;
const clock = { now: () => Date.now() + offset };
const srv = useServer({ seed: true, boot: { clock } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

test("a two-store session expiring after one store was paid tells only the unpaid store, with its own total and slug", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "MOCK", "greenleaf-living": "tok_needs_approval" } },
  });
  expect(r.status).toBe(202);
  const orders = await srv.db.sql<{ store_slug: string; status: string; total_minor: number }[]>`
    SELECT store_slug, status, total_minor FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug`;
  expect(orders.map((o) => o.status)).toEqual(["paid", "pending"]);

  offset = 2 * 3600_000; // past the hour the buyer had to approve
  await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`;
  let ab: { store_slug: string; payload: Record<string, unknown> }[] = [];
  for (let i = 0; i < 50 && ab.length === 0; i++) {
    await Bun.sleep(100);
    ab = await srv.db.sql`SELECT store_slug, payload FROM webhook_events WHERE kind = 'checkout.abandoned' AND payload->>'cartId' = ${cartId}`;
  }
  await Bun.sleep(300); // a second row, if any, is written in the same transaction
  ab = await srv.db.sql`SELECT store_slug, payload FROM webhook_events WHERE kind = 'checkout.abandoned' AND payload->>'cartId' = ${cartId}`;
  expect(ab).toHaveLength(1);
  const green = orders.find((o) => o.store_slug === "greenleaf-living")!;
  expect(ab[0]!.store_slug).toBe("greenleaf-living");
  expect(ab[0]!.payload).toMatchObject({ merchantSlugs: ["greenleaf-living"], totalAmount: Number(green.total_minor) / 100, status: "EXPIRED" });
  const [paid] = await srv.db.sql`SELECT status FROM orders WHERE cart_id = ${cartId} AND store_slug = 'demo-store'`;
  expect(paid!.status).toBe("paid");
}, 60_000);
