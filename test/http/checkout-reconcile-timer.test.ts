/**
 * The session timer of a payment whose outcome is open keeps looking until something is decided (audit D9, point 3):
 * a reconcile that fails before deciding anything schedules itself again with backoff instead of ending its turn with
 * no timer, which left the session SETTLEMENT_UNKNOWN and its stock held for good.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4";
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  // Activations are passivated quickly, so a state edited in the database is what the next turn loads.
  srv = await startServer({ seed: true, config: { ACTOR_IDLE_MS: 200 } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const sessionTimer = async (cartId: string) =>
  (await srv.db.sql<{ due_ms: number; payload: { retry?: number } }[]>`
    SELECT (extract(epoch FROM due_at - now()) * 1000)::int AS due_ms, payload FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId} AND name = 'session'`)[0];

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await f();
  while (!ok(v) && Date.now() < end) {
    await Bun.sleep(100);
    v = await f();
  }
  return v;
}

test("a reconcile refused before it decided anything is scheduled again with backoff, and ends once the outcome is decided", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  // An escalated capture leaves the session SETTLEMENT_UNKNOWN with no timer.
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_finalization_fails" } });
  expect(r.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
  expect(await sessionTimer(cartId)).toBeUndefined();
  await Bun.sleep(500); // passivated

  // This host has no rail of the session's name (a session another host's rail started); the timer fires now.
  await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{session,rail}', '"elsewhere"') WHERE kind = 'cart' AND id = ${cartId}`;
  await srv.db.sql`INSERT INTO actor_reminders (kind, id, name, due_at, payload) VALUES ('cart', ${cartId}, 'session', now(), ${srv.db.sql.json({ sessionId: r.body.details.checkout_session_id })})`;
  const again = await until(() => sessionTimer(cartId), (t) => t?.payload?.retry === 1);
  expect(again?.payload.retry).toBe(1);
  expect(again!.due_ms).toBeGreaterThan(2_000); // 5 s later, not at once

  // The rail is back: the next look decides (the capture is escalated again) and the timer is done.
  await Bun.sleep(500);
  await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{session,rail}', '"card"') WHERE kind = 'cart' AND id = ${cartId}`;
  await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId} AND name = 'session'`;
  expect(await until(() => sessionTimer(cartId), (t) => t === undefined)).toBeUndefined();
  const [st] = await srv.db.sql`SELECT state->'session'->>'status' AS s FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`;
  expect(st!.s).toBe("SETTLEMENT_UNKNOWN");
  const [o] = await srv.db.sql`SELECT reconciliation FROM orders WHERE cart_id = ${cartId}`;
  expect(o!.reconciliation).toBe("finalization_failed");
}, 60_000);
