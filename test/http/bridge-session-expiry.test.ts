/**
 * An ACP/UCP session whose cart expired (review RM-F1). A cart idle for a day expires (docs/checkout.md R5-5), also
 * one whose checkout ended with some stores paid, but the session and its paid orders stay. Its read and cancel used
 * to answer the cart's 404 CART_NOT_FOUND "create a new cart": the agent lost sight of the paid order and could buy
 * the paid goods again. The session now reads as canceled, with the paid order, its lines and a note. Through HTTP
 * against the real server with a manual clock.
 */
import { describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD, GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO } from "../helpers/two-store-session.ts";
import { decideAtProtocolLinks } from "../helpers/sandbox-approval.ts";

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
const clock = new ManualClock(Date.now());
const srv = useServer({ seed: true, boot: { clock } });

type Res = { status: number; body: any };
const send = (k: TestKey, method: string, path: string, body?: unknown) => sendAs(srv, k, method, path, body);

interface Bridge {
  name: "ACP" | "UCP";
  create: (k: TestKey, items: string[]) => Promise<Res>;
  update: (k: TestKey, id: string, items: string[]) => Promise<Res>;
  complete: (k: TestKey, id: string, token: string) => Promise<Res>;
  get: (k: TestKey, id: string) => Promise<Res>;
  cancel: (k: TestKey, id: string) => Promise<Res>;
  /** A session's lines as [item id, quantity]. */
  lines: (r: Res) => [string, number][];
  /** The total of a session. */
  total: (r: Res) => number;
  errorOf: (r: Res) => { code: string; details: Record<string, unknown> };
  infos: (r: Res) => string[];
}

const acp: Bridge = {
  name: "ACP",
  create: (k, items) => send(k, "POST", ACP, { items: items.map((id) => ({ id, quantity: 1 })) }),
  update: (k, id, items) => send(k, "POST", `${ACP}/${id}`, { items: items.map((i) => ({ id: i, quantity: 1 })) }),
  complete: (k, id, token) => send(k, "POST", `${ACP}/${id}/complete`, { payment_data: { token, provider: "stripe" } }),
  get: (k, id) => srv.json(`${ACP}/${id}`, { headers: k.headers }),
  cancel: (k, id) => send(k, "POST", `${ACP}/${id}/cancel`, {}),
  lines: (r) => r.body.line_items.map((l: { item: { id: string; quantity: number } }) => [l.item.id, l.item.quantity]),
  total: (r) => r.body.totals.find((t: { type: string }) => t.type === "total").amount,
  errorOf: (r) => ({ code: r.body.code, details: r.body.details }),
  infos: (r) => (r.body.messages as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => m.content),
};

const ucp: Bridge = {
  name: "UCP",
  create: (k, items) => send(k, "POST", UCP, { line_items: items.map((id) => ({ item: { id }, quantity: 1 })) }),
  update: (k, id, items) => send(k, "PUT", `${UCP}/${id}`, { line_items: items.map((i) => ({ item: { id: i }, quantity: 1 })) }),
  complete: (k, id, token) => send(k, "POST", `${UCP}/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } }),
  get: (k, id) => srv.json(`${UCP}/${id}`, { headers: k.headers }),
  cancel: (k, id) => send(k, "POST", `${UCP}/${id}/cancel`, {}),
  lines: (r) => r.body.line_items.map((l: { item: { id: string }; quantity: number }) => [l.item.id, l.quantity]),
  total: (r) => r.body.totals.find((t: { type: string }) => t.type === "total").amount,
  errorOf: (r) => ({ code: r.body.messages[0].code, details: r.body.messages[0].details }),
  infos: (r) => (r.body.messages as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => m.content),
};

const cartOf = async (id: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${id}`)[0]!.cart_id;

/** A two-store session whose buyer approved demo-store and refused greenleaf: demo-store paid, greenleaf not. */
async function partlyPaidSession(b: Bridge, k: TestKey): Promise<{ id: string; paid: { id: string; total: number } }> {
  const created = await b.create(k, [BOARD, GREEN]);
  expect(created.status).toBe(201);
  const id: string = created.body.id;
  const waiting = await b.complete(k, id, "tok_needs_approval");
  expect(waiting.status).toBe(200);
  const legs = await srv.db.sql<{ id: string; store_slug: string; intent_id: string; total: number }[]>`
    SELECT id::text AS id, store_slug, intent_id, total_minor::int AS total FROM orders WHERE cart_id = ${await cartOf(id)}`;
  // decided at the links the protocol hands out (review RA-5)
  await decideAtProtocolLinks(srv, waiting, () => b.get(k, id), (store) => (store === DEMO ? "approve" : "reject"), 2);
  expect((await b.complete(k, id, "tok_needs_approval")).status).toBe(402);
  const paid = legs.find((l) => l.store_slug === DEMO)!;
  return { id, paid: { id: paid.id, total: paid.total } };
}

/** Lets the cart's session expire (30 min) and then the idle cart (a day). */
async function letTheCartExpire(): Promise<void> {
  clock.advance(31 * MINUTE_MS);
  await Bun.sleep(1500); // the session's expiry reminder runs
  clock.advance(DAY_MS);
}

for (const b of [acp, ucp]) {
  describe(`${b.name}: a partly paid session whose cart expired`, () => {
    test("canceled first: a read a day later answers 200 canceled with the paid order, its line and total, and the note", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paid } = await partlyPaidSession(b, k);
      expect((await b.cancel(k, id)).status).toBe(200);
      clock.advance(DAY_MS + MINUTE_MS);
      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id, status: "canceled", order: { id: paid.id } });
      expect(b.lines(read)).toEqual([[BOARD, 1]]);
      expect(b.total(read)).toBe(paid.total);
      expect(b.infos(read)).toEqual([`${DEMO} was paid (order ${paid.id}) and stays paid; the other stores were not charged.`]);
    });

    test("left open: a read answers canceled with the paid order, a cancel answers 200, and an items update or a complete is 409 SESSION_INACTIVE", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paid } = await partlyPaidSession(b, k);
      await letTheCartExpire();
      const note = `${DEMO} was paid (order ${paid.id}) and stays paid; the session's cart expired after a day without changes and the other stores were not charged.`;
      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ status: "canceled", order: { id: paid.id } });
      expect(b.infos(read)).toEqual([note]);

      const update = await b.update(k, id, [BOARD]);
      expect(update.status).toBe(409);
      expect(b.errorOf(update)).toMatchObject({ code: "SESSION_INACTIVE", details: { checkout_session_id: id, status: "expired" } });
      const complete = await b.complete(k, id, "tok_approve");
      expect(complete.status).toBe(409);
      expect(b.errorOf(complete)).toMatchObject({ code: "SESSION_INACTIVE", details: { checkout_session_id: id, status: "expired" } });

      const canceled = await b.cancel(k, id);
      expect(canceled.status).toBe(200);
      expect(canceled.body).toMatchObject({ status: "canceled", order: { id: paid.id } });
      expect(b.infos(canceled)).toEqual([`${DEMO} was paid (order ${paid.id}) and stays paid; the other stores were not charged.`]);
      const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${paid.id}`;
      expect(o!.status).toBe("paid");
    });
  });

  describe(`${b.name}: an unpaid session whose cart expired`, () => {
    test("reads as canceled with no lines and a note that nothing was charged", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, [GREEN]);
      const id: string = created.body.id;
      await letTheCartExpire();
      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      expect(read.body.status).toBe("canceled");
      expect(read.body.order).toBeUndefined();
      expect(b.lines(read)).toEqual([]);
      expect(b.total(read)).toBe(0);
      expect(b.infos(read)).toEqual(["The session's cart expired after a day without changes; nothing was charged. Create a new session to buy these items."]);
    });
  });
}

describe("ACP 2026-04-17: a session whose cart expired", () => {
  test("reads as expired in 2026-04-17, whose statuses have it (2025-09-29's read says canceled), with the note that nothing was charged", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await acp.create(k, [GREEN]);
    const id: string = created.body.id;
    await letTheCartExpire();
    const read26 = await srv.json(`${ACP}/${id}`, { headers: { ...k.headers, "api-version": "2026-04-17" } });
    expect(read26.status).toBe(200);
    expect(read26.body).toMatchObject({ id, status: "expired", protocol: { version: "2026-04-17" }, line_items: [] });
    expect(acp.infos(read26)).toEqual(["The session's cart expired after a day without changes; nothing was charged. Create a new session to buy these items."]);
    expect((await acp.get(k, id)).body.status).toBe("canceled");
  });
});
