/**
 * A merchant's cancel of a session's pending order, or its block of the agent key, ends the ACP/UCP session (audit
 * B-1). Both go through the cart's checkout session "so no later attempt of the session can charge for a canceled
 * order" (docs/checkout.md "Cancels and money"). The bridge read the cart's ended session as "complete again"
 * (gateway/bridge/session-state.ts `liveCheckoutStatus`): the session answered `ready_for_payment` with no message,
 * and its next complete started a new payment and captured a new order at the store that had just canceled the sale.
 * Now the session reads canceled, says why, and refuses complete and update with SESSION_INACTIVE.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: string;
beforeAll(async () => {
  owner = await login(srv); // the operator (the demo store has no merchant account)
}, 120_000);

function send(key: TestKey, method: string, path: string, body?: unknown, version = "2026-04-17") {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": version, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
const pay26 = (token: string) => ({ payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token } } } });
const ucpPay = (token: string) => ({ payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } });

const pendingOrder = async (key: TestKey) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE agent_key_id = ${key.id}::uuid AND status = 'pending'`)[0]!.id;
const paidOrders = async (key: TestKey) => srv.db.sql`SELECT id FROM orders WHERE agent_key_id = ${key.id}::uuid AND status NOT IN ('pending', 'canceled')`;
const merchantCancels = (orderId: string) =>
  srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { status: "canceled", note: "will not sell" } });
const contents = (messages: { content: string }[]) => messages.map((m) => m.content).join("\n");

/** An ACP 2026-04-17 session whose payment waits for the buyer's approval. */
async function waitingAcpSession(key: TestKey): Promise<string> {
  const c = await send(key, "POST", ACP, { line_items: [{ id: SKILLET }], fulfillment_details: { address: ADDRESS } });
  expect(c.status).toBe(201);
  const id = c.body.id as string;
  await send(key, "POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: c.body.fulfillment_options[0].id, item_ids: [] }] });
  const waiting = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_needs_approval"));
  expect(waiting.body.status).toBe("requires_escalation");
  return id;
}

describe("ACP: the merchant's cancel of the session's pending order", () => {
  test("ends the session: it reads canceled and a complete captures nothing new", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const id = await waitingAcpSession(key);
    const canceled = await merchantCancels(await pendingOrder(key));
    expect(canceled.status).toBe(200);
    expect(canceled.body.data.status).toBe("canceled");

    const read = await send(key, "GET", `${ACP}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("canceled");
    expect(contents(read.body.messages)).toContain("The merchant canceled demo-store");
    // the same session read in 2025-09-29
    expect((await send(key, "GET", `${ACP}/${id}`, undefined, "2025-09-29")).body.status).toBe("canceled");

    const again = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"));
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
    expect(again.body.message).toContain("canceled by the merchant");
    expect(await paidOrders(key)).toHaveLength(0);
    // the refusal is recorded on the session: the next read and complete say the same
    expect((await send(key, "GET", `${ACP}/${id}`)).body.status).toBe("canceled");
    expect((await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"))).status).toBe(409);
    expect(await paidOrders(key)).toHaveLength(0);
  });

  test("an update of the ended session is refused, so no new cart can be paid through it", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const id = await waitingAcpSession(key);
    expect((await merchantCancels(await pendingOrder(key))).status).toBe(200);

    const update = await send(key, "POST", `${ACP}/${id}`, { line_items: [{ id: BOARD }] });
    expect({ status: update.status, code: update.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
    // the agent's own cancel of the ended session still answers the session, canceled
    const cancel = await send(key, "POST", `${ACP}/${id}/cancel`, {});
    expect({ status: cancel.status, session: cancel.body.status }).toEqual({ status: 200, session: "canceled" });
  });

  test("blocking the key ends its waiting session too: canceled, and complete is SESSION_INACTIVE rather than a 403 to retry", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const id = await waitingAcpSession(key);
    const block = await srv.json(`/api/v1/merchant/stores/demo-store/allowlist/${key.id}`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { status: "blocked" } });
    expect(block.status).toBe(200);

    const read = await send(key, "GET", `${ACP}/${id}`);
    expect(read.body.status).toBe("canceled");
    const again = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"));
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
    expect(await paidOrders(key)).toHaveLength(0);
  });
});

describe("UCP: the merchant's cancel of the session's pending order", () => {
  test("ends the session: it reads canceled with the merchant's note and a complete captures nothing new", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const id = c.body.id as string;
    const waiting = await send(key, "POST", `${UCP}/${id}/complete`, ucpPay("tok_needs_approval"));
    expect(waiting.body.status).toBe("requires_escalation");
    expect((await merchantCancels(await pendingOrder(key))).status).toBe(200);

    const read = await send(key, "GET", `${UCP}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("canceled");
    expect(read.body.messages.map((m: { code: string }) => m.code)).toContain("canceled_by_merchant");

    const again = await send(key, "POST", `${UCP}/${id}/complete`, ucpPay("tok_approve"));
    expect(again.status).toBe(409);
    expect(JSON.stringify(again.body)).toContain("SESSION_INACTIVE");
    expect(await paidOrders(key)).toHaveLength(0);
  });
});
