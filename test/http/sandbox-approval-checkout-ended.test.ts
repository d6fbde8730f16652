/**
 * The sandbox card processor's buyer link after the checkout ended unpaid (helper B, B-4). The link (the 202
 * user_action_required answer's approval_url) kept answering `approved`, and its page said "approved", after the
 * session was canceled or expired: nothing could capture it any more, so the buyer was told something false. Now a
 * session that ends unpaid withdraws its waiting intents at the rail (`voidIntent`), and the link refuses: 409
 * `conflict` (`details.state: voided`, `reason: checkout_ended`), as a page saying the checkout is no longer payable
 * for a browser, as the error envelope otherwise (docs/checkout.md "Payment method").
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";
import { SKILLET, sessionStatusOf } from "../helpers/due-session.ts";

const APPROVAL_HOLD_MS = 60 * 60_000; // docs/checkout.md "Expiry": PENDING_EXTERNAL_CONFIRMATION 1 h

const clock = new ManualClock(Date.now());
const srv = useServer({ seed: true, boot: { clock } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };

/** A checkout waiting for the buyer: its cart, session and the buyer's link (a path). */
async function waitingForBuyer(): Promise<{ cartId: string; sessionId: string; link: string; intentId: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const w = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() },
  });
  expect(w.status).toBe(202);
  const link = approvalLink(w, "demo-store");
  return { cartId, sessionId: w.body.details.checkout_session_id as string, link, intentId: link.split("/")[5]! };
}

const cancel = (sessionId: string) => srv.json(`/api/v1/agent/checkout/${sessionId}/cancel`, { method: "POST", headers: key.headers, body: {} });
const page = async (link: string) => {
  const r = await srv.fetch(link, { headers: { accept: "text/html,application/xhtml+xml" } });
  return { status: r.status, html: await r.text() };
};
const ledgerState = async (intentId: string) =>
  (await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`)[0]?.state;
const sessionStatus = (cartId: string) => sessionStatusOf(srv, cartId);
/** The refusal a client reading JSON gets. */
const refusal = (r: Res) => ({ status: r.status, code: r.body.code, state: r.body.details?.state, reason: r.body.details?.reason });
const ENDED = { status: 409, code: "conflict", state: "voided", reason: "checkout_ended" };

describe("a buyer link whose checkout ended unpaid", () => {
  test("approved, then the agent canceled the checkout: the link no longer says approved; its page, its JSON and its buttons say the checkout is no longer payable", async () => {
    const w = await waitingForBuyer();
    const approved = await decideAt(srv, w.link, "approve");
    expect({ status: approved.status, payment: approved.body.data?.status }).toEqual({ status: 200, payment: "approved" });
    expect((await cancel(w.sessionId)).status).toBe(200);

    const p = await page(w.link);
    expect(p.status).toBe(409);
    expect(p.html).toContain("This checkout is no longer payable");
    expect(p.html).not.toContain("This payment is approved");
    expect(p.html).not.toContain('action="');
    expect(refusal(await srv.json(w.link))).toEqual(ENDED);
    expect(refusal(await decideAt(srv, w.link, "approve"))).toEqual(ENDED);
    expect(refusal(await decideAt(srv, w.link, "reject"))).toEqual(ENDED);
    expect(await ledgerState(w.intentId)).toBe("voided");
    const [o] = await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE cart_id = ${w.cartId}`;
    expect({ ...o }).toEqual({ status: "canceled", capture_ref: null });
  }, 60_000);

  test("canceled before the buyer decided: approving at the link is refused, and the page's own button leads back to the page that says so", async () => {
    const w = await waitingForBuyer();
    expect((await cancel(w.sessionId)).status).toBe(200);
    expect(refusal(await decideAt(srv, w.link, "approve"))).toEqual(ENDED);
    const button = await srv.fetch(`${w.link}/approve`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "", redirect: "manual" });
    expect({ status: button.status, location: button.headers.get("location") }).toEqual({ status: 303, location: w.link });
    expect((await page(w.link)).html).toContain("This checkout is no longer payable");
    expect(await ledgerState(w.intentId)).toBe("voided");
  }, 60_000);

  test("approved, then the approval hold expired: once the session's timer ended it, the link refuses and nothing was captured", async () => {
    const w = await waitingForBuyer();
    expect((await decideAt(srv, w.link, "approve")).status).toBe(200);
    clock.advance(APPROVAL_HOLD_MS + 60_000);
    await until("the session timer", () => sessionStatus(w.cartId), (s) => s === "EXPIRED");
    expect(refusal(await srv.json(w.link))).toEqual(ENDED);
    const p = await page(w.link);
    expect({ status: p.status, ended: p.html.includes("This checkout is no longer payable") }).toEqual({ status: 409, ended: true });
    expect(await ledgerState(w.intentId)).toBe("voided");
  }, 60_000);

  test("a link whose checkout is still waiting answers as before: the page with both buttons, 200", async () => {
    const w = await waitingForBuyer();
    const p = await page(w.link);
    expect(p.status).toBe(200);
    expect(p.html).toContain(`action="${w.link}/approve"`);
    expect(await ledgerState(w.intentId)).toBe("awaiting_approval");
  }, 60_000);
});
