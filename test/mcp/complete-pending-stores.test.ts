/**
 * A multi-store checkout paused for the buyer's approval: REST's 202 PENDING_EXTERNAL_CONFIRMATION says what
 * happened at every store (`details.stores`, `completed_store_ids`; payments audit B2 F4). MCP's complete_checkout
 * pending answer now carries the same information in its structured content, so an agent knows which store is
 * paid, which waits for the buyer and which rolled back. Through the SDK client (outputSchema validated) against the
 * real server; the two-store cart is made over REST, the only way to put two stores in one cart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, structured, type Connected } from "./helpers.ts";
import { decideIntent } from "../helpers/sandbox-approval.ts";

const DEMO = "demo-store";
const LEAF = "greenleaf-living";
const BOARD = "fa67858f-41a2-5f8f-b819-13fdd0ad560b"; // a demo-store product whose stock is tracked

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

/** A demo-store + greenleaf cart (REST), previewed over MCP. */
async function twoStoreSession(): Promise<{ cartId: string; sid: string; ik: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const pv = await agent.call("preview_checkout", { cart_id: c.body.data.id });
  expect(pv.isError).toBeFalsy();
  return { cartId: c.body.data.id, sid: structured(pv).checkout_session_id, ik: crypto.randomUUID() };
}

async function approve(sid: string, ik: string, store: string): Promise<void> {
  const r = await decideIntent(srv, deriveIntentId(sid, ik, store, 1), "approve");
  expect(r.status).toBe(200);
}

const byStore = (stores: readonly { store_id: string }[]): unknown[] => [...stores].sort((x, y) => x.store_id.localeCompare(y.store_id));

describe("complete_checkout's PENDING_EXTERNAL_CONFIRMATION on a two-store cart", () => {
  test("names every store's leg: after one store's approval the resume says that store is paid and the other still waits for the buyer", async () => {
    const s = await twoStoreSession();
    const pay = () => agent.call("complete_checkout", { checkout_session_id: s.sid, idempotency_key: s.ik, payment_method: "tok_needs_approval" });
    const first = structured(await pay());
    expect(first.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    expect(first.completed_store_ids).toEqual([]);
    expect(byStore(first.stores)).toEqual([
      { store_id: DEMO, status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
      { store_id: LEAF, status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
    ]);

    await approve(s.sid, s.ik, LEAF);
    const r = await pay();
    expect(r.isError).toBeFalsy();
    const second = structured(r);
    expect(second.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    expect(second.approval_urls.map((u: { merchant_slug: string }) => u.merchant_slug)).toEqual([DEMO]);
    expect(second.completed_store_ids).toEqual([LEAF]);
    expect(byStore(second.stores)).toEqual([
      { store_id: DEMO, status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
      { store_id: LEAF, status: "captured", outcome: "captured" },
    ]);
    expect(second.next).toContain(`Already paid: ${LEAF}`);
    // the text content an agent reads says it too
    const text = (r.content as { type: string; text: string }[]).find((c) => c.type === "text")!.text;
    expect(JSON.parse(text).stores).toEqual(second.stores);

    // what the answer says is what happened: greenleaf's payment captured once, and only the approval completes demo-store
    const leaf = await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${deriveIntentId(s.sid, s.ik, LEAF, 1)}`;
    expect(leaf.map((x) => x.state)).toEqual(["captured"]);
    await approve(s.sid, s.ik, DEMO);
    const done = structured(await pay());
    expect(done.status).toBe("COMPLETED");
    const orders = await srv.db.sql<{ store_slug: string; status: string }[]>`SELECT store_slug, status FROM orders WHERE cart_id = ${s.cartId} ORDER BY store_slug`;
    expect([...orders]).toEqual([{ store_slug: DEMO, status: "paid" }, { store_slug: LEAF, status: "paid" }]);
  }, 90_000);

  test("when only one store needs approval and the other was declined (a session begun on REST), the MCP resume names the declined store and the way on", async () => {
    const s = await twoStoreSession();
    const rest = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: s.cartId, checkout_session_id: s.sid, idempotency_key: s.ik, payment_methods: { [DEMO]: "tok_decline", [LEAF]: "tok_needs_approval" } },
    });
    expect(rest.status).toBe(202);

    const r = structured(await agent.call("complete_checkout", { checkout_session_id: s.sid, idempotency_key: s.ik, payment_method: "tok_approve" }));
    expect(r.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    expect(r.approval_urls.map((u: { merchant_slug: string }) => u.merchant_slug)).toEqual([LEAF]);
    expect(r.completed_store_ids).toEqual([]);
    // the same legs REST's 202 showed
    expect(byStore(r.stores)).toEqual(byStore(rest.body.details.stores));
    expect(byStore(r.stores)).toEqual([
      { store_id: DEMO, status: "unpaid", outcome: "declined" },
      { store_id: LEAF, status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
    ]);
    expect(r.next).toContain(`Not charged in this attempt: ${DEMO} (declined)`);
    expect(r.next).toContain("payment_method");
    // the resume before the approval charged nothing: demo-store's one intent is the declined one
    const demo = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE intent_id IN (${deriveIntentId(s.sid, s.ik, DEMO, 1)}, ${deriveIntentId(s.sid, s.ik, DEMO, 2)})`;
    expect(demo[0]!.n).toBe(1);

    // and the way on holds: after the approval, the same call pays greenleaf and charges demo-store's new method
    await approve(s.sid, s.ik, LEAF);
    const done = structured(await agent.call("complete_checkout", { checkout_session_id: s.sid, idempotency_key: s.ik, payment_method: "tok_approve" }));
    expect(done.status).toBe("COMPLETED");
    const ledger = await srv.db.sql<{ token: string; state: string }[]>`
      SELECT token, state FROM sandbox_ledger_intents WHERE intent_id IN (${deriveIntentId(s.sid, s.ik, DEMO, 1)}, ${deriveIntentId(s.sid, s.ik, DEMO, 2)}) ORDER BY intent_id = ${deriveIntentId(s.sid, s.ik, DEMO, 1)} DESC`;
    expect([...ledger]).toEqual([{ token: "tok_decline", state: "declined" }, { token: "tok_approve", state: "captured" }]);
  }, 90_000);
});
