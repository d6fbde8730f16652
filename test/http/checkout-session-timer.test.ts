/**
 * The cart's one `session` reminder (actors/cart/index.ts armSession / armSessionBy). A preview arms it no later than a
 * payment started right then would need it (STALE_IN_PROGRESS_MS), so a payment within that time keeps the row as it
 * is instead of moving its `due_at` (an update that is never HOT: `due_at` is the key of actor_reminders_due). A timer
 * that fires before the session's own time does nothing visible: it arms itself again for that time.
 */
import { beforeAll, expect, test } from "bun:test";
import { STALE_IN_PROGRESS_MS } from "../../actors/cart/checkout-machine.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
let offset = 0;
const clock = { now: () => Date.now() + offset };
const srv = useServer({ seed: true, boot: { clock } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  // Every change of a cart's reminder rows, in the order the database made them (observation only).
  await srv.db.sql.unsafe(`
    CREATE TABLE test_reminder_ops (n bigserial PRIMARY KEY, cart_id text, op text, due_at timestamptz);
    CREATE FUNCTION test_log_reminder_op() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        INSERT INTO test_reminder_ops (cart_id, op, due_at) SELECT OLD.id, TG_OP, OLD.due_at WHERE OLD.kind = 'cart';
        RETURN OLD;
      END IF;
      INSERT INTO test_reminder_ops (cart_id, op, due_at) SELECT NEW.id, TG_OP, NEW.due_at WHERE NEW.kind = 'cart';
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_log_reminder_op AFTER INSERT OR UPDATE OR DELETE ON actor_reminders FOR EACH ROW EXECUTE FUNCTION test_log_reminder_op();
    -- a pay update the test refuses (the payment turn then fails after its capture, its session left IN_PROGRESS)
    CREATE TABLE test_refused_carts (cart_id uuid PRIMARY KEY);
    CREATE FUNCTION test_refuse_pay() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'paid' AND EXISTS (SELECT 1 FROM test_refused_carts WHERE cart_id = NEW.cart_id) THEN
        RAISE EXCEPTION 'test: pay update refused';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_refuse_pay BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION test_refuse_pay();
  `);
}, 120_000);

const opsOf = async (cartId: string) => (await srv.db.sql<{ op: string }[]>`SELECT op FROM test_reminder_ops WHERE cart_id = ${cartId} ORDER BY n`).map((r) => r.op);
/** The session timer's due time (epoch ms of the service clock; undefined: no row). */
const timerAt = async (cartId: string) => {
  const [r] = await srv.db.sql<{ due: Date }[]>`SELECT due_at AS due FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId} AND name = 'session'`;
  return r?.due.getTime();
};
const sessionTime = async (cartId: string, field: "expiresAt" | "updatedAt") =>
  Number((await srv.db.sql<{ t: string }[]>`SELECT state->'session'->>${field} AS t FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]!.t);
const sessionStatus = async (cartId: string) =>
  (await srv.db.sql<{ s: string }[]>`SELECT state->'session'->>'status' AS s FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]?.s;
const abandoned = (cartId: string) => srv.db.sql`SELECT 1 FROM webhook_events WHERE kind = 'checkout.abandoned' AND payload->>'cartId' = ${cartId}`;

async function previewedCart(): Promise<{ cartId: string; sessionId: string; previewedAt: number }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const previewedAt = clock.now();
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id } });
  expect(p.status).toBe(200);
  return { cartId: c.body.data.id, sessionId: p.body.data.checkout_session_id, previewedAt };
}

test("a checkout paid right after its preview writes its session timer once and deletes it: the payment never moves it", async () => {
  const { cartId, sessionId } = await previewedCart();
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, checkout_session_id: sessionId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
  });
  expect(r.status).toBe(200);
  expect(r.body.data.status).toBe("COMPLETED");
  expect(await opsOf(cartId)).toEqual(["INSERT", "DELETE"]);
  expect(await timerAt(cartId)).toBeUndefined();
}, 60_000);

test("a previewed session left unpaid: its timer fires early, arms itself for the session's expiry, and the session is abandoned only then", async () => {
  offset = 0;
  const { cartId, previewedAt } = await previewedCart();
  // armed STALE_IN_PROGRESS_MS after the preview, not at its 30-minute expiry
  const first = (await timerAt(cartId))! - previewedAt;
  expect(first).toBeGreaterThanOrEqual(STALE_IN_PROGRESS_MS);
  expect(first).toBeLessThan(STALE_IN_PROGRESS_MS + 10_000);
  const expiresAt = await sessionTime(cartId, "expiresAt");
  expect(expiresAt - previewedAt).toBeGreaterThan(20 * 60_000);

  // The early time comes: the timer fires, finds the session waiting before its expiry and arms itself for it.
  offset = previewedAt + STALE_IN_PROGRESS_MS + 1_000 - Date.now();
  await until("the timer armed again", () => opsOf(cartId), (ops) => ops.length >= 3);
  await Bun.sleep(300);
  expect(await timerAt(cartId)).toBe(expiresAt);
  expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
  expect(await abandoned(cartId)).toHaveLength(0);
  // the poll's claim (due_at moved to its lease), then the firing turn's new due time
  expect(await opsOf(cartId)).toEqual(["INSERT", "UPDATE", "UPDATE"]);

  // The session's own time: EXPIRED, checkout.abandoned written, the timer gone.
  offset = expiresAt + 1_000 - Date.now();
  await until("checkout.abandoned", () => abandoned(cartId), (rows) => rows.length === 1);
  expect(await sessionStatus(cartId)).toBe("EXPIRED");
  await until("the timer deleted", () => timerAt(cartId), (t) => t === undefined);
  offset = 0;
}, 60_000);

test("a payment left IN_PROGRESS is not reconciled when its preview's timer comes due first, but once its own two minutes are up", async () => {
  offset = 0;
  const { cartId, sessionId, previewedAt } = await previewedCart();
  // the payment starts well after the preview, so the preview's timer comes due before the payment's own time
  offset = 20_000;
  await srv.db.sql`INSERT INTO test_refused_carts (cart_id) VALUES (${cartId})`;
  const idem = crypto.randomUUID();
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: idem },
  });
  // captured, then the order write failed: the turn failed with its session IN_PROGRESS (checkpointed before the charge)
  expect(r.status).toBe(500);
  await srv.db.sql`DELETE FROM test_refused_carts WHERE cart_id = ${cartId}`;
  expect(await sessionStatus(cartId)).toBe("IN_PROGRESS");
  const startedAt = await sessionTime(cartId, "updatedAt");
  const [order] = await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`;
  expect(order!.status).toBe("pending");
  // the payment kept the preview's earlier timer
  expect(await opsOf(cartId)).toEqual(["INSERT"]);

  // The preview's timer comes due (the payment's own time is 20 s later): it fires, and arms itself for that time.
  offset = previewedAt + STALE_IN_PROGRESS_MS + 1_000 - Date.now();
  await until("the timer armed again", () => opsOf(cartId), (ops) => ops.length >= 3);
  await Bun.sleep(500);
  expect(await sessionStatus(cartId)).toBe("IN_PROGRESS");
  expect((await srv.db.sql`SELECT status FROM orders WHERE id = ${order!.id}`)[0]!.status).toBe("pending");
  expect(await timerAt(cartId)).toBe(startedAt + STALE_IN_PROGRESS_MS);

  // Its own time: reconciled by intent id (the capture found, the order paid), never charged again.
  offset = startedAt + STALE_IN_PROGRESS_MS + 1_000 - Date.now();
  await until("the order paid", async () => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${order!.id}`)[0]!.status, (s) => s === "paid");
  expect(await sessionStatus(cartId)).toBe("COMPLETED");
  const [captures] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${cartId}`;
  expect(captures!.n).toBe(1);
  offset = 0;
}, 60_000);
