/**
 * An ACP/UCP items update moves the session to a new cart (our carts do not change items). The cart it leaves must
 * not stay payable beside it (review RM-F3): left READY_FOR_PAYMENT, a REST payment of it (its id is the session
 * id's hex) never showed in the session, and completing the session then paid the same store a second time. The
 * update now cancels the old cart's checkout session and discards the cart before it saves the move; if the old cart
 * refuses (a payment through another route began on it meanwhile), the update is 409 and the session stays where it
 * was. Through HTTP against the real server; the window is widened with a trigger in the scratch database.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

type Res = { status: number; body: any };
const send = (k: TestKey, method: string, path: string, body?: unknown) => sendAs(srv, k, method, path, body);

interface Bridge {
  name: "ACP" | "UCP";
  create: (k: TestKey, quantity: number) => Promise<Res>;
  update: (k: TestKey, id: string, quantity: number) => Promise<Res>;
  complete: (k: TestKey, id: string) => Promise<Res>;
  get: (k: TestKey, id: string) => Promise<Res>;
  /** The quantities of a session's lines. */
  quantities: (session: any) => number[];
  /** The error's code and details in the protocol's error shape. */
  errorOf: (r: Res) => { code: string; details: Record<string, unknown> };
}

const acp: Bridge = {
  name: "ACP",
  create: (k, q) => send(k, "POST", ACP, { items: [{ id: GREEN, quantity: q }] }),
  update: (k, id, q) => send(k, "POST", `${ACP}/${id}`, { items: [{ id: GREEN, quantity: q }] }),
  complete: (k, id) => send(k, "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } }),
  get: (k, id) => srv.json(`${ACP}/${id}`, { headers: k.headers }),
  quantities: (s) => s.line_items.map((l: { item: { quantity: number } }) => l.item.quantity),
  errorOf: (r) => ({ code: r.body.code, details: r.body.details }),
};

const ucp: Bridge = {
  name: "UCP",
  create: (k, q) => send(k, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: q }] }),
  update: (k, id, q) => send(k, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: q }] }),
  complete: (k, id) => send(k, "POST", `${UCP}/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } }),
  get: (k, id) => srv.json(`${UCP}/${id}`, { headers: k.headers }),
  quantities: (s) => s.line_items.map((l: { quantity: number }) => l.quantity),
  errorOf: (r) => ({ code: r.body.messages[0].code, details: r.body.messages[0].details }),
};

const cartOf = async (id: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${id}`)[0]!.cart_id;

/** The key's orders (store, status, total) and the sandbox processor's captures of them (money moved). */
async function moneyOf(k: TestKey): Promise<{ orders: { status: string; total: number }[]; captures: number }> {
  const orders = await srv.db.sql<{ status: string; total: number }[]>`
    SELECT status, total_minor::int AS total FROM orders WHERE agent_key_id = ${k.id} ORDER BY created_at`;
  const [c] = await srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE state = 'captured'
      AND intent_id IN (SELECT intent_id FROM orders WHERE agent_key_id = ${k.id})`;
  return { orders: orders.map((o) => ({ ...o })), captures: c!.n };
}

/** The REST one-call checkout of a cart with an approving test card. */
const restPay = (k: TestKey, cartId: string) =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" } });

for (const b of [acp, ucp]) {
  describe(`${b.name}: the cart an items update leaves`, () => {
    test("is discarded, so a REST payment of it is refused and the session's complete pays its new cart once", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, 1);
      expect(created.status).toBe(201);
      const id: string = created.body.id;
      const oldCart = await cartOf(id);

      const updated = await b.update(k, id, 2);
      expect(updated.status).toBe(200);
      expect(b.quantities(updated.body)).toEqual([2]);
      expect(await cartOf(id)).not.toBe(oldCart);

      const old = await srv.json(`/api/v1/agent/cart/${oldCart}`, { headers: k.headers });
      expect(old.status).toBe(200);
      expect(old.body.data.status).toBe("ABANDONED");
      const rest = await restPay(k, oldCart);
      expect(rest.status).toBe(409);
      expect(rest.body).toMatchObject({ success: false, code: "CART_NOT_MUTABLE", details: { reason: "illegal_transition", status: "ABANDONED" } });

      const done = await b.complete(k, id);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
      const money = await moneyOf(k);
      expect(money.orders).toEqual([{ status: "paid", total: expect.any(Number) }]);
      expect(money.captures).toBe(1);
    });

    test("refuses the move with 409 when a REST payment of the old cart completes during the update: the session stays on the paid cart and is not charged again", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, 1);
      const id: string = created.body.id;
      const oldCart = await cartOf(id);
      // The update's new cart is written slowly (1.5 s), between its checks of the old cart and the old cart's
      // retirement: the REST payment of the old cart lands in that window.
      await srv.db.sql.unsafe(`
        CREATE FUNCTION t_slow_new_cart() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
        CREATE TRIGGER t_slow_new_cart BEFORE INSERT ON actor_state FOR EACH ROW
          WHEN (NEW.kind = 'cart' AND NEW.id <> '${oldCart}') EXECUTE FUNCTION t_slow_new_cart();`);
      let update: Res;
      let restOrder = "";
      try {
        const pending = b.update(k, id, 2);
        await Bun.sleep(500);
        const rest = await restPay(k, oldCart);
        expect(rest.status).toBe(200);
        expect(rest.body.data.status).toBe("COMPLETED");
        restOrder = rest.body.data.order_id;
        update = await pending;
      } finally {
        await srv.db.sql.unsafe(`DROP TRIGGER t_slow_new_cart ON actor_state; DROP FUNCTION t_slow_new_cart();`);
      }
      expect(update.status).toBe(409);
      expect(b.errorOf(update)).toMatchObject({ code: "SESSION_INACTIVE", details: { checkout_session_id: id, status: "completed" } });
      expect(await cartOf(id)).toBe(oldCart);

      const read = await b.get(k, id);
      expect(read.body.status).toBe("completed");
      expect(b.quantities(read.body)).toEqual([1]);
      expect(read.body.order.id).toBe(restOrder);
      // the session's complete answers with the order REST paid (the cart refuses the session's own key as a conflict)
      const again = await b.complete(k, id);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: "completed", order: { id: restOrder } });
      const money = await moneyOf(k);
      expect(money.orders.map((o) => o.status)).toEqual(["paid"]);
      expect(money.captures).toBe(1);
    });
  });
}
