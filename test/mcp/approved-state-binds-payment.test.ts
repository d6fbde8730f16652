/**
 * Audit V2: complete_checkout charges only what the human approved. The question ("Pay 43.99 USD …") is built from
 * the session's state; while the human answers, the same key can re-preview the session with a dearer shipping
 * option (over REST, or from another MCP session), which keeps the checkout_session_id and moves its state hash. The
 * paying turn gets the hash the question was built from and refuses a session that moved since:
 * STATE_RECONFIRMATION_REQUIRED, nothing charged. Calling again asks the human the new total.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { DEST, SUMMIT, summitProduct } from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, structured, type Connected } from "./helpers.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let other: Connected;
let product: string;
/** Runs while the human reads a "Pay …" question, before they approve it (once). */
let whileAsked: (() => Promise<void>) | null = null;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, {
    path: `/${SUMMIT}/mcp`,
    headers: key.headers,
    elicit: async (req) => {
      const hook = whileAsked;
      if (hook && /^Pay /.test(req.message)) {
        whileAsked = null;
        await hook();
      }
      return accept();
    },
  });
  // the same key's second MCP session (another thread of the agent)
  other = await connect(srv, { path: `/${SUMMIT}/mcp`, headers: key.headers, elicit: accept });
  product = await summitProduct(srv);
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await other?.close();
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

/** A summit cart previewed with its cheapest shipping option; the dearest option's id for the re-preview. */
async function cheapSession() {
  const c = await post("/cart", { items: [{ product_id: product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const opts = (await post("/checkout/preview", { cartId, shipping: DEST })).body.details.options as { option_id: string; cost: number }[];
  const byCost = [...opts].sort((a, b) => a.cost - b.cost);
  const cheap = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[0]!.option_id } });
  expect(cheap.status).toBe(200);
  return {
    cartId,
    sessionId: cheap.body.data.checkout_session_id as string,
    cheapMinor: cheap.body.data.totals.total_minor as number,
    cheapHash: cheap.body.data.state_hash as string,
    dearOption: byCost[byCost.length - 1]!.option_id,
  };
}

const paidOrders = async (cartId: string) => (await srv.db.sql<{ total_minor: number }[]>`SELECT total_minor FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`).map((o) => Number(o.total_minor));

for (const tool of ["complete_checkout", "ucp_complete_checkout"] as const) {
  test(`${tool}: a REST re-preview with a dearer shipping option while the human approves is refused with STATE_RECONFIRMATION_REQUIRED and nothing is charged; the next call asks the new total and pays it`, async () => {
    const s = await cheapSession();
    let dear: { status: number; body: any } | null = null;
    whileAsked = async () => {
      dear = await post("/checkout/preview", { cartId: s.cartId, shipping: { ...DEST, option_id: s.dearOption } });
    };
    const asked = agent.elicitations.length;
    const ik = crypto.randomUUID();
    const r = await agent.call(tool, { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "tok_approve" });
    expect(agent.elicitations[asked]!.message).toStartWith(`Pay ${(s.cheapMinor / 100).toFixed(2)} USD to `);
    expect(dear!.status).toBe(200);
    const dearMinor = dear!.body.data.totals.total_minor as number;
    expect(dearMinor).toBeGreaterThan(s.cheapMinor);
    expect(dear!.body.data.checkout_session_id).toBe(s.sessionId);
    const e = errorOf(r);
    expect(e.code).toBe("STATE_RECONFIRMATION_REQUIRED");
    expect(e.details.checkout_session_id).toBe(s.sessionId);
    expect(e.details.reconfirm_state_hash).toBe(dear!.body.data.state_hash);
    expect(e.details.reasons).toEqual([
      { code: "state_changed_since_approval", approved_state_hash: s.cheapHash, current_total_minor: dearMinor, currency: "USD" },
    ]);
    expect(await paidOrders(s.cartId)).toEqual([]);

    // the same session and key again: the human is asked the new total, and that is what is charged
    const again = await agent.call(tool, { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "tok_approve" });
    expect(agent.elicitations[asked + 1]!.message).toStartWith(`Pay ${(dearMinor / 100).toFixed(2)} USD to `);
    expect(again.isError).toBeFalsy();
    expect(structured(again).status).toBe("COMPLETED");
    expect(await paidOrders(s.cartId)).toEqual([dearMinor]);
  }, 60_000);
}

test("a re-preview with a dearer shipping option from the key's other MCP session while the human approves is refused with STATE_RECONFIRMATION_REQUIRED and nothing is charged", async () => {
  const s = await cheapSession();
  let repreviewed: any = null;
  whileAsked = async () => {
    const picked = await other.call("get_shipping_rates", { cart_id: s.cartId, ...DEST, option_id: s.dearOption });
    expect(picked.isError).toBeFalsy();
    const pv = await other.call("preview_checkout", { cart_id: s.cartId });
    expect(pv.isError).toBeFalsy();
    repreviewed = structured(pv);
  };
  const r = await agent.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
  expect(repreviewed.checkout_session_id).toBe(s.sessionId);
  expect(repreviewed.totals.total_minor).toBeGreaterThan(s.cheapMinor);
  const e = errorOf(r);
  expect(e.code).toBe("STATE_RECONFIRMATION_REQUIRED");
  expect(e.details.reconfirm_state_hash).toBe(repreviewed.state_hash);
  expect(e.details.reasons[0].current_total_minor).toBe(repreviewed.totals.total_minor);
  expect(await paidOrders(s.cartId)).toEqual([]);
}, 60_000);

test("a session nobody re-previews while the human approves is paid at the approved total", async () => {
  const s = await cheapSession();
  const r = await agent.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
  expect(r.isError).toBeFalsy();
  expect(structured(r).status).toBe("COMPLETED");
  expect(await paidOrders(s.cartId)).toEqual([s.cheapMinor]);
}, 60_000);

test("a price cut within the tolerance after the preview: the human is asked the previewed total, the one the payment charges", async () => {
  const s = await cheapSession();
  const [p] = await srv.db.sql<{ price_minor: number }[]>`SELECT price_minor FROM products WHERE id = ${product}`;
  const listMinor = Number(p!.price_minor);
  // 10 cents off: below max(50, 0.5 %), so the session keeps its previewed pricing and needs no reconfirmation
  await srv.db.sql`UPDATE products SET price_minor = ${listMinor - 10}, updated_at = now() WHERE id = ${product}`;
  try {
    const asked = agent.elicitations.length;
    const r = await agent.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
    expect(r.isError).toBeFalsy();
    expect(agent.elicitations[asked]!.message).toStartWith(`Pay ${(s.cheapMinor / 100).toFixed(2)} USD to `);
    expect(await paidOrders(s.cartId)).toEqual([s.cheapMinor]);
  } finally {
    await srv.db.sql`UPDATE products SET price_minor = ${listMinor}, updated_at = now() WHERE id = ${product}`;
  }
}, 60_000);

test("a payment the key started over REST on the re-previewed session while the human approved is not resumed by that approval: STATE_RECONFIRMATION_REQUIRED, nothing captured", async () => {
  const s = await cheapSession();
  const ik = crypto.randomUUID();
  const intent = deriveIntentId(s.sessionId, ik, SUMMIT, 1);
  let pending: { status: number; body: any } | null = null;
  whileAsked = async () => {
    expect((await post("/checkout/preview", { cartId: s.cartId, shipping: { ...DEST, option_id: s.dearOption } })).status).toBe(200);
    // the same key pays the dearer state over REST with the same idempotency key, and the buyer approves it at the
    // provider: a resume of the session would capture it
    pending = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "tok_needs_approval", idempotency_key: ik });
    expect((await decideAt(srv, approvalLink(pending, SUMMIT), "approve")).status).toBe(200);
  };
  const r = await agent.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "tok_approve" });
  expect(pending!.status).toBe(202);
  const e = errorOf(r);
  expect(e.code).toBe("STATE_RECONFIRMATION_REQUIRED");
  expect(e.details.reasons[0].code).toBe("state_changed_since_approval");
  expect(await paidOrders(s.cartId)).toEqual([]);
  const ledger = await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${intent}`;
  expect(ledger.map((x) => x.state)).not.toContain("captured");
}, 60_000);
