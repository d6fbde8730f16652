/**
 * Audit I-1 (HIGH) and I-2 (MED): the sandbox card processor's buyer-approval link must be a secret only the buyer's
 * agent holds. The intent id is deterministic (sha256 of session, idempotency key, store slug, attempt; the key is
 * derived from the session when the agent sends none), and merchants saw `checkout_session_id` and `intent_id` in their
 * orders' event data: so another store of a multi-store cart could compute the buyer's link for this store, and the
 * payee could approve its own buyer's payment. Now the link carries a random token drawn by the processor, merchants
 * are shown neither id, and a wrong token is answered exactly as an unknown intent. Through HTTP against the real
 * server, with Postgres and the seeded demo data.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { uuidV4FromHex } from "../../infra/uuid.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { dashboardSession } from "../helpers/dashboard.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DEMO = "demo-store";
const LEAF = "greenleaf-living";
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living
const PATH = "/api/v1/sandbox/payments";

let srv: TestServer;
let key: TestKey;
/** demo-store's owner (the operator account) and greenleaf-living's owner. */
let demoOwner: Record<string, string>;
let leafOwner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  demoOwner = { authorization: `Bearer ${await login(srv)}` };
  leafOwner = { authorization: `Bearer ${await login(srv, merchantLogin(LEAF))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

type Res = { status: number; body: any };

/** An agent checkout of `items` (no idempotency key unless given): the answer and how to resume it. */
async function checkout(items: { product_id: string; quantity: number }[], methods: Record<string, string>, idempotencyKey?: string) {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items } });
  expect(c.status).toBe(201);
  const cartId: string = c.body.data.id;
  const body = { cartId, payment_methods: methods, ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}) };
  const first: Res = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
  expect(first.status).toBe(202);
  const sid: string = first.body.details.checkout_session_id;
  const resume = (): Promise<Res> =>
    srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { ...body, checkout_session_id: sid } });
  const orderOf = async (store: string) =>
    (await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id::text AS id, intent_id FROM orders WHERE cart_id = ${cartId} AND store_slug = ${store}`)[0]!;
  return { cartId, sid, first, resume, orderOf };
}

/** The buyer's link for `store` as the agent was given it, as a path of this server. */
function linkFor(answer: Res, store: string): string {
  const u = answer.body.details.approval_urls.find((a: { merchant_slug: string }) => a.merchant_slug === store);
  expect(u).toBeDefined();
  return new URL(u.url).pathname;
}

const ledgerState = async (intentId: string) => (await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`)[0]?.state;

/** The default idempotency key the cart derives from the session id when the agent sends none (actors/cart derivedUuid). */
const derivedKey = (sid: string) => uuidV4FromHex(createHash("sha256").update(JSON.stringify(["idempotency.v1", sid])).digest("hex"));

/** What a merchant is shown of its order (REST), as text. */
async function merchantView(store: string, owner: Record<string, string>, orderId: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${store}/orders/${orderId}`, { headers: owner });
  expect(r.status).toBe(200);
  expect(r.body.data.events.length).toBeGreaterThan(0);
  return JSON.stringify(r.body);
}

const post = (path: string, decision: "approve" | "reject"): Promise<Res> => srv.json(`${path}/${decision}`, { method: "POST", body: {} });

/** An answer with the requested intent id written as `<id>`, so answers about two ids can be compared whole. */
async function shape(r: Response, intentId: string) {
  return { status: r.status, type: r.headers.get("content-type"), body: (await r.text()).split(intentId).join("<id>") };
}

const UNKNOWN = `pi_${"ab".repeat(20)}`;

/** A decision posted to the old, tokenless link of `intentId` is refused (4xx) exactly as for an unknown intent. */
async function expectOldShapeRefused(intentId: string): Promise<void> {
  for (const d of ["approve", "reject"]) {
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: "{}" };
    const known = await shape(await srv.fetch(`${PATH}/${intentId}/${d}`, init), intentId);
    expect(known.status).toBeGreaterThanOrEqual(400);
    expect(known.status).toBeLessThan(500);
    expect(known).toEqual(await shape(await srv.fetch(`${PATH}/${UNKNOWN}/${d}`, init), UNKNOWN));
  }
}

describe("the sandbox card approval link is a secret of the buyer's agent", () => {
  test("another store of a multi-store cart sees neither session nor intent id, and the old derivation of the buyer's link opens nothing (404)", async () => {
    // the agent sends no idempotency key: the cart derives it from the session id
    const a = await checkout([{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }], { [DEMO]: "MOCK", [LEAF]: "tok_needs_approval" });
    const link = linkFor(a.first, LEAF);
    const leaf = await a.orderOf(LEAF);
    const demo = await a.orderOf(DEMO);

    // demo-store's owner reads its own order of that checkout: nothing names the buyer's session or any intent
    const seen = await merchantView(DEMO, demoOwner, demo.id);
    for (const secret of ["checkout_session_id", "intent_id", a.sid, a.sid.slice(3, 35), leaf.intent_id, demo.intent_id]) expect(seen).not.toContain(secret);

    // the derivation I-1 used still gives greenleaf's intent id (it stays the deterministic internal id) …
    const derived = deriveIntentId(a.sid, derivedKey(a.sid), LEAF, 1);
    expect(derived).toBe(leaf.intent_id);
    expect(link.startsWith(`${PATH}/${derived}/`)).toBe(true);
    // … but it is no link: the page and both decisions under the intent id alone (the old link) decide nothing, and
    // answer as they do for an intent that does not exist
    expect((await srv.fetch(`${PATH}/${derived}`)).status).toBe(404);
    await expectOldShapeRefused(derived);
    // nor under a guessed token
    const guessed = `${PATH}/${derived}/${"0".repeat(64)}`;
    expect((await srv.fetch(guessed)).status).toBe(404);
    const refused = await post(guessed, "reject");
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ success: false, error: "No sandbox payment with that intent id.", code: "not_found", details: { intent_id: derived } });
    expect(await ledgerState(derived)).toBe("awaiting_approval");

    // the buyer's own link shows the payment and approves it; the agent's resume then completes
    const page = await srv.fetch(link);
    expect(page.status).toBe(200);
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await page.text();
    expect(html).toContain(`to <strong>${LEAF}</strong>`);
    expect(html).toContain(`action="${link}/approve"`);
    const approved = await post(link, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ success: true, data: { intent_id: derived, decision: "approve", status: "approved" } });
    const done = await a.resume();
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("COMPLETED");
    expect(await ledgerState(derived)).toBe("captured");
  }, 90_000);

  test("the payee cannot approve its buyer's payment with what its order shows: no intent id in its REST order or dashboard page, and the intent id alone decides nothing", async () => {
    // the agent sends its own key: no derivation needed, the payee used to read the intent id off its order
    const a = await checkout([{ product_id: GREEN, quantity: 1 }], { [LEAF]: "tok_needs_approval" }, crypto.randomUUID());
    const leaf = await a.orderOf(LEAF);
    const seen = await merchantView(LEAF, leafOwner, leaf.id);
    for (const secret of ["checkout_session_id", "intent_id", a.sid, leaf.intent_id]) expect(seen).not.toContain(secret);
    const dash = await dashboardSession(srv, LEAF);
    const pageRes = await srv.fetch(`/dashboard/s/${LEAF}/orders/${leaf.id}`, { headers: { cookie: dash.cookie } });
    expect(pageRes.status).toBe(200);
    const dashHtml = await pageRes.text();
    expect(dashHtml).toContain(leaf.id);
    for (const secret of [a.sid, leaf.intent_id]) expect(dashHtml).not.toContain(secret);

    // what the payee could try with the intent id: the old link shape, and the new shape with any token
    await expectOldShapeRefused(leaf.intent_id);
    for (const token of ["0".repeat(64), leaf.intent_id, a.sid, leaf.id]) expect((await post(`${PATH}/${leaf.intent_id}/${token}`, "approve")).status).toBe(404);
    expect(await ledgerState(leaf.intent_id)).toBe("awaiting_approval");
    const still = await a.resume();
    expect(still.status).toBe(202);
    expect(still.body.code).toBe("user_action_required");
    // the link in the resumed answer is the same link as before
    expect(linkFor(still, LEAF)).toBe(linkFor(a.first, LEAF));
  }, 90_000);

  test("the buyer refusing at its link (the page's form) makes the agent's resume 402 PAYMENT_NOT_APPROVED", async () => {
    const a = await checkout([{ product_id: GREEN, quantity: 1 }], { [LEAF]: "tok_needs_approval" }, crypto.randomUUID());
    const link = linkFor(a.first, LEAF);
    const form = await srv.fetch(`${link}/reject`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "" });
    expect(form.status).toBe(303);
    expect(form.headers.get("location")).toBe(link);
    const after = await srv.fetch(link);
    expect(after.status).toBe(200);
    expect(await after.text()).toContain("nothing left to decide");
    const r = await a.resume();
    expect(r.status).toBe(402);
    expect(r.body.success).toBe(false);
    expect(r.body.code).toBe("PAYMENT_NOT_APPROVED");
  }, 90_000);

  test("a wrong token on an existing intent is answered exactly as an unknown intent: same status, type and body, page and decisions alike", async () => {
    const a = await checkout([{ product_id: GREEN, quantity: 1 }], { [LEAF]: "tok_needs_approval" }, crypto.randomUUID());
    const real = linkFor(a.first, LEAF);
    const intent = real.split("/")[5]!;
    const token = real.split("/")[6]!;
    const unknown = UNKNOWN;
    const wrongTokens = ["0".repeat(64), token.replace(/.$/, (c) => (c === "0" ? "1" : "0")), token.slice(0, 63), "x"];
    for (const wrong of wrongTokens) {
      const existing = await shape(await srv.fetch(`${PATH}/${intent}/${wrong}`), intent);
      const none = await shape(await srv.fetch(`${PATH}/${unknown}/${wrong}`), unknown);
      expect(existing).toEqual(none);
      expect(existing.status).toBe(404);
      for (const d of ["approve", "reject"]) {
        const init = { method: "POST", headers: { "content-type": "application/json" }, body: "{}" };
        const e = await shape(await srv.fetch(`${PATH}/${intent}/${wrong}/${d}`, init), intent);
        const n = await shape(await srv.fetch(`${PATH}/${unknown}/${wrong}/${d}`, init), unknown);
        expect(e).toEqual(n);
        expect(e.status).toBe(404);
        expect(JSON.parse(e.body)).toEqual({ success: false, error: "No sandbox payment with that intent id.", code: "not_found", details: { intent_id: "<id>" } });
      }
    }
    // without a token at all both are the same unknown route
    expect(await shape(await srv.fetch(`${PATH}/${intent}`), intent)).toEqual(await shape(await srv.fetch(`${PATH}/${unknown}`), unknown));
    expect(await ledgerState(intent)).toBe("awaiting_approval");
    // and the real link still works
    expect((await post(real, "approve")).status).toBe(200);
    expect((await a.resume()).status).toBe(200);
  }, 90_000);
});
