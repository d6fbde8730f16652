/**
 * Review RA-1 (MED): the sandbox processor's approve and reject were read-then-overwrite. A refusal that read
 * `awaiting_approval` and wrote after an approval and the agent's capture wiped the capture (order paid, ledger
 * "rejected" with no capture reference, every refund `unknown_capture`); a stale approval could turn a refusal into an
 * approval. Now each state change is a compare-and-set on the state it read: the later decision writes nothing and is
 * answered 409 conflict with the state the intent is in.
 *
 * The race is made deterministic in the database: a statement trigger holds the first UPDATE of the ledger after the
 * decision's read (on an advisory lock the test holds) while the other tab decides and the agent resumes; then the
 * held write is let go. Through HTTP against the real server, with Postgres and the seeded demo data.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { decideAt, linkPath } from "../helpers/sandbox-approval.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const LEAF = "greenleaf-living";
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living
const HOLD_KEY = 8_700_101;

let srv: TestServer;
let key: TestKey;
let operator: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  operator = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

type Res = { status: number; body: any };

/** A one-store agent checkout waiting for the buyer's approval: the link the agent was given and how to resume. */
async function waitingCheckout() {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const body = { cartId: c.body.data.id as string, payment_methods: { [LEAF]: "tok_needs_approval" }, idempotency_key: crypto.randomUUID() };
  const first: Res = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
  expect(first.status).toBe(202);
  const url: string = first.body.details.approval_urls.find((a: { merchant_slug: string }) => a.merchant_slug === LEAF).url;
  const link = linkPath(url);
  const intentId = link.split("/")[5]!;
  const sid: string = first.body.details.checkout_session_id;
  const resume = (): Promise<Res> =>
    srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { ...body, checkout_session_id: sid } });
  return { cartId: body.cartId, link, intentId, resume };
}

const ledger = async (intentId: string) =>
  (await srv.db.sql<{ state: string; capture_ref: string | null }[]>`SELECT state, capture_ref FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`)[0];

/**
 * Runs `decision` with its ledger write held after its read: `meanwhile` runs while it is held, then the write is let
 * go. Returns the held decision's answer.
 */
async function heldDecision(decision: () => Promise<Res>, meanwhile: () => Promise<void>): Promise<Res> {
  const sql = srv.db.sql;
  const holder = await sql.reserve();
  try {
    await holder`SELECT pg_advisory_lock(${HOLD_KEY})`;
    await sql.unsafe(`
      CREATE SEQUENCE test_ledger_hold;
      CREATE FUNCTION test_ledger_hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('test_ledger_hold') = 1 THEN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_ledger_hold BEFORE UPDATE ON sandbox_ledger_intents FOR EACH STATEMENT EXECUTE FUNCTION test_ledger_hold();`);
    const held = decision();
    // the decision has read the intent and its write waits on the lock
    for (let i = 0; ; i++) {
      const [w] = await sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`;
      if (w!.n > 0) break;
      if (i > 500) throw new Error("the decision's write was never held");
      await Bun.sleep(10);
    }
    await meanwhile();
    await holder`SELECT pg_advisory_unlock(${HOLD_KEY})`;
    return await held;
  } finally {
    await sql.unsafe(`DROP TRIGGER IF EXISTS test_ledger_hold ON sandbox_ledger_intents; DROP FUNCTION IF EXISTS test_ledger_hold(); DROP SEQUENCE IF EXISTS test_ledger_hold;`);
    await holder`SELECT pg_advisory_unlock_all()`;
    holder.release();
  }
}

describe("two decisions on one sandbox payment: only the first counts", () => {
  test("a refusal that read the waiting payment before another tab approved it and the agent captured it is answered 409 conflict, and the capture stays refundable", async () => {
    const a = await waitingCheckout();
    let resumed: Res | undefined;
    const refused = await heldDecision(
      () => decideAt(srv, a.link, "reject"),
      async () => {
        const approved = await decideAt(srv, a.link, "approve");
        expect(approved.status).toBe(200);
        resumed = await a.resume();
      },
    );
    expect(resumed!.status).toBe(200);
    expect(resumed!.body.data.status).toBe("COMPLETED");
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      success: false,
      error: "The payment is captured; it is not waiting for approval.",
      code: "conflict",
      details: { intent_id: a.intentId, state: "captured" },
    });
    const [order] = await srv.db.sql<{ id: string; capture_ref: string }[]>`
      SELECT id::text AS id, capture_ref FROM orders WHERE cart_id = ${a.cartId} AND store_slug = ${LEAF}`;
    expect(await ledger(a.intentId)).toEqual({ state: "captured", capture_ref: order!.capture_ref });
    // the page shows the capture, and the merchant's cancel refunds it through the processor
    expect(await (await srv.fetch(a.link)).text()).toContain("This payment is captured");
    const cancel = await srv.json(`/api/v1/merchant/stores/${LEAF}/orders/${order!.id}/status`, {
      method: "POST",
      headers: operator,
      body: { status: "canceled" },
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body.data.refund.status).toBe("REFUNDED");
  }, 90_000);

  test("an approval that read the waiting payment before another tab refused it is answered 409 conflict, and the agent's resume is refused 402 PAYMENT_NOT_APPROVED", async () => {
    const a = await waitingCheckout();
    const approved = await heldDecision(
      () => decideAt(srv, a.link, "approve"),
      async () => {
        const refused = await decideAt(srv, a.link, "reject");
        expect(refused.status).toBe(200);
        expect(refused.body.data).toEqual({ intent_id: a.intentId, decision: "reject", status: "not_approved" });
      },
    );
    expect(approved.status).toBe(409);
    expect(approved.body).toEqual({
      success: false,
      error: "The payment is rejected; it is not waiting for approval.",
      code: "conflict",
      details: { intent_id: a.intentId, state: "rejected" },
    });
    expect(await ledger(a.intentId)).toEqual({ state: "rejected", capture_ref: null });
    const r = await a.resume();
    expect(r.status).toBe(402);
    expect(r.body.code).toBe("PAYMENT_NOT_APPROVED");
  }, 90_000);

  test("the same decision twice at once is answered 200 both times and decides once", async () => {
    const a = await waitingCheckout();
    let other: Res | undefined;
    const held = await heldDecision(
      () => decideAt(srv, a.link, "reject"),
      async () => {
        other = await decideAt(srv, a.link, "reject");
      },
    );
    expect(other!.status).toBe(200);
    expect(held.status).toBe(200);
    expect(held.body.data).toEqual({ intent_id: a.intentId, decision: "reject", status: "not_approved" });
    expect(await ledger(a.intentId)).toEqual({ state: "rejected", capture_ref: null });
  }, 90_000);
});
