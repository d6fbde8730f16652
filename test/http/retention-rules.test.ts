/**
 * The data-retention job (audit W-3, W-4; infra/retention.ts): each rule deletes the rows whose time has come and
 * keeps the ones something still reads. Runs are called directly with a chosen "now" (the job's own timer is off here,
 * RETENTION_INTERVAL_MS = 0); the last test boots a server whose job runs by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, ADMIN, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { DELETE_STATEMENTS, MARKING_STATEMENTS, runRetention, type RetentionSettings } from "../../infra/retention.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store (owned by the admin)
const DAY = 24 * 60 * 60 * 1000;
const SETTINGS: RetentionSettings = {
  RETENTION_BATCH: 2,
  RETENTION_OAUTH_GRACE_DAYS: 1,
  RETENTION_CART_GRACE_DAYS: 7,
  RETENTION_WEBHOOK_EVENT_DAYS: 30,
  RETENTION_WEBHOOK_DELIVERY_DAYS: 30,
  RETENTION_BRIDGE_IDEMPOTENCY_DAYS: 7,
  RETENTION_RESERVATION_GRACE_DAYS: 7,
  RETENTION_AP2_MANDATE_GRACE_DAYS: 7,
};

let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0, ACTOR_IDLE_MS: 300 } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

const run = (nowMs: number) => runRetention(srv.db.sql, SETTINGS, nowMs);

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}
/**
 * How many rows a rule's scan read from its partial index `index` in one batch at `nowMs`: the statement is run
 * under EXPLAIN ANALYZE and rolled back. The planner is held to indexes (as on a table of real size; these test
 * tables are small enough for a sequential scan), and the scan must be the index's, or the count says nothing.
 */
async function rowsWalked(rule: keyof typeof MARKING_STATEMENTS | keyof typeof DELETE_STATEMENTS, index: string, nowMs: number): Promise<number> {
  const statement = rule in MARKING_STATEMENTS ? MARKING_STATEMENTS[rule as keyof typeof MARKING_STATEMENTS] : DELETE_STATEMENTS[rule as keyof typeof DELETE_STATEMENTS];
  let walked: number | undefined;
  const rollback = new Error("rollback");
  await srv.db.sql
    .begin(async (tx) => {
      // JIT would compile the statement for the huge costs that turning sequential scans off gives them: seconds
      await tx`SET LOCAL enable_seqscan = off`;
      await tx`SET LOCAL jit = off`;
      const [row] = await tx<{ "QUERY PLAN": { Plan: PlanNode }[] }[]>`EXPLAIN (ANALYZE, FORMAT JSON) ${statement(srv.db.sql, SETTINGS, nowMs, 1000)}`;
      const nodes: PlanNode[] = [];
      const visit = (n: PlanNode) => {
        if (n["Index Name"] === index) nodes.push(n);
        for (const c of n.Plans ?? []) visit(c);
      };
      visit(row!["QUERY PLAN"][0]!.Plan);
      expect(nodes.length).toBe(1);
      // a bitmap index scan's rows are the index entries it matched; an index scan's, those it kept plus those its filter dropped
      walked = nodes.reduce((sum, n) => sum + (n["Actual Rows"] + (n["Rows Removed by Filter"] ?? 0)) * n["Actual Loops"], 0);
      throw rollback;
    })
    .catch((e: unknown) => {
      if (e !== rollback) throw e;
    });
  return walked!;
}

describe("OAuth codes and refresh tokens", () => {
  const hex = (c: string) => c.repeat(64);
  const at = (ms: number) => new Date(ms);

  async function insertCode(hash: string, family: string, expiresAt: number): Promise<void> {
    await srv.db.sql`
      INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at, used_at)
      SELECT ${hash}, 'client-r', id, 'http://127.0.0.1/cb', ${"a".repeat(43)}, ${["mcp"]}, 'http://r', ${family}, ${at(expiresAt)}, ${at(expiresAt)}
      FROM users WHERE email = ${ADMIN.email}`;
  }
  async function insertToken(hash: string, family: string, expiresAt: number, usedAt: number | null = null): Promise<void> {
    await srv.db.sql`
      INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scopes, resource, expires_at, used_at)
      SELECT ${hash}, ${family}, 'client-r', id, ${["mcp"]}, 'http://r', ${at(expiresAt)}, ${usedAt === null ? null : at(usedAt)}
      FROM users WHERE email = ${ADMIN.email}`;
  }
  const codes = async () => (await srv.db.sql<{ code_hash: string }[]>`SELECT code_hash FROM oauth_codes ORDER BY 1`).map((r) => r.code_hash);
  const tokens = async () => (await srv.db.sql<{ token_hash: string }[]>`SELECT token_hash FROM oauth_refresh_tokens ORDER BY 1`).map((r) => r.token_hash);

  test("a refresh token expired more than the grace ago is deleted; one expired less long, and a used one still valid, are kept", async () => {
    const now = Date.now();
    const live = crypto.randomUUID();
    const dead = crypto.randomUUID();
    await insertToken(hex("1"), dead, now - 2 * DAY, now - 40 * DAY);
    await insertToken(hex("2"), dead, now - 2 * DAY);
    await insertToken(hex("3"), dead, now - DAY / 2);
    await insertToken(hex("4"), live, now + 20 * DAY, now - DAY); // used, unexpired: its reuse must still revoke the family
    await insertToken(hex("5"), live, now + 29 * DAY);
    const deleted = await run(now);
    expect(deleted.oauth_refresh_tokens).toBe(2);
    expect(await tokens()).toEqual([hex("3"), hex("4"), hex("5")]);
  });

  test("an expired code is deleted once its token family has no live token, and kept while one lives (its replay revokes them)", async () => {
    const now = Date.now();
    const live = crypto.randomUUID();
    const revoked = crypto.randomUUID();
    await insertCode(hex("a"), crypto.randomUUID(), now - 2 * DAY); // never redeemed: no family at all
    await insertCode(hex("b"), live, now - 20 * DAY);
    await insertToken(hex("6"), live, now + 10 * DAY);
    await insertCode(hex("c"), revoked, now - 20 * DAY);
    await insertToken(hex("7"), revoked, now + 10 * DAY);
    await srv.db.sql`UPDATE oauth_refresh_tokens SET revoked_at = now() WHERE family_id = ${revoked}`;
    await insertCode(hex("d"), crypto.randomUUID(), now - DAY / 2); // within the grace
    const deleted = await run(now);
    expect(deleted.oauth_codes).toBe(2);
    expect(await codes()).toEqual([hex("b"), hex("d")]);
  });
});

describe("carts", () => {
  const newCart = async (): Promise<string> => {
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  const stored = async (ids: string[]) =>
    (await srv.db.sql<{ id: string }[]>`SELECT id FROM actor_state WHERE kind = 'cart' AND id IN ${srv.db.sql(ids)} ORDER BY id`).map((r) => r.id).sort();

  test("an expired cart goes a grace period after its expiry; one named by an order, an AP2 mandate binding or a live checkout stays", async () => {
    const idle = await newCart();
    const bridged = await newCart();
    // an AP2 row is never deleted (it binds a mandate to the one cart it pays), so it keeps its cart for good; an
    // ACP/UCP session goes with its cart (next describe)
    await srv.db.sql`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id) VALUES (${`ap2_${crypto.randomUUID()}`}, 'ap2', ${key.id}, ${bridged})`;
    const checkingOut = await newCart();
    expect((await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: checkingOut } })).status).toBe(200);
    const orderId = await placeOrder(srv, key, BOARD);
    const [{ cart_id: ordered }] = await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM orders WHERE id = ${orderId}`;
    const all = [idle, bridged, checkingOut, ordered];
    // so that each is kept by the rule under test alone: the previewed cart's session reminder goes, and it and the
    // paid cart read OPEN (a declined payment's cart is OPEN with its order; a live session's, CHECKOUT)
    await srv.db.sql`DELETE FROM actor_reminders WHERE kind = 'cart' AND id = ${checkingOut}`;
    await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{cart,status}', '"OPEN"') WHERE kind = 'cart' AND id IN ${srv.db.sql([checkingOut, ordered])}`;

    const now = Date.now();
    expect((await run(now + 1 * DAY + 6 * DAY)).carts).toBe(0);
    expect(await stored(all)).toEqual([...all].sort());
    expect((await run(now + 1 * DAY + 7 * DAY + 60_000)).carts).toBe(1);
    expect(await stored(all)).toEqual([bridged, checkingOut, ordered].sort());

    // once its activation is gone, the deleted cart reads as an expired one does
    await waitFor("the cart activation passivated", () => srv.running.host!.activationCount("cart") === 0);
    const gone = await srv.json(`/api/v1/agent/cart/${idle}`, { headers: key.headers });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe("CART_NOT_FOUND");
    expect(gone.body.success).toBe(false);
  }, 30_000);

  // as an OPEN cart's turn writes it: the state's expiry, and the index's column (migration 0096) with it
  const setExpiry = (ids: string[], expiresAt: number) =>
    srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{cart,expiresAt}', ${String(expiresAt)}::text::jsonb), expiry_ms = ${expiresAt}
      WHERE kind = 'cart' AND id IN ${srv.db.sql(ids)}`;

  test("a batch reads only the carts whose expiry passed the horizon from the cart index, never a live one; a paid one is read once and leaves the index (migrations 0089, 0096)", async () => {
    const live = [await newCart(), await newCart()];
    const due = await newCart();
    const paid = await newCart();
    await setExpiry([due, paid], Date.now() - 30 * DAY);
    // paid as its turn pays it: the column is left as the cart had it when OPEN (the update stays HOT)
    await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{cart,status}', '"COMPLETED"') WHERE kind = 'cart' AND id = ${paid}`;
    const scanAt = Date.now();
    const [{ n: past }] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart' AND state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED')
        AND (state->'cart'->>'expiresAt')::bigint < ${scanAt - 7 * DAY}`;
    const [{ n: carts }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`;
    expect(past).toBeGreaterThanOrEqual(1);
    expect(carts).toBeGreaterThanOrEqual(past + live.length + 1);
    expect(await rowsWalked("carts", "actor_state_cart_expiry_ms", scanAt)).toBe(past + 1);
    expect(await stored([due, paid, ...live])).toEqual([due, paid, ...live].sort()); // EXPLAIN's run was rolled back
    expect((await run(scanAt)).carts).toBeGreaterThanOrEqual(1);
    expect(await stored([due, paid, ...live])).toEqual([paid, ...live].sort());
    // the paid cart left the index: the next run does not read it again
    const [{ expiry_ms }] = await srv.db.sql<{ expiry_ms: string | null }[]>`SELECT expiry_ms FROM actor_state WHERE kind = 'cart' AND id = ${paid}`;
    expect(expiry_ms).toBeNull();
    expect(await rowsWalked("carts", "actor_state_cart_expiry_ms", scanAt)).toBe(0);
  }, 30_000);

  test("carts kept ahead of a due one in expiry order do not stop a run: each batch goes on after the last cart it examined", async () => {
    const kept = [await newCart(), await newCart(), await newCart()];
    const due = await newCart();
    // an AP2 binding without a recorded expiry keeps its cart for good (first test)
    for (const id of kept) await srv.db.sql`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id) VALUES (${`ap2_${crypto.randomUUID()}`}, 'ap2', ${key.id}, ${id})`;
    // the kept carts expired first, so the batches of 2 (SETTINGS) examine them before the due one
    const base = Date.now() - 60 * DAY;
    for (const [i, id] of [...kept, due].entries()) await setExpiry([id], base + i);
    await run(Date.now());
    expect(await stored([...kept, due])).toEqual([...kept].sort());
  }, 30_000);
});

describe("webhook outbox events", () => {
  test("a dispatched event that got no delivery goes after the retention age; one with a delivery stays", async () => {
    const orderWithout = await placeOrder(srv, key, BOARD);
    const token = await login(srv);
    const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: { url: "http://127.0.0.1:9/hooks/retention", events: ["order.created"] },
    });
    expect(ep.status).toBe(201);
    const orderWith = await placeOrder(srv, key, BOARD);
    const eventsOf = (orderId: string) =>
      srv.db.sql<{ kind: string; dispatched: boolean; deliveries: number }[]>`
        SELECT kind, webhook_event_dispatched(dispatched_at, fanout_xid) AS dispatched, (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries
        FROM webhook_events e WHERE payload::text LIKE ${`%${orderId}%`} ORDER BY kind`;
    await waitFor("the events dispatched", async () => [...(await eventsOf(orderWithout)), ...(await eventsOf(orderWith))].every((e) => e.dispatched));
    expect([...(await eventsOf(orderWithout))]).toEqual([{ kind: "order.created", dispatched: true, deliveries: 0 }, { kind: "order.status_changed", dispatched: true, deliveries: 0 }]);
    expect((await eventsOf(orderWith)).find((e) => e.kind === "order.created")?.deliveries).toBe(1);

    const now = Date.now();
    expect((await run(now + 29 * DAY)).webhook_events).toBe(0);
    await run(now + 31 * DAY);
    expect([...(await eventsOf(orderWithout))]).toEqual([]);
    expect([...(await eventsOf(orderWith))]).toEqual([{ kind: "order.created", dispatched: true, deliveries: 1 }]);
  }, 30_000);
});

describe("ACP/UCP sessions (session 9)", () => {
  const newCart = async (): Promise<string> => {
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  async function session(protocol: "acp" | "ucp" | "ap2", cartId: string, extra: { canceled?: boolean; updatedInMs?: number; claimedForMs?: number } = {}): Promise<string> {
    const id = `${protocol === "acp" ? "cs" : protocol}_${crypto.randomUUID().replace(/-/g, "")}`;
    await srv.db.sql`
      INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta, canceled_at, updated_at, claim_id, claimed_until)
      VALUES (${id}, ${protocol}, ${key.id}, ${cartId}, ${srv.db.sql.json({ currency: "USD" })}, ${extra.canceled ? new Date() : null},
        now() + ${extra.updatedInMs ?? 0} * interval '1 millisecond',
        ${extra.claimedForMs ? crypto.randomUUID() : null}, ${extra.claimedForMs ? new Date(Date.now() + extra.claimedForMs) : null})`;
    return id;
  }
  const sessionsLeft = async (ids: string[]) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM bridge_sessions WHERE id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();
  const cartsLeft = async (ids: string[]) =>
    (await srv.db.sql<{ id: string }[]>`SELECT id FROM actor_state WHERE kind = 'cart' AND id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();

  test("an ended session goes with its cart a grace after the cart's expiry; one whose cart has an order or a live checkout, one changed within the grace, one a write holds, and an AP2 binding stay", async () => {
    const carts = { ended: await newCart(), canceled: await newCart(), checkingOut: await newCart(), recent: await newCart(), busy: await newCart(), ap2: await newCart() };
    const orderId = await placeOrder(srv, key, BOARD);
    const [{ cart_id: paidCart }] = await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM orders WHERE id = ${orderId}`;
    expect((await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: carts.checkingOut } })).status).toBe(200);
    // the paid cart reads OPEN (a declined payment's cart is OPEN with its order), so that only its order keeps it
    await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{cart,status}', '"OPEN"') WHERE kind = 'cart' AND id = ${paidCart}`;
    await srv.db.sql`UPDATE actor_state SET state = jsonb_set(state, '{cart,status}', '"ABANDONED"') WHERE kind = 'cart' AND id = ${carts.canceled}`;
    const s = {
      ended: await session("acp", carts.ended),
      canceled: await session("ucp", carts.canceled, { canceled: true }),
      paid: await session("acp", paidCart),
      checkingOut: await session("ucp", carts.checkingOut),
      recent: await session("acp", carts.recent, { updatedInMs: 2 * DAY }),
      busy: await session("acp", carts.busy, { claimedForMs: 30 * DAY }),
      ap2: await session("ap2", carts.ap2),
    };
    const allSessions = Object.values(s);
    const allCarts = [...Object.values(carts), paidCart];

    const now = Date.now();
    await run(now + 1 * DAY + 6 * DAY);
    expect(await sessionsLeft(allSessions)).toEqual([...allSessions].sort());
    expect(await cartsLeft(allCarts)).toEqual([...allCarts].sort());

    const deleted = await run(now + 1 * DAY + 7 * DAY + 60_000);
    expect(deleted.bridge_sessions).toBeGreaterThanOrEqual(2);
    expect(await sessionsLeft(allSessions)).toEqual([s.paid, s.checkingOut, s.recent, s.busy, s.ap2].sort());
    // the ended sessions' carts went in the same run (the session rule runs first); the others stay with their session
    expect(await cartsLeft(allCarts)).toEqual([paidCart, carts.checkingOut, carts.recent, carts.busy, carts.ap2].sort());

    const gone = await srv.json(`/api/v1/agent/acp/checkout_sessions/${s.ended}`, { headers: key.headers });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ type: "invalid_request", code: "CHECKOUT_SESSION_NOT_FOUND", message: "No such checkout session.", details: { checkout_session_id: s.ended } });
    const goneUcp = await srv.json(`/api/v1/agent/ucp/checkout-sessions/${s.canceled}`, { headers: key.headers });
    expect(goneUcp.status).toBe(404);
    // a kept session still reads from its cart
    const kept = await srv.json(`/api/v1/agent/acp/checkout_sessions/${s.recent}`, { headers: key.headers });
    expect(kept.status).toBe(200);
    expect(kept.body.id).toBe(s.recent);
  }, 30_000);
  test("a session whose write claim the database's clock still counts as live stays, however far ahead the job's clock runs; the same session unclaimed goes (review RB-3)", async () => {
    const carts = { held: await newCart(), free: await newCart() };
    // a write claimed it an hour ago by the database's clock (withSessionClaim sets now() + the lease)
    const held = await session("acp", carts.held);
    await srv.db.sql`UPDATE bridge_sessions SET claim_id = ${crypto.randomUUID()}, claimed_until = now() + interval '1 hour' WHERE id = ${held}`;
    const free = await session("acp", carts.free);
    // the job's clock reads 8 days later: both carts are past their grace, only the claim differs
    const deleted = await run(Date.now() + 1 * DAY + 7 * DAY + 60_000);
    expect(deleted.bridge_sessions).toBeGreaterThanOrEqual(1);
    expect(await sessionsLeft([held, free])).toEqual([held]);
    expect(await cartsLeft(Object.values(carts))).toEqual([carts.held]);
  }, 30_000);
  test("a session kept for good because an order names its cart is marked by the run that finds it, and no later batch reads it again (review RG-4)", async () => {
    const { beginLegRows, cancelPendingOrderRows } = await import("../../actors/store/commerce.ts");
    // sessions last changed 1000 days ago, so the scan below (cutoff 990 days ago) can meet no other test's rows
    const ago = -1000 * DAY;
    const ordered: string[] = [];
    for (let i = 0; i < 5; i++) {
      const orderId = crypto.randomUUID();
      const cartId = crypto.randomUUID();
      await beginLegRows(srv.db.sql, "demo-store", {
        orderId, checkoutSessionId: `sess-${orderId}`, cartId, reservationId: `r-${crypto.randomUUID()}`, agentKeyId: key.id, currency: "USD",
        paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
        totalMinor: 100, lines: [{ productId: BOARD, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
      }, Date.now());
      // canceled, so it holds no stock for the tests after this one; a canceled order names its cart for good too
      await cancelPendingOrderRows(srv.db.sql, "demo-store", { orderId, reason: "session_expired" }, Date.now());
      ordered.push(await session(i % 2 ? "ucp" : "acp", cartId, { updatedInMs: ago }));
    }
    const scanAt = Date.now() - 990 * DAY + SETTINGS.RETENTION_CART_GRACE_DAYS * DAY;
    const now = Date.now();
    await run(now);
    expect(await sessionsLeft(ordered)).toEqual([...ordered].sort());
    expect(await rowsWalked("bridge_sessions", "bridge_sessions_retention", scanAt)).toBe(0);
    await run(now);
    expect(await sessionsLeft(ordered)).toEqual([...ordered].sort());

    // the mark names the cart that kept it: moved to a cart no order names (an ACP items update), the session is a
    // candidate again and goes with that cart once the cart is out of use
    const moved = ordered[0]!;
    const newCartId = await newCart();
    await srv.db.sql`UPDATE bridge_sessions SET cart_id = ${newCartId}, updated_at = now() - interval '1000 days' WHERE id = ${moved}`;
    expect(await rowsWalked("bridge_sessions", "bridge_sessions_retention", scanAt)).toBe(1);
    await run(Date.now() + 1 * DAY + 7 * DAY + 60_000);
    expect(await sessionsLeft(ordered)).toEqual(ordered.slice(1).sort());
    expect(await cartsLeft([newCartId])).toEqual([]);
  }, 30_000);
});

describe("bridge Idempotency-Key records (session 9)", () => {
  const cancel = (sessionId: string, idemKey: string) =>
    srv.json(`/api/v1/agent/acp/checkout_sessions/${sessionId}/cancel`, { method: "POST", headers: { ...key.headers, "idempotency-key": idemKey }, body: {} });
  const keysLeft = async (keys: string[]) => (await srv.db.sql<{ key: string }[]>`SELECT key FROM bridge_idempotency WHERE key IN ${srv.db.sql(keys)}`).map((r) => r.key).sort();
  async function record(idemKey: string, finished: boolean, claimedUntilMs: number): Promise<void> {
    await srv.db.sql`
      INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, status, response, claimed_until, claim_id)
      VALUES ('acp', ${key.id}, ${idemKey}, 'h', ${finished ? 200 : null}, ${finished ? srv.db.sql.json({}) : null}, ${new Date(claimedUntilMs)}, ${crypto.randomUUID()})`;
  }

  test("a record goes once its last claim's lease ended more than the window ago, and its key then runs as new; a newer record and a live claim stay", async () => {
    const used = `retention-${crypto.randomUUID()}`;
    const first = await cancel("cs_retention_none_1", used);
    expect(first.status).toBe(404);
    expect(first.body.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    const conflict = await cancel("cs_retention_none_2", used);
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");

    const now = Date.now();
    const [recent, live, abandoned] = [`recent-${crypto.randomUUID()}`, `live-${crypto.randomUUID()}`, `abandoned-${crypto.randomUUID()}`];
    await record(recent, true, now + 2 * 60 * 60_000);
    await record(live, false, now + 8 * DAY); // a claim whose lease has not run out (a request still working)
    await record(abandoned, false, now - 60_000); // a claim its request never filled in (its lease ran out)
    const mine = [used, recent, live, abandoned];

    await run(now + 7 * DAY - 60 * 60_000);
    expect(await keysLeft(mine)).toEqual([...mine].sort());
    const deleted = await run(now + 7 * DAY + 60 * 60_000);
    expect(deleted.bridge_idempotency).toBeGreaterThanOrEqual(2);
    expect(await keysLeft(mine)).toEqual([recent, live].sort());

    // the key is free again: the other request runs (its own 404) instead of the conflict
    const again = await cancel("cs_retention_none_2", used);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: "cs_retention_none_2" } });
  }, 30_000);
  test("a repeat of the same request whose record the job deletes between the claim's insert and its read runs as new, not as a 409 IDEMPOTENCY_KEY_CONFLICT (review RB-2)", async () => {
    const idemKey = `vanish-${crypto.randomUUID()}`;
    const first = await cancel("cs_retention_vanish", idemKey);
    expect(first.status).toBe(404);
    expect(first.body.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    // the retention DELETE landing right after the repeat's INSERT: a statement trigger deletes this key's finished
    // record once the claim's INSERT ... ON CONFLICT DO NOTHING has found it (a new claim, status NULL, stays)
    await srv.db.sql.unsafe(`
      CREATE FUNCTION retention_vanish() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN DELETE FROM bridge_idempotency WHERE key LIKE 'vanish-%' AND status IS NOT NULL; RETURN NULL; END $$;
      CREATE TRIGGER retention_vanish AFTER INSERT ON bridge_idempotency FOR EACH STATEMENT EXECUTE FUNCTION retention_vanish();`);
    try {
      const again = await cancel("cs_retention_vanish", idemKey);
      expect(again.status).toBe(404);
      expect(again.headers.get("idempotent-replayed")).toBeNull();
      expect(again.body).toMatchObject({ code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: "cs_retention_vanish" } });
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER retention_vanish ON bridge_idempotency; DROP FUNCTION retention_vanish();`);
    }
    // the repeat recorded its own answer under the key
    const [row] = await srv.db.sql<{ status: number }[]>`SELECT status FROM bridge_idempotency WHERE key = ${idemKey}`;
    expect(row.status).toBe(404);
  }, 30_000);

  test("a claim the database's clock still counts as live stays, however far ahead the job's clock runs; an abandoned one goes (review RB-3)", async () => {
    const [live, abandoned] = [`live-db-${crypto.randomUUID()}`, `abandoned-db-${crypto.randomUUID()}`];
    await srv.db.sql`
      INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, claimed_until, claim_id)
      VALUES ('acp', ${key.id}, ${live}, 'h', now() + interval '1 hour', ${crypto.randomUUID()}),
             ('acp', ${key.id}, ${abandoned}, 'h', now() - interval '1 minute', ${crypto.randomUUID()})`;
    await run(Date.now() + 8 * DAY);
    expect(await keysLeft([live, abandoned])).toEqual([live]);
  }, 30_000);
});

describe("stock reservations (session 9)", () => {
  async function orderOf(): Promise<{ orderId: string; cartId: string }> {
    const orderId = await placeOrder(srv, key, BOARD);
    const [o] = await srv.db.sql<{ cart_id: string; status: string }[]>`SELECT cart_id::text AS cart_id, status FROM orders WHERE id = ${orderId}`;
    expect(o.status).toBe("paid");
    return { orderId, cartId: o.cart_id };
  }
  async function reservation(orderId: string, status: string, updatedInMs = 0): Promise<string> {
    const id = `r-${crypto.randomUUID()}`;
    await srv.db.sql`
      INSERT INTO stock_reservations (id, store_slug, order_id, lines, status, updated_at)
      VALUES (${id}, 'demo-store', ${orderId}, '[]'::jsonb, ${status}, now() + ${updatedInMs} * interval '1 millisecond')`;
    return id;
  }
  const left = async (ids: string[]) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM stock_reservations WHERE id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();

  test("a released or returned reservation goes a grace after its last change once its order moved on; held, committed and recent ones, and those of a pending order or of a cart with something due, stay; a replay of a deleted one is still refused", async () => {
    const paid = await orderOf();
    const pending = await orderOf();
    await srv.db.sql`UPDATE orders SET status = 'pending' WHERE id = ${pending.orderId}`;
    const due = await orderOf();
    await srv.db.sql`INSERT INTO actor_reminders (kind, id, name, due_at) VALUES ('cart', ${due.cartId}, 'retention-test', now() + interval '30 days')`;
    const r = {
      released: await reservation(paid.orderId, "released"),
      returned: await reservation(paid.orderId, "returned"),
      committed: await reservation(paid.orderId, "committed"),
      held: await reservation(paid.orderId, "held"),
      recent: await reservation(paid.orderId, "released", 2 * DAY),
      ofPending: await reservation(pending.orderId, "released"),
      ofDueCart: await reservation(due.orderId, "released"),
    };
    const all = Object.values(r);

    const now = Date.now();
    await run(now + 6 * DAY);
    expect(await left(all)).toEqual([...all].sort());
    const deleted = await run(now + 7 * DAY + 60_000);
    expect(deleted.stock_reservations).toBe(2);
    expect(await left(all)).toEqual([r.committed, r.held, r.recent, r.ofPending, r.ofDueCart].sort());

    // a late replay of the deleted released attempt holds nothing and leaves the paid order as it is
    const { beginLegRows } = await import("../../actors/store/commerce.ts");
    const leg = {
      orderId: paid.orderId, checkoutSessionId: `sess-${paid.orderId}`, cartId: paid.cartId, reservationId: r.released, agentKeyId: key.id, currency: "USD",
      paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
      totalMinor: 100, lines: [{ productId: BOARD, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
    };
    let code: string | null = null;
    try {
      await beginLegRows(srv.db.sql, "demo-store", leg, Date.now());
    } catch (e) {
      code = (e as { code?: string }).code ?? "thrown";
    }
    expect(code).toBe("STATE_EXECUTION_BLOCKED");
    const [o] = await srv.db.sql<{ status: string; intent_id: string }[]>`SELECT status, intent_id FROM orders WHERE id = ${paid.orderId}`;
    expect(o.status).toBe("paid");
    expect(o.intent_id).not.toBe(r.released);
    expect(await left([r.released])).toEqual([]);
    await srv.db.sql`DELETE FROM actor_reminders WHERE kind = 'cart' AND id = ${due.cartId} AND name = 'retention-test'`;
  }, 30_000);
  test("a canceled order's last attempt keeps its released mark past the grace, so a replay of that attempt is still refused (conflict); an earlier attempt's row goes and its replay is refused as the order is canceled (review RB-1)", async () => {
    const { beginLegRows, cancelPendingOrderRows } = await import("../../actors/store/commerce.ts");
    const orderId = crypto.randomUUID();
    const last = `r-${crypto.randomUUID()}`;
    const leg = {
      orderId, checkoutSessionId: `sess-${orderId}`, cartId: crypto.randomUUID(), reservationId: last, agentKeyId: key.id, currency: "USD",
      paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
      totalMinor: 100, lines: [{ productId: BOARD, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
    };
    const attempt = async (reservationId: string): Promise<string> => {
      try {
        return JSON.stringify(await beginLegRows(srv.db.sql, "demo-store", { ...leg, reservationId }, Date.now()));
      } catch (e) {
        return (e as { code?: string }).code ?? "thrown";
      }
    };
    expect(await attempt(last)).toBe(JSON.stringify({ orderId, created: true }));
    const earlier = await reservation(orderId, "released"); // an earlier attempt of the same order, released
    expect(await cancelPendingOrderRows(srv.db.sql, "demo-store", { orderId, reason: "session_expired" }, Date.now())).toMatchObject({});
    const [o] = await srv.db.sql<{ status: string; intent_id: string }[]>`SELECT status, intent_id FROM orders WHERE id = ${orderId}`;
    expect(o).toEqual({ status: "canceled", intent_id: last });
    expect((await srv.db.sql<{ status: string }[]>`SELECT status FROM stock_reservations WHERE id = ${last}`).map((r) => r.status)).toEqual(["released"]);
    expect(await attempt(last)).toBe("conflict");

    await run(Date.now() + 7 * DAY + 60_000);
    expect(await left([last, earlier])).toEqual([last]);
    expect(await attempt(last)).toBe("conflict");
    expect(await attempt(earlier)).toBe("STATE_EXECUTION_BLOCKED");
    const [after] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(after.status).toBe("canceled");
  }, 30_000);
  test("the last attempt of an order no longer pending is marked by the run that keeps it, and no later batch reads it again (review RG-4)", async () => {
    const { beginLegRows, cancelPendingOrderRows } = await import("../../actors/store/commerce.ts");
    const kept: string[] = [];
    for (let i = 0; i < 5; i++) {
      const orderId = crypto.randomUUID();
      const last = `r-${crypto.randomUUID()}`;
      await beginLegRows(srv.db.sql, "demo-store", {
        orderId, checkoutSessionId: `sess-${orderId}`, cartId: crypto.randomUUID(), reservationId: last, agentKeyId: key.id, currency: "USD",
        paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
        totalMinor: 100, lines: [{ productId: BOARD, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
      }, Date.now());
      await cancelPendingOrderRows(srv.db.sql, "demo-store", { orderId, reason: "session_expired" }, Date.now());
      kept.push(last);
    }
    // released 1000 days ago, so the scan below (cutoff 990 days ago) can meet no other test's rows
    await srv.db.sql`UPDATE stock_reservations SET updated_at = now() - interval '1000 days' WHERE id IN ${srv.db.sql(kept)}`;
    const scanAt = Date.now() - 990 * DAY + SETTINGS.RETENTION_RESERVATION_GRACE_DAYS! * DAY;
    const now = Date.now();
    await run(now);
    expect(await left(kept)).toEqual([...kept].sort());
    expect(await rowsWalked("stock_reservations", "stock_reservations_done", scanAt)).toBe(0);
    await run(now);
    expect(await left(kept)).toEqual([...kept].sort());
  }, 30_000);
});

describe("AP2 mandate bindings (session 11)", () => {
  const newCart = async (): Promise<string> => {
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  /** A binding and its claim as bindMandate and claimMandate write them; `expires` is ms from now, "never" or "unrecorded". */
  async function mandate(expires: number | "never" | "unrecorded", cartId?: string): Promise<{ binding: string; mandateId: string; cartId: string }> {
    const cart = cartId ?? (await newCart());
    const mandateId = `pm-${crypto.randomUUID()}`;
    const binding = `ap2_${crypto.randomUUID().replace(/-/g, "")}`;
    // postgres.js sends a timestamptz parameter as a Date, so 'infinity' is spelled in SQL
    const at = () => (expires === "never" ? srv.db.sql`'infinity'::timestamptz` : srv.db.sql`${expires === "unrecorded" ? null : new Date(Date.now() + expires)}::timestamptz`);
    await srv.db.sql`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta, mandate_expires_at)
      VALUES (${binding}, 'ap2', ${key.id}, ${cart}, ${srv.db.sql.json({ payment_mandate_id: mandateId })}, ${at()})`;
    await srv.db.sql`INSERT INTO ap2_mandate_agents (thumbprint, payment_mandate_id, agent_key_id, expires_at)
      VALUES ('retention-test-signer', ${mandateId}, ${key.id}, ${at()})`;
    return { binding, mandateId, cartId: cart };
  }
  const bindingsLeft = async (ids: string[]) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM bridge_sessions WHERE id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();
  const claimsLeft = async (ids: string[]) =>
    (await srv.db.sql<{ payment_mandate_id: string }[]>`SELECT payment_mandate_id FROM ap2_mandate_agents WHERE payment_mandate_id IN ${srv.db.sql(ids)}`).map((r) => r.payment_mandate_id).sort();
  const cartsLeft = async (ids: string[]) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM actor_state WHERE kind = 'cart' AND id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();

  test("a binding and its claim go a grace after the mandate's recorded expiry, and the unpaid cart only it named goes in the same run; a mandate without an expiry, a binding recorded before 0087 and one expired less than the grace ago stay", async () => {
    const m = {
      expired: await mandate(-DAY), // expired a day ago by both clocks
      never: await mandate("never"),
      unrecorded: await mandate("unrecorded"),
      recent: await mandate(-DAY / 2),
    };
    const all = Object.values(m);
    const bindings = (xs: typeof all) => xs.map((x) => x.binding).sort();
    const claims = (xs: typeof all) => xs.map((x) => x.mandateId).sort();
    const now = Date.now();
    // 6 days after the first expiry: inside the grace, nothing goes
    await run(now + 5 * DAY);
    expect(await bindingsLeft(bindings(all))).toEqual(bindings(all));
    expect(await claimsLeft(claims(all))).toEqual(claims(all));

    // 7¼ days after the first expiry, 6¾ after the second: only the first goes
    const first = await run(now + 6 * DAY + DAY / 4);
    expect(first.ap2_mandate_bindings).toBe(1);
    expect(first.ap2_mandate_agents).toBe(1);
    expect(await bindingsLeft(bindings(all))).toEqual(bindings([m.never, m.unrecorded, m.recent]));
    expect(await claimsLeft(claims(all))).toEqual(claims([m.never, m.unrecorded, m.recent]));
    expect(await cartsLeft(all.map((x) => x.cartId))).toEqual(all.map((x) => x.cartId).sort()); // the carts' own grace has not passed

    // past the second's grace and the carts' own (expiry + 7 days): the unpaid carts only the deleted bindings named go too
    await run(now + 9 * DAY);
    const kept = [m.never, m.unrecorded];
    expect(await bindingsLeft(bindings(all))).toEqual(bindings(kept));
    expect(await claimsLeft(claims(all))).toEqual(claims(kept));
    expect(await cartsLeft(all.map((x) => x.cartId))).toEqual(kept.map((x) => x.cartId).sort());
  }, 30_000);

  test("a binding whose recorded expiry the database's clock has not reached stays, however far ahead the job's clock runs", async () => {
    const live = await mandate(2 * DAY);
    await run(Date.now() + 400 * DAY);
    expect(await bindingsLeft([live.binding])).toEqual([live.binding]);
    expect(await claimsLeft([live.mandateId])).toEqual([live.mandateId]);
  }, 30_000);

  test("a batch reads only the expired rows from each rule's index, never the bindings of mandates without an expiry", async () => {
    const cart = await newCart();
    for (let i = 0; i < 4; i++) await mandate("never", cart);
    const expired = await mandate(-2 * DAY, cart);
    const scanAt = Date.now() + 6 * DAY; // a horizon a day ago: `expired` is past it
    // a bitmap scan counts index entries of rows the tests above deleted until a vacuum removes them
    await srv.db.sql`VACUUM bridge_sessions, ap2_mandate_agents`;
    const [{ n: bindings }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM bridge_sessions WHERE protocol = 'ap2' AND mandate_expires_at < ${new Date(scanAt - 7 * DAY)}`;
    const [{ n: claims }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ap2_mandate_agents WHERE expires_at < ${new Date(scanAt - 7 * DAY)}`;
    expect(bindings).toBeGreaterThanOrEqual(1);
    expect(await rowsWalked("ap2_mandate_bindings", "bridge_sessions_ap2_expiry", scanAt)).toBe(bindings);
    expect(await rowsWalked("ap2_mandate_agents", "ap2_mandate_agents_expiry", scanAt)).toBe(claims);
    expect(await bindingsLeft([expired.binding])).toEqual([expired.binding]); // EXPLAIN's run was rolled back
  }, 30_000);
});

describe("committed stock reservations (session 11)", () => {
  const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, tracked stock
  let admin: string;
  beforeAll(async () => {
    admin = await login(srv);
  });
  async function soldOrder(): Promise<{ orderId: string; reservationId: string; cartId: string }> {
    const orderId = await placeOrder(srv, key, SKILLET);
    const [r] = await srv.db.sql<{ id: string; status: string; cart_id: string; intent_id: string }[]>`
      SELECT r.id, r.status, o.cart_id::text AS cart_id, o.intent_id FROM stock_reservations r JOIN orders o ON o.id = r.order_id WHERE r.order_id = ${orderId}`;
    expect(r).toMatchObject({ status: "committed", intent_id: r!.id });
    return { orderId, reservationId: r!.id, cartId: r!.cart_id };
  }
  async function move(orderId: string, status: "fulfilled" | "shipped" | "delivered" | "canceled"): Promise<void> {
    const r = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { status } });
    expect(r.status).toBe(200);
  }
  const rows = async (ids: string[]) =>
    (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM stock_reservations WHERE id IN ${srv.db.sql(ids)} ORDER BY id`).map((r) => `${r.id}:${r.status}`);
  const stock = async () => (await srv.db.sql<{ n: number }[]>`SELECT stock_quantity AS n FROM products WHERE id = ${SKILLET}`)[0]!.n;
  const leg = (o: { orderId: string; reservationId: string; cartId: string }) => ({
    orderId: o.orderId, checkoutSessionId: `sess-${o.orderId}`, cartId: o.cartId, reservationId: o.reservationId, agentKeyId: key.id, currency: "USD",
    paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
    totalMinor: 100, lines: [{ productId: SKILLET, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
  });

  test("a committed reservation goes a grace after its order was shipped, delivered or refunded, and a returned one after its cancel; those of orders still paid or fulfilled, however old, and of a cart with something due stay; replays of a deleted one answer as before and a kept one still restocks", async () => {
    await srv.db.sql`UPDATE products SET stock_quantity = stock_quantity + 20, in_stock = true WHERE id = ${SKILLET}`;
    const o = { paid: await soldOrder(), fulfilled: await soldOrder(), shipped: await soldOrder(), delivered: await soldOrder(), refunded: await soldOrder(), canceled: await soldOrder(), due: await soldOrder() };
    await move(o.fulfilled.orderId, "fulfilled");
    await move(o.shipped.orderId, "shipped");
    await move(o.delivered.orderId, "shipped");
    await move(o.delivered.orderId, "delivered");
    await move(o.refunded.orderId, "fulfilled");
    // the refund flow's move (moveOrderAfterRefund): a full refund of a fulfilled order gives nothing back
    await srv.db.sql`UPDATE orders SET status = 'refunded' WHERE id = ${o.refunded.orderId}`;
    const beforeCancel = await stock();
    await move(o.canceled.orderId, "canceled"); // gives its unit back: the row is `returned`
    expect(await stock()).toBe(beforeCancel + 1);
    await move(o.due.orderId, "shipped");
    await srv.db.sql`INSERT INTO actor_reminders (kind, id, name, due_at) VALUES ('cart', ${o.due.cartId}, 'retention-test', now() + interval '30 days')`;
    const ids = Object.values(o).map((x) => x.reservationId);
    // the trigger stamped exactly the rows whose order can no longer give units back
    const closed = await srv.db.sql<{ id: string }[]>`SELECT id FROM stock_reservations WHERE id IN ${srv.db.sql(ids)} AND order_closed_at IS NOT NULL ORDER BY id`;
    expect(closed.map((r) => r.id)).toEqual([o.shipped, o.delivered, o.refunded, o.canceled, o.due].map((x) => x.reservationId).sort());

    // a replay of the shipped order's paid attempt, and of its settle, before the rule ran
    const { beginLegRows, settleLegRows } = await import("../../actors/store/commerce.ts");
    const replay = () => beginLegRows(srv.db.sql, "demo-store", leg(o.shipped), Date.now());
    const resettle = () => settleLegRows(srv.db.sql, "demo-store", { orderId: o.shipped.orderId, reservationId: o.shipped.reservationId, outcome: "captured", intentId: o.shipped.reservationId, captureRef: "cap" }, Date.now());
    const begunBefore = await replay();
    const settledBefore = await resettle();
    expect(begunBefore).toEqual({ orderId: o.shipped.orderId, created: false });
    expect(settledBefore).toEqual({ status: "shipped", changed: [] });

    const all = await rows(ids);
    const now = Date.now();
    await run(now + 6 * DAY);
    expect(await rows(ids)).toEqual(all);
    const deleted = await run(now + 7 * DAY + 60_000);
    expect(deleted.sold_stock_reservations).toBeGreaterThanOrEqual(3);
    expect(deleted.stock_reservations).toBeGreaterThanOrEqual(1);
    expect(await rows(ids)).toEqual(
      [`${o.paid.reservationId}:committed`, `${o.fulfilled.reservationId}:committed`, `${o.due.reservationId}:committed`].sort(),
    );

    // the same answers without the row: "begun before" (nothing held), and a settle that leaves the shipped order alone
    const held = await stock();
    expect(await replay()).toEqual(begunBefore);
    expect(await resettle()).toEqual(settledBefore);
    expect(await stock()).toBe(held);
    const [after] = await srv.db.sql<{ status: string; intent_id: string }[]>`SELECT status, intent_id FROM orders WHERE id = ${o.shipped.orderId}`;
    expect(after).toEqual({ status: "shipped", intent_id: o.shipped.reservationId });
    // a kept row still gives its units back when the merchant cancels its order
    await move(o.fulfilled.orderId, "canceled");
    expect(await stock()).toBe(held + 1);
    await srv.db.sql`DELETE FROM actor_reminders WHERE kind = 'cart' AND id = ${o.due.cartId} AND name = 'retention-test'`;
  }, 60_000);

  test("a batch reads only rows whose order closed, never the committed rows of orders still paid", async () => {
    await srv.db.sql`UPDATE products SET stock_quantity = stock_quantity + 10, in_stock = true WHERE id = ${SKILLET}`;
    for (let i = 0; i < 3; i++) await soldOrder(); // paid, kept for as long as the merchant may cancel them
    const closedOrder = await soldOrder();
    await move(closedOrder.orderId, "shipped");
    const scanAt = Date.now() + 7 * DAY + 60_000;
    const [{ open, closed }] = await srv.db.sql<{ open: number; closed: number }[]>`
      SELECT count(*) FILTER (WHERE order_closed_at IS NULL)::int AS open, count(*) FILTER (WHERE order_closed_at < ${new Date(scanAt - 7 * DAY)})::int AS closed
      FROM stock_reservations WHERE status = 'committed'`;
    expect(open).toBeGreaterThanOrEqual(3);
    expect(closed).toBeGreaterThanOrEqual(1);
    expect(await rowsWalked("sold_stock_reservations", "stock_reservations_sold", scanAt)).toBe(closed);
  }, 60_000);
});

describe("webhook deliveries (session 9)", () => {
  test("a delivery finished (delivered or dead) more than the retention age ago goes with its attempts, then its event; pending, failed and newer ones stay, and the dashboard lists and redelivers what is kept", async () => {
    const token = await login(srv);
    const auth = { authorization: `Bearer ${token}` };
    const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: auth,
      body: { url: "http://127.0.0.1:9/hooks/retention-deliveries", events: ["checkout.abandoned"] },
    });
    expect(ep.status).toBe(201);
    const endpointId = ep.body.data.id as string;
    const events: Record<string, string> = {};
    async function delivery(name: string, status: string, times: { delivered?: number; lastAttempt?: number; next?: number }): Promise<string> {
      const eventId = crypto.randomUUID();
      const id = crypto.randomUUID();
      const ago = (days: number | undefined) => (days === undefined ? null : new Date(Date.now() - days * DAY));
      await srv.db.sql`
        INSERT INTO webhook_events (id, store_slug, kind, payload, created_at, dispatched_at)
        VALUES (${eventId}, 'demo-store', 'checkout.abandoned', '{}'::jsonb, now() - interval '40 days', now() - interval '40 days')`;
      await srv.db.sql`
        INSERT INTO webhook_deliveries (id, event_id, endpoint_id, store_slug, status, attempts, next_attempt_at, first_attempt_at, last_attempt_at, delivered_at, created_at)
        VALUES (${id}, ${eventId}, ${endpointId}, 'demo-store', ${status}, 1, ${times.next === undefined ? null : new Date(Date.now() + times.next * DAY)},
          ${ago(times.lastAttempt)}, ${ago(times.lastAttempt)}, ${ago(times.delivered)}, now() - interval '40 days')`;
      if (times.lastAttempt !== undefined) {
        await srv.db.sql`INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, status_code, duration_ms) VALUES (${id}, 1, ${ago(times.lastAttempt)}, 500, 5)`;
      }
      events[name] = eventId;
      return id;
    }
    const d = {
      deliveredOld: await delivery("deliveredOld", "delivered", { delivered: 31, lastAttempt: 31 }),
      deadOld: await delivery("deadOld", "dead", { lastAttempt: 31 }),
      deadUntried: await delivery("deadUntried", "dead", {}), // its endpoint was deleted before any attempt: created 40 days ago
      deliveredRecent: await delivery("deliveredRecent", "delivered", { delivered: 29, lastAttempt: 29 }),
      deadRecent: await delivery("deadRecent", "dead", { lastAttempt: 1 }),
      failedOld: await delivery("failedOld", "failed", { lastAttempt: 31, next: 1 }), // still being retried
    };
    const ids = Object.values(d);
    const deliveriesLeft = async () => (await srv.db.sql<{ id: string }[]>`SELECT id FROM webhook_deliveries WHERE id IN ${srv.db.sql(ids)}`).map((r) => r.id).sort();
    const eventsLeft = async () =>
      (await srv.db.sql<{ id: string }[]>`SELECT id FROM webhook_events WHERE id IN ${srv.db.sql(Object.values(events))}`).map((r) => r.id).sort();

    const deleted = await run(Date.now());
    expect(deleted.webhook_deliveries).toBeGreaterThanOrEqual(3);
    const kept = [d.deliveredRecent, d.deadRecent, d.failedOld].sort();
    expect(await deliveriesLeft()).toEqual(kept);
    expect(await eventsLeft()).toEqual([events.deliveredRecent, events.deadRecent, events.failedOld].sort());
    expect((await srv.db.sql`SELECT 1 FROM webhook_delivery_attempts WHERE delivery_id IN ${srv.db.sql([d.deliveredOld, d.deadOld])}`).length).toBe(0);

    const list = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}/deliveries?limit=500`, { headers: auth });
    expect(list.status).toBe(200);
    expect((list.body.data as { id: string }[]).map((x) => x.id).filter((id) => ids.includes(id)).sort()).toEqual(kept);
    const gone = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}/deliveries/${d.deadOld}/redeliver`, { method: "POST", headers: auth });
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ success: false, code: "not_found" });
    const again = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}/deliveries/${d.deadRecent}/redeliver`, { method: "POST", headers: auth });
    expect(again.status).toBe(202);
    expect(again.body.data).toMatchObject({ id: d.deadRecent, status: "pending" });
    await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}`, { method: "DELETE", headers: auth });
  }, 30_000);
});

describe("webhook deliveries killed without an attempt (review RB-4)", () => {
  async function staleDelivery(endpointId: string, next: Date): Promise<string> {
    // tried 5 times, the first 40 and the last 31 days ago: past the retention age counted from its last attempt
    const eventId = crypto.randomUUID();
    const id = crypto.randomUUID();
    await srv.db.sql`
      INSERT INTO webhook_events (id, store_slug, kind, payload, created_at, dispatched_at)
      VALUES (${eventId}, 'demo-store', 'checkout.abandoned', '{}'::jsonb, now() - interval '40 days', now() - interval '40 days')`;
    await srv.db.sql`
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, store_slug, status, attempts, next_attempt_at, first_attempt_at, last_attempt_at, created_at)
      VALUES (${id}, ${eventId}, ${endpointId}, 'demo-store', 'failed', 5, ${next}, now() - interval '40 days', now() - interval '31 days', now() - interval '40 days')`;
    return id;
  }
  const endpoint = async (auth: Record<string, string>) => {
    const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: auth,
      body: { url: "http://127.0.0.1:9/hooks/retention-death", events: ["checkout.abandoned"] },
    });
    expect(ep.status).toBe(201);
    return ep.body.data.id as string;
  };
  const stillThere = async (id: string) => (await srv.db.sql`SELECT 1 FROM webhook_deliveries WHERE id = ${id}`).length === 1;

  test("a delivery dead-lettered by its endpoint's deletion, its last attempt 31 days before, is kept until the retention age after its death", async () => {
    const auth = { authorization: `Bearer ${await login(srv)}` };
    const endpointId = await endpoint(auth);
    const id = await staleDelivery(endpointId, new Date(Date.now() + DAY)); // held back (its breaker), not due
    expect((await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}`, { method: "DELETE", headers: auth })).status).toBe(200);
    const [row] = await srv.db.sql<{ status: string }[]>`SELECT status FROM webhook_deliveries WHERE id = ${id}`;
    expect(row!.status).toBe("dead");

    const now = Date.now();
    await run(now);
    expect(await stillThere(id)).toBe(true);
    await run(now + 29 * DAY);
    expect(await stillThere(id)).toBe(true);
    await run(now + 30 * DAY + 60_000);
    expect(await stillThere(id)).toBe(false);
  }, 30_000);

  test("a delivery dead-lettered by the 72 h retry horizon when next due, its last attempt 31 days before, is kept until the retention age after its death", async () => {
    const auth = { authorization: `Bearer ${await login(srv)}` };
    const endpointId = await endpoint(auth);
    const id = await staleDelivery(endpointId, new Date(Date.now() - 60_000)); // due now, 40 days after its first attempt
    await srv.db.sql`
      INSERT INTO actor_reminders (kind, id, name, due_at, payload) VALUES ('webhook', ${endpointId}, 'deliverDue', now(), 'null'::jsonb)
      ON CONFLICT (kind, id, name) DO UPDATE SET due_at = now()`;
    await srv.running.host!.pollReminders();
    const dead = await waitFor("the delivery dead-lettered", async () => {
      const [row] = await srv.db.sql<{ status: string; last_error: string }[]>`SELECT status, last_error FROM webhook_deliveries WHERE id = ${id}`;
      return row!.status === "dead" ? row : undefined;
    });
    expect(dead.last_error).toContain("dead-lettered (horizon)");

    const now = Date.now();
    await run(now);
    expect(await stillThere(id)).toBe(true);
    await run(now + 29 * DAY);
    expect(await stillThere(id)).toBe(true);
    await run(now + 30 * DAY + 60_000);
    expect(await stillThere(id)).toBe(false);
    await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}`, { method: "DELETE", headers: auth });
  }, 30_000);
});

describe("AP2 registration nonces (session 9)", () => {
  test("a registration challenge leaves other keys' expired nonces to the job, which deletes those expired more than an hour ago and keeps live and just-expired ones; a key still holds at most 10", async () => {
    const { exportJWK, generateKeyPair } = await import("jose");
    const token = await login(srv);
    const mine = await createKey(srv, { scopes: ALL_SCOPES, token });
    const other = await createKey(srv, { scopes: ALL_SCOPES, token });
    const nonce = async (name: string, expiresInMs: number) => {
      const n = `${name}-${crypto.randomUUID()}`;
      await srv.db.sql`INSERT INTO ap2_key_nonces (nonce, agent_key_id, expires_at) VALUES (${n}, ${other.id}, now() + ${expiresInMs} * interval '1 millisecond')`;
      return n;
    };
    const old = await nonce("old", -2 * 60 * 60_000);
    const just = await nonce("just", -10 * 60_000);
    const live = await nonce("live", 4 * 60_000);
    const left = async (ids: string[]) => (await srv.db.sql<{ nonce: string }[]>`SELECT nonce FROM ap2_key_nonces WHERE nonce IN ${srv.db.sql(ids)}`).map((r) => r.nonce).sort();

    const jwk = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
    const challenge = async () => {
      const r = await srv.json(`/api/v1/agent-keys/${mine.id}/ap2-user-keys/tablet`, { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: { jwk } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("MISSING_REQUIRED_ARGUMENT");
      return r.body.details.nonce as string;
    };
    const issued = await challenge();
    expect(await left([old, just, live])).toEqual([old, just, live].sort());

    const deleted = await run(Date.now());
    expect(deleted.ap2_key_nonces).toBeGreaterThanOrEqual(1);
    expect(await left([old, just, live, issued])).toEqual([just, live, issued].sort());

    for (let i = 0; i < 11; i++) await challenge();
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ap2_key_nonces WHERE agent_key_id = ${mine.id}`;
    expect(n).toBe(10);
  }, 30_000);
});

describe("a job host whose clock runs ahead of the database's (review RB-3)", () => {
  test("an AP2 registration nonce the database's clock still counts as live stays, however far ahead the job's clock runs; one expired by both goes", async () => {
    const [live, old] = [`live-db-${crypto.randomUUID()}`, `old-db-${crypto.randomUUID()}`];
    await srv.db.sql`INSERT INTO ap2_key_nonces (nonce, agent_key_id, expires_at)
      VALUES (${live}, ${key.id}, now() + interval '10 minutes'), (${old}, ${key.id}, now() - interval '1 minute')`;
    await run(Date.now() + 2 * 60 * 60_000);
    const left = (await srv.db.sql<{ nonce: string }[]>`SELECT nonce FROM ap2_key_nonces WHERE nonce IN ${srv.db.sql([live, old])}`).map((r) => r.nonce);
    expect(left).toEqual([live]);
  }, 30_000);
});

describe("the job", () => {
  test("an actor host runs it by itself every RETENTION_INTERVAL_MS", async () => {
    const own = await startServer({ config: { RETENTION_INTERVAL_MS: 200 } });
    try {
      const id = crypto.randomUUID();
      await own.db.sql`
        INSERT INTO webhook_events (id, store_slug, kind, payload, created_at, dispatched_at)
        VALUES (${id}, 'demo-store', 'order.created', '{}'::jsonb, now() - interval '40 days', now() - interval '40 days')`;
      await waitFor("the old event deleted", async () => (await own.db.sql`SELECT 1 FROM webhook_events WHERE id = ${id}`).length === 0, 5_000);
    } finally {
      await own.stop();
    }
  }, 60_000);
});
