/**
 * Audit B-1's race: the bridge's complete checks the cart's orders for a merchant's cancel (gateway/bridge/index.ts
 * `assertCompletable`) and then asks the cart to check out. A merchant cancel landing between the two ended the cart's
 * checkout session CANCELED, which the cart's `checkout` previews anew: the complete paid a new order at the store
 * that had just canceled the sale. The bridge now asks with `refuseAfterMerchantCancel`, and the cart refuses in its
 * own turn (SESSION_INACTIVE, reason canceled_by_merchant), which the bridge answers as its own check does.
 *
 * The race is driven deterministically: the test wraps the server's actor client so that the merchant's cancel runs
 * (through HTTP, to the end) right before the bridge's `checkout` message reaches the cart, after the bridge's read.
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
/** Run once, right before the next cart `checkout` message is sent (then cleared). */
let beforeCheckout: (() => Promise<void>) | null = null;
let checkoutsSeen: Record<string, unknown>[] = [];

beforeAll(async () => {
  owner = await login(srv); // the operator (the demo store has no merchant account)
  const actors = srv.running.services.actors;
  const ask = actors.ask.bind(actors);
  actors.ask = (async (def, id, type, body, opts) => {
    if (type === "checkout") {
      checkoutsSeen.push(body as Record<string, unknown>);
      const hook = beforeCheckout;
      beforeCheckout = null;
      if (hook) await hook();
    }
    return ask(def, id, type, body, opts);
  }) as typeof actors.ask;
}, 120_000);

function send(key: TestKey, method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": "2026-04-17", "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
const pay26 = (token: string) => ({ payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token } } } });
const ucpPay = (token: string) => ({ payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } });

const pendingOrder = async (key: TestKey) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE agent_key_id = ${key.id}::uuid AND status = 'pending'`)[0]!.id;
const paidOrders = async (key: TestKey) => srv.db.sql`SELECT id FROM orders WHERE agent_key_id = ${key.id}::uuid AND status NOT IN ('pending', 'canceled')`;
const merchantCancels = (orderId: string) =>
  srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { status: "canceled", note: "will not sell" } });

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

/** The merchant's cancel of the key's pending order, armed to land after the bridge's read, before the cart's turn. */
async function cancelBeforeTheCartsTurn(key: TestKey): Promise<{ status: number }[]> {
  const orderId = await pendingOrder(key);
  const answers: { status: number }[] = [];
  beforeCheckout = async () => {
    answers.push(await merchantCancels(orderId));
  };
  return answers;
}

describe("a merchant's cancel landing between the bridge's check and the cart's checkout turn", () => {
  test("ACP: the complete is refused SESSION_INACTIVE, nothing is captured, and the session reads canceled", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const id = await waitingAcpSession(key);
    const cancels = await cancelBeforeTheCartsTurn(key);
    checkoutsSeen = [];

    const complete = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"));
    // the cancel ran inside the complete, after the bridge's own read of the orders found nothing canceled
    expect(cancels.map((c) => c.status)).toEqual([200]);
    expect(checkoutsSeen.map((b) => b.refuseAfterMerchantCancel)).toEqual([true]);
    expect({ status: complete.status, code: complete.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
    expect(complete.body.message).toContain("canceled by the merchant");
    expect(await paidOrders(key)).toHaveLength(0);

    // recorded on the session, as the bridge's own check records it
    expect((await send(key, "GET", `${ACP}/${id}`)).body.status).toBe("canceled");
    const again = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"));
    expect(again.status).toBe(409);
    expect(await paidOrders(key)).toHaveLength(0);
  });

  test("UCP: the complete is refused SESSION_INACTIVE and nothing is captured", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const id = c.body.id as string;
    expect((await send(key, "POST", `${UCP}/${id}/complete`, ucpPay("tok_needs_approval"))).body.status).toBe("requires_escalation");
    const cancels = await cancelBeforeTheCartsTurn(key);

    const complete = await send(key, "POST", `${UCP}/${id}/complete`, ucpPay("tok_approve"));
    expect(cancels.map((x) => x.status)).toEqual([200]);
    expect(complete.status).toBe(409);
    expect(JSON.stringify(complete.body)).toContain("SESSION_INACTIVE");
    expect(await paidOrders(key)).toHaveLength(0);
    expect((await send(key, "GET", `${UCP}/${id}`)).body.status).toBe("canceled");
  });

  test("the agent's own cancel landing there is not a merchant's: the session's complete still pays", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const id = await waitingAcpSession(key);
    const orderId = await pendingOrder(key);
    const cancels: { status: number }[] = [];
    beforeCheckout = async () => {
      cancels.push(await srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} }));
    };

    const complete = await send(key, "POST", `${ACP}/${id}/complete`, pay26("tok_approve"));
    expect(cancels.map((x) => x.status)).toEqual([200]);
    expect({ status: complete.status, session: complete.body.status }).toEqual({ status: 200, session: "completed" });
    expect(await paidOrders(key)).toHaveLength(1);
  });
});
