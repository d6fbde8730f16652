/**
 * The data-retention job (audit W-3, W-4; infra/retention.ts): each rule deletes the rows whose time has come and
 * keeps the ones something still reads. Runs are called directly with a chosen "now" (the job's own timer is off here,
 * RETENTION_INTERVAL_MS = 0); the last test boots a server whose job runs by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, ADMIN, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";
import { runRetention, type RetentionSettings } from "../../infra/retention.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store (owned by the admin)
const DAY = 24 * 60 * 60 * 1000;
const SETTINGS: RetentionSettings = { RETENTION_BATCH: 2, RETENTION_OAUTH_GRACE_DAYS: 1, RETENTION_CART_GRACE_DAYS: 7, RETENTION_WEBHOOK_EVENT_DAYS: 30 };

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

  test("an expired cart goes a grace period after its expiry; one named by an order, a protocol session or a live checkout stays", async () => {
    const idle = await newCart();
    const bridged = await newCart();
    await srv.db.sql`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id) VALUES (${`cs_${crypto.randomUUID()}`}, 'acp', ${key.id}, ${bridged})`;
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
        SELECT kind, dispatched_at IS NOT NULL AS dispatched, (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries
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
