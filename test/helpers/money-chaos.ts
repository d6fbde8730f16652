/**
 * Auditor D: a money-path burst for kill -9 tests (test/crash/money-chaos.test.ts, test/distributed/money-chaos.test.ts)
 * and the invariants checked after the restart: every capture one paid order, the processor's refunds what the
 * orders say, no refund left APPROVED, no stock held for a finished order, coupon uses = claims, every order
 * announced in the webhook outbox and every fanned-out event delivered to the receiver.
 */
import type { Sql } from "../../infra/db.ts";

export const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked, demo-store
export const TRACKED = "fa67858f-41a2-5f8f-b819-13fdd0ad560b"; // tracked, demo-store
export const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living

/** The chaos tests' service (test/helpers/service-process.ts): rate limits off, private webhook URLs allowed, one secret key across restarts. */
export const CHAOS_SERVICE_CONFIG = { RATE_LIMITS_ENABLED: false, ALLOW_PRIVATE_URLS: true, SECRET_KEY: "d".repeat(64) };

export type Res = { status: number; body: any };
export async function call(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Res> {
  const res = await fetch(url + path, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: res.status, body };
}
export const tryCall = (url: string, path: string, init: Parameters<typeof call>[2] = {}): Promise<Res | null> => call(url, path, init).catch(() => null);


export interface Retry {
  path: string;
  method?: string;
  body?: unknown;
  who: "agent" | "merchant";
  /** Extra request headers, kept for the retry (a bridge's Idempotency-Key). */
  headers?: Record<string, string>;
}

export async function invariants(sql: Sql, received: Map<string, number>): Promise<string[]> {
  const problems: string[] = [];
  for (const r of await sql`SELECT checkout_session_id, store_slug, count(*)::int AS n FROM orders
      WHERE checkout_session_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1`) problems.push(`two orders for session ${r.checkout_session_id} at ${r.store_slug}`);
  for (const r of await sql`SELECT cart_id, store_slug, count(*)::int AS n FROM orders
      WHERE cart_id IS NOT NULL AND paid_at IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1`) problems.push(`${r.n} paid orders for cart ${r.cart_id}`);
  const captures = await sql<{ intent_id: string; amount_minor: string; capture_ref: string; refunded_minor: string }[]>`
    SELECT intent_id, amount_minor, capture_ref, refunded_minor FROM sandbox_ledger_intents WHERE state = 'captured'`;
  const orders = await sql<{ id: string; intent_id: string | null; status: string; capture_ref: string | null; total: string; refunded_minor: string; paid_at: Date | null; reconciliation: string | null }[]>`
    SELECT id, intent_id, status, capture_ref, COALESCE(captured_minor, total_minor) AS total, refunded_minor, paid_at, reconciliation FROM orders WHERE checkout_session_id IS NOT NULL`;
  const byCapture = new Map(orders.filter((o) => o.capture_ref).map((o) => [o.capture_ref!, o]));
  for (const c of captures) {
    const o = byCapture.get(c.capture_ref) ?? orders.find((x) => x.intent_id === c.intent_id);
    if (!o) {
      problems.push(`capture ${c.capture_ref} (${c.amount_minor}) has no order`);
      continue;
    }
    if (o.reconciliation !== null && o.status === "pending" && !o.paid_at) continue;
    if (!o.paid_at && o.status === "canceled" && Number(c.refunded_minor) === Number(c.amount_minor)) continue;
    if (!o.paid_at) problems.push(`order ${o.id} holds capture ${c.capture_ref} but was never paid (${o.status})`);
    if (Number(o.total) !== Number(c.amount_minor)) problems.push(`order ${o.id} total ${o.total} ≠ captured ${c.amount_minor}`);
    if (Number(o.refunded_minor) !== Number(c.refunded_minor)) problems.push(`order ${o.id} (${o.status}) refunded_minor ${o.refunded_minor} ≠ processor refunded ${c.refunded_minor}`);
  }
  for (const r of await sql`
      SELECT o.id, o.status, COALESCE(o.captured_minor, o.total_minor) AS cap, o.refunded_minor,
             COALESCE(sum(f.amount_minor) FILTER (WHERE f.status = 'REFUNDED'), 0) AS done
        FROM orders o LEFT JOIN order_refunds f ON f.order_id = o.id WHERE o.checkout_session_id IS NOT NULL GROUP BY o.id
      HAVING o.refunded_minor > COALESCE(o.captured_minor, o.total_minor)
          OR COALESCE(sum(f.amount_minor) FILTER (WHERE f.status = 'REFUNDED'), 0) <> o.refunded_minor`)
    problems.push(`order ${r.id} (${r.status}): captured ${r.cap}, refunded_minor ${r.refunded_minor}, REFUNDED records ${r.done}`);
  for (const r of await sql`SELECT id, order_id FROM order_refunds WHERE status = 'APPROVED'`) problems.push(`refund ${r.id} of ${r.order_id} left APPROVED`);
  // a fully refunded paid order is refunded (status), a canceled paid order got its money back
  for (const r of await sql`SELECT id, status, refunded_minor, COALESCE(captured_minor, total_minor) AS cap FROM orders
      WHERE checkout_session_id IS NOT NULL AND paid_at IS NOT NULL AND status = 'canceled' AND refunded_minor < COALESCE(captured_minor, total_minor) AND payment_rail <> 'x402'`)
    problems.push(`paid order ${r.id} canceled with ${r.refunded_minor} of ${r.cap} refunded`);
  for (const r of await sql`SELECT r.id, o.id AS order_id, o.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id
      WHERE r.status = 'held' AND o.status <> 'pending'`) problems.push(`reservation ${r.id} still holds stock for ${r.status} order ${r.order_id}`);
  const [p] = await sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${TRACKED}`;
  const [h] = await sql<{ held: number | null }[]>`SELECT sum((l->>'quantity')::int)::int AS held FROM stock_reservations r, jsonb_array_elements(r.lines) l
      WHERE r.status = 'held' AND l->>'productId' = ${TRACKED}`;
  if (p && Number(p.r) !== Number(h?.held ?? 0)) problems.push(`tracked product reserved ${p.r} ≠ held reservations ${h?.held ?? 0}`);
  // a pending order (not waiting for the merchant) has a timer that ends it: its cart's session reminder
  for (const r of await sql`SELECT o.id, o.cart_id, s.state->'session'->>'status' AS session_status, s.state->'session'->>'id' AS sid, o.checkout_session_id
      FROM orders o LEFT JOIN actor_state s ON s.kind = 'cart' AND s.id = o.cart_id::text
      WHERE o.checkout_session_id IS NOT NULL AND o.status = 'pending' AND o.reconciliation IS NULL
        AND NOT EXISTS (SELECT 1 FROM actor_reminders m WHERE m.kind = 'cart' AND m.id = o.cart_id::text)`)
    problems.push(`pending order ${r.id} (cart ${r.cart_id}, session ${r.checkout_session_id}; the cart's session ${r.sid} is ${r.session_status}) has no cart timer`);
  // the outbox: every order announced
  for (const r of await sql`SELECT o.id FROM orders o WHERE o.checkout_session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.kind = 'order.created' AND e.payload->>'orderId' = o.id::text)`)
    problems.push(`order ${r.id} has no order.created event`);
  // every fanned-out delivery ended delivered and reached the receiver
  for (const r of await sql`SELECT d.event_id, d.status FROM webhook_deliveries d WHERE d.status <> 'delivered'`) problems.push(`delivery of ${r.event_id} is ${r.status}`);
  for (const r of await sql`SELECT d.event_id FROM webhook_deliveries d`) if (!received.has(r.event_id)) problems.push(`event ${r.event_id} never reached the receiver`);
  for (const r of await sql`SELECT c.code, c.used_count, (SELECT count(*)::int FROM coupon_claims k WHERE k.store_slug = c.store_slug AND k.code = c.code) AS claims
      FROM coupons c WHERE c.store_slug = 'demo-store' AND c.code = 'WELCOME10'`)
    if (Number(r.used_count) !== Number(r.claims)) problems.push(`coupon ${r.code}: used_count ${r.used_count} ≠ claims ${r.claims}`);
  for (const r of await sql`SELECT id FROM webhook_events WHERE NOT webhook_event_dispatched(dispatched_at, fanout_xid)`) problems.push(`event ${r.id} never dispatched`);
  return problems;
}


export interface Burst {
  retries: Retry[];
  ops: Promise<unknown>[];
}

/**
 * Sets up paid orders and pending refunds (not killed), then fires the burst at `urls` (round robin) and returns the
 * requests in flight and what a client would retry. `merchant` gives the merchant's headers.
 */
export async function setUpAndBurst(urls: string[], agent: Record<string, string>, merchant: () => Record<string, string>): Promise<Burst> {
  let next = 0;
  const url = urls[0]!;
  const M = merchant;
    // set-up, not killed: paid orders to work on
    const place = async (product: string, qty = 1): Promise<string> => {
      const c = await call(url, "/api/v1/agent/cart", { method: "POST", headers: agent, body: { items: [{ product_id: product, quantity: qty }] } });
      const r = await call(url, "/api/v1/agent/checkout", { method: "POST", headers: agent, body: { cartId: c.body.data.id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() } });
      if (r.status !== 200) throw new Error(`checkout ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.data.order_id;
    };
    const paid: string[] = [];
    for (let i = 0; i < 6; i++) paid.push(await place(BOARD));
    const trackedPaid: string[] = [];
    for (let i = 0; i < 3; i++) trackedPaid.push(await place(TRACKED));
    // refunds already requested (pending approval) before the burst
    const pendingRefunds: string[] = [];
    for (const id of paid.slice(0, 3)) {
      const r = await call(url, `/api/v1/agent/orders/${id}/refund`, { method: "POST", headers: agent, body: { amount: 1000, reason: "chaos" } });
      if (r.status !== 201) throw new Error(`refund request ${r.status} ${JSON.stringify(r.body)}`);
      pendingRefunds.push(r.body.data.refund_id ?? r.body.data.id);
    }
    // captures flagged for the merchant's decision (one unit more captured; the order write "failed")
    const flagged: string[] = [];
    for (const tok of ["tok_amount_mismatch", "tok_finalization_fails", "tok_amount_mismatch", "tok_finalization_fails"]) {
      const c = await call(url, "/api/v1/agent/cart", { method: "POST", headers: agent, body: { items: [{ product_id: flagged.length % 2 ? TRACKED : BOARD, quantity: 1 }] } });
      const r = await call(url, "/api/v1/agent/checkout", { method: "POST", headers: agent, body: { cartId: c.body.data.id, payment_method: tok, idempotency_key: crypto.randomUUID() } });
      const id = (r.body?.details?.order_ids?.[0] ?? r.body?.details?.order_id ?? r.body?.data?.order_id) as string | undefined;
      if (!id) throw new Error(`flagged checkout ${tok}: ${r.status} ${JSON.stringify(r.body)}`);
      flagged.push(id);
    }
    // ACP and UCP sessions to complete in the burst
    const acp: string[] = [];
    const ucp: string[] = [];
    for (let i = 0; i < 2; i++) {
      const a = await call(url, "/api/v1/agent/acp/checkout_sessions", { method: "POST", headers: { ...agent, "idempotency-key": crypto.randomUUID() }, body: { items: [{ id: i ? TRACKED : BOARD, quantity: 1 }] } });
      if (a.status !== 201) throw new Error(`acp create ${a.status} ${JSON.stringify(a.body)}`);
      acp.push(a.body.id);
      const u = await call(url, "/api/v1/agent/ucp/checkout-sessions", { method: "POST", headers: { ...agent, "idempotency-key": crypto.randomUUID() }, body: { line_items: [{ item: { id: i ? TRACKED : BOARD }, quantity: 1 }], currency: "USD" } });
      if (u.status !== 201) throw new Error(`ucp create ${u.status} ${JSON.stringify(u.body)}`);
      ucp.push(u.body.id);
    }
    const carts: { id: string; token: string }[] = [];
    const TOKENS = ["tok_approve", "tok_lost_response", "tok_approve", "tok_decline", "tok_approve", "tok_lost_response", "tok_needs_approval", "tok_fail"];
    for (let i = 0; i < 8; i++) {
      const items = i % 3 === 0 ? [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] : i % 3 === 1 ? [{ product_id: TRACKED, quantity: 1 }] : [{ product_id: TRACKED, quantity: 1 }, { product_id: BOARD, quantity: 2 }];
      const c = await call(url, "/api/v1/agent/cart", { method: "POST", headers: agent, body: { items } });
      if (i % 2 === 0) await call(url, "/api/v1/agent/apply-coupon", { method: "POST", headers: agent, body: { cartId: c.body.data.id, code: "WELCOME10" } });
      carts.push({ id: c.body.data.id, token: TOKENS[i]! });
    }

    const retries: Retry[] = [];
    const ops: Promise<unknown>[] = [];
    const op = (r: Retry) => {
      retries.push(r);
      ops.push(tryCall(urls[next++ % urls.length]!, r.path, { method: r.method ?? "POST", headers: { ...(r.who === "agent" ? agent : M()), ...r.headers }, body: r.body }));
    };
    // the burst
    for (const id of pendingRefunds) op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/refunds/${id}/approve`, body: {} });
    for (const id of pendingRefunds) op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/refunds/${id}/approve`, body: {} }); // a double click
    op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${paid[0]}/status`, body: { status: "canceled" } }); // cancel racing its approval
    op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${paid[3]}/status`, body: { status: "canceled" } });
    op({ who: "agent", path: `/api/v1/agent/orders/${paid[4]}/refund`, body: { amount: 500, idempotency_key: crypto.randomUUID() } });
    op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${paid[4]}/status`, body: { status: "canceled" } });
    op({ who: "agent", path: `/api/v1/agent/orders/${paid[5]}/cancel`, body: {} });
    for (const id of trackedPaid) op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${id}/status`, body: { status: "canceled" } });
    for (const c of carts) op({ who: "agent", path: "/api/v1/agent/checkout", body: { cartId: c.id, payment_method: c.token, idempotency_key: crypto.randomUUID() } });
    op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${paid[1]}/status`, body: { status: "fulfilled" } });
    flagged.forEach((id, i) => {
      const action = i < 2 ? "refund" : "accept";
      op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${id}/reconcile`, body: { action } });
      op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${id}/reconcile`, body: { action } }); // a double click
    });
    op({ who: "merchant", path: `/api/v1/merchant/stores/demo-store/orders/${flagged[2]}/status`, body: { status: "canceled" } });
    for (const id of acp) op({ who: "agent", path: `/api/v1/agent/acp/checkout_sessions/${id}/complete`, body: { payment_data: { token: "tok_approve", provider: "stripe" } }, headers: { "idempotency-key": crypto.randomUUID() } });
    for (const id of ucp) {
      op({ who: "agent", path: `/api/v1/agent/ucp/checkout-sessions/${id}/complete`, body: { payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] } }, headers: { "idempotency-key": crypto.randomUUID() } });
    }
    op({ who: "agent", path: `/api/v1/agent/orders/${paid[1]}/refund`, body: { amount: 700, idempotency_key: crypto.randomUUID() } });

  return { retries, ops };
}

/** The clients' retries: the same requests (same idempotency keys, same refund ids) to `urls`, round robin. */
export async function retryAll(urls: string[], burst: Burst, agent: Record<string, string>, merchant: () => Record<string, string>): Promise<void> {
  let next = 0;
  await Promise.all(burst.retries.map((r) => tryCall(urls[next++ % urls.length]!, r.path, { method: r.method ?? "POST", headers: { ...(r.who === "agent" ? agent : merchant()), ...r.headers }, body: r.body })));
}
