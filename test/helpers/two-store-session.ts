/**
 * Shared set-up of the multi-store card checkout tests: a demo-store + greenleaf-living cart previewed into one
 * checkout session, a `pay` that sends the checkout with that session and one idempotency key, and the sandbox
 * processor's ledger of each store's attempts (money moves once per store).
 */
import { expect } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import type { TestKey } from "./agents.ts";
import { GREEN } from "./partly-paid.ts";
import type { TestServer } from "./server.ts";

export const DEMO = "demo-store";
export const LEAF = "greenleaf-living";
/** A demo-store product whose stock is tracked. */
export const TRACKED_BOARD = "fa67858f-41a2-5f8f-b819-13fdd0ad560b";

export type Res = { status: number; body: any };
export interface Attempt {
  cartId: string;
  sid: string;
  ik: string;
  /** POST /checkout for the session with the same idempotency key and these per-store payment methods. */
  pay: (methods: Record<string, string>) => Promise<Res>;
}

/** A cart of the tracked board and a greenleaf product, previewed into one checkout session; nothing paid yet. */
export async function twoStoreSession(srv: TestServer, key: TestKey): Promise<Attempt> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: TRACKED_BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId: string = c.body.data.id;
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
  expect(p.status).toBe(200);
  const sid: string = p.body.data.checkout_session_id;
  const ik = crypto.randomUUID();
  const pay = (methods: Record<string, string>) =>
    srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, checkout_session_id: sid, idempotency_key: ik, payment_methods: methods } });
  return { cartId, sid, ik, pay };
}

/** The processor's intents of one store's attempts 1..3 in this session, in attempt order. */
export async function ledger(srv: TestServer, a: Attempt, store: string): Promise<{ token: string; state: string }[]> {
  const ids = [1, 2, 3].map((n) => deriveIntentId(a.sid, a.ik, store, n));
  const rows = await srv.db.sql<{ intent_id: string; token: string; state: string }[]>`SELECT intent_id, token, state FROM sandbox_ledger_intents WHERE intent_id IN ${srv.db.sql(ids)}`;
  return ids.flatMap((id) => rows.filter((r) => r.intent_id === id).map((r) => ({ token: r.token, state: r.state })));
}
