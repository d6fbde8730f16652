/**
 * Audit B-2: the approval-hold bound (actors/cart/hold-guard.ts, 429 rate_limit_exceeded pending_approval_limit)
 * promises Retry-After (docs/checkout.md, docs/review.md session 12 X-3), and REST gets it (gateway/plugins/errors.ts
 * sets it from details.retry_after_seconds). An ACP/UCP complete is answered by the bridge's own `respond`
 * (gateway/bridge/index.ts), which never sets the header: the 429 has no Retry-After in either ACP version, and the
 * 2026-04-17 Error carries no `details` either, so a 2026-04-17 client is told "rate limited" with no way to know when
 * to come back. Now: Retry-After on the bridge's 429 as on REST's (one rule: gateway/plugins/errors.ts `retryAfterOf`), and
 * the sessions holding are listed by the protocol's own session ids, not the cart's internal `cs_<cart hex>_<n>`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { IN_FLIGHT_GRACE_SECONDS } from "../../actors/cart/hold-guard.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005, tracked stock
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, CHECKOUT_MAX_PENDING_APPROVALS: 1 } });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

function send(k: TestKey, version: string, method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...k.headers, "api-version": version, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
const pay26 = (token: string) => ({ payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token } } } });
async function readySession(k: TestKey): Promise<string> {
  const c = await send(k, "2026-04-17", "POST", ACP, { line_items: [{ id: SKILLET }], fulfillment_details: { address: ADDRESS } });
  expect(c.status).toBe(201);
  const id = c.body.id as string;
  const option = c.body.fulfillment_options[0].id as string;
  await send(k, "2026-04-17", "POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: option, item_ids: [] }] });
  return id;
}

describe("ACP and UCP: the pending-approval bound's 429 says when to come back", () => {
  test("2026-04-17 and 2025-09-29 answers carry Retry-After, and 2025-09-29 lists the ACP session holding", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const first = await readySession(k);
    expect((await send(k, "2026-04-17", "POST", `${ACP}/${first}/complete`, pay26("tok_needs_approval"))).body.status).toBe("requires_escalation");
    // past the in-flight grace: the waiting checkout counts
    await srv.db.sql`UPDATE stock_reservations SET created_at = created_at - make_interval(secs => ${IN_FLIGHT_GRACE_SECONDS + 5})
      WHERE status = 'held' AND order_id IN (SELECT id FROM orders WHERE agent_key_id = ${k.id}::uuid)`;
    const second = await readySession(k);

    const r26 = await send(k, "2026-04-17", "POST", `${ACP}/${second}/complete`, pay26("tok_needs_approval"));
    expect(r26.status).toBe(429);
    expect(r26.body.code).toBe("rate_limit_exceeded");
    expect(Number(r26.headers.get("retry-after"))).toBeGreaterThan(0);

    const r25 = await send(k, "2025-09-29", "POST", `${ACP}/${second}/complete`, { payment_data: { token: "tok_needs_approval", provider: "stripe" } });
    expect(r25.status).toBe(429);
    expect(r25.headers.get("retry-after")).toBe(String(r25.body.details.retry_after_seconds));
    // the session holding is the one the client knows, and the refused one is named as the client knows it
    expect(r25.body.details.checkout_session_ids).toEqual([first]);
    expect(r25.body.details.checkout_session_id).toBe(second);

    // UCP, answered by the same bridge
    const u = await send(k, "2026-04-17", "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(u.status).toBe(201);
    const ru = await send(k, "2026-04-17", "POST", `${UCP}/${u.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_needs_approval" } }] } });
    expect(ru.status).toBe(429);
    expect(Number(ru.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(ru.body.messages[0].details.checkout_session_ids).toEqual([]); // the ACP session is not a UCP one
  });
});
