/**
 * Audit A4, trust, through HTTP against the real service and Postgres (demo seed).
 *
 * H1: a declined, failed or unapproved checkout leaves its order pending; the trust query counted it as an agent
 *     order, GMV, a unique buyer and a completed checkout. Only paid orders count now.
 * H2: checkouts an agent abandoned (declined, then canceled) counted against agentCheckout: 25 by one fresh key took
 *     demo-store from 0.8734 to 0.8448. Only checkouts that reached payment count, per agent key.
 * M1: the same gain raised a new alert pair at every recompute for 24 h, even after an operator resolved it.
 * L3: the trust JWS had no `iss`. L4: a shorter TRUST_REFRESH_INTERVAL_MS waited for the old reminder.
 * L5: an appeal reason of ten spaces was accepted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt } from "jose";
import type { Running } from "../../gateway/boot.ts";
import type { Config } from "../../infra/config.ts";
import { createKey, login, merchantLogin, placeOrder, type TestKey } from "../helpers/agents.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { bootService, serverHandle, type TestServer } from "../helpers/server.ts";

const SECRET_KEY = "d".repeat(64);
const SITE_URL = "http://trust-a4.example";
const DEMO = "demo-store";
const FRESH = "fresh-start-studio";

let db: TestDatabase;
let dataDir: string;
let running: Running | undefined;
let srv: TestServer;
let admin = "";
let productId = "";

async function start(config: Partial<Config>): Promise<void> {
  running = await bootService({ databaseUrl: db.url, dataDir, config: { SITE_URL, SECRET_KEY, RATE_LIMITS_ENABLED: false, ...config } });
  srv = serverHandle(running, db);
  admin = await login(srv);
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  await start({ SEED_DEMO: true });
  const [p] = await db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND in_stock AND price_minor > 0 AND jsonb_array_length(variants) = 0
      AND (stock_quantity IS NULL OR stock_quantity >= 100) ORDER BY id LIMIT 1`;
  if (!p) {
    const [q] = await db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND jsonb_array_length(variants) = 0 ORDER BY id LIMIT 1`;
    await db.sql`UPDATE products SET stock_quantity = 1000, in_stock = true WHERE id = ${q!.id}`;
    productId = q!.id;
  } else productId = p.id;
}, 120_000);
afterAll(async () => {
  await running?.stop();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

async function recompute(slug: string): Promise<void> {
  const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug } });
  expect(r.status).toBe(200);
}

interface Snapshot {
  human: number;
  decided: number;
  onTime: number;
  humanGood: number;
  agent: number;
  gmvMinor: number;
  uniqueBuyers: number;
  agentAll: number;
  agentCompleted: number;
  agentCheckoutRate: number | null;
  trustScore: number;
}
async function snapshot(slug: string): Promise<Snapshot> {
  const [row] = await db.sql<{ facts: { orders: Snapshot }; trust_score: string }[]>`
    SELECT c.facts, s.trust_score FROM trust_current c JOIN stores s ON s.slug = c.store_slug WHERE c.store_slug = ${slug}`;
  const o = row!.facts.orders;
  return {
    human: o.human,
    decided: o.decided,
    onTime: o.onTime,
    humanGood: o.humanGood,
    agent: o.agent,
    gmvMinor: o.gmvMinor,
    uniqueBuyers: o.uniqueBuyers,
    agentAll: o.agentAll,
    agentCompleted: o.agentCompleted,
    agentCheckoutRate: o.agentCheckoutRate,
    trustScore: Number(row!.trust_score),
  };
}

/** One checkout attempt on demo-store: cart, preview, pay with `token`. Returns the HTTP status and the session id. */
async function attempt(key: TestKey, token: string): Promise<{ status: number; code: string | undefined; cs: string }> {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const preview = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
  expect(preview.status).toBe(200);
  const cs = preview.body.data.checkout_session_id as string;
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: { ...key.headers, "idempotency-key": crypto.randomUUID() },
    body: { cartId: cart.body.data.id, checkout_session_id: cs, payment_method: token },
  });
  return { status: r.status, code: r.body?.code, cs };
}

async function ordersOf(key: TestKey): Promise<Record<string, number>> {
  const rows = await db.sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM orders WHERE agent_key_id = ${key.id} GROUP BY status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe("only paid orders are transactions (H1)", () => {
  test("declined, failed and unapproved checkouts leave pending orders that add no agent order, GMV, buyer or completed checkout", async () => {
    await recompute(DEMO);
    const before = await snapshot(DEMO);
    const key = await createKey(srv, { scopes: ["search", "cart", "checkout"], name: "a4-pending" });

    const declined = await attempt(key, "tok_decline");
    expect(declined.status).toBe(402);
    expect(declined.code).toBe("PAYMENT_DECLINED");
    expect((await attempt(key, "tok_decline")).status).toBe(402);
    const failed = await attempt(key, "tok_fail");
    expect(failed.status).toBeGreaterThanOrEqual(400);
    const unapproved = await attempt(key, "tok_needs_approval");
    expect(unapproved.status).toBe(202);
    expect(await ordersOf(key)).toEqual({ pending: 4 });

    await recompute(DEMO);
    expect(await snapshot(DEMO)).toEqual(before);
  }, 60_000);

  test("a paid checkout does count: one agent order, its GMV, one buyer, one completed checkout", async () => {
    await recompute(DEMO);
    const before = await snapshot(DEMO);
    const key = await createKey(srv, { scopes: ["search", "cart", "checkout"], name: "a4-paid" });
    const orderId = await placeOrder(srv, key, productId, "MOCK");
    const [o] = await db.sql<{ total_minor: string; paid_at: Date | null }[]>`SELECT total_minor, paid_at FROM orders WHERE id = ${orderId}`;
    expect(o!.paid_at).not.toBeNull();

    await recompute(DEMO);
    const after = await snapshot(DEMO);
    expect(after.agent).toBe(before.agent + 1);
    expect(after.gmvMinor).toBe(before.gmvMinor + Number(o!.total_minor));
    expect(after.uniqueBuyers).toBe(before.uniqueBuyers + 1);
    expect(after.agentAll).toBe(before.agentAll + 1);
    expect(after.agentCompleted).toBe(before.agentCompleted + 1);
  }, 60_000);

  test("a pending order the merchant records is not counted either, not even its fulfilment", async () => {
    const slug = "maple-pine-home";
    await recompute(slug);
    const before = await snapshot(slug);
    const owner = await login(srv, merchantLogin(slug));
    const [{ currency }] = await db.sql<{ currency: string }[]>`SELECT currency FROM stores WHERE slug = ${slug}`;
    const order = { externalId: "a4-h1-pending", buyer: "someone-new@example.com", status: "pending", currency, items: [{ title: "lamp", quantity: 1, unitPrice: 90000 }], fulfilledOnTime: true };
    const r = await srv.json(`/api/v1/merchant/stores/${slug}/orders`, { method: "POST", headers: auth(owner), body: { orders: [order] } });
    expect(r.status).toBe(201);
    expect(r.body.data.accepted).toBe(1);

    await recompute(slug);
    expect(await snapshot(slug)).toEqual(before);
  }, 60_000);
});

describe("abandoned checkouts are not merchant failures (H2)", () => {
  test("25 checkouts declined and canceled by one fresh key do not move demo-store's score", async () => {
    await recompute(DEMO);
    const before = await snapshot(DEMO);
    const key = await createKey(srv, { scopes: ["search", "cart", "checkout"], name: "a4-grief" });
    for (let i = 0; i < 25; i++) {
      const a = await attempt(key, "tok_decline");
      expect(a.status).toBe(402);
      const cancel = await srv.json(`/api/v1/agent/checkout/${a.cs}/cancel`, { method: "POST", headers: key.headers, body: {} });
      expect(cancel.status).toBe(200);
    }
    expect(await ordersOf(key)).toEqual({ canceled: 25 });

    await recompute(DEMO);
    const after = await snapshot(DEMO);
    expect(after).toEqual(before);
    const pub = await srv.json(`/api/v1/stores/${DEMO}/trust-score`);
    expect(pub.status).toBe(200);
    expect(pub.body.data.score_0to1).toBe(before.trustScore);
  }, 120_000);
});

describe("one anomaly alert per gain (M1)", () => {
  test("recomputing an unchanged gain raises nothing more, before or after the operator resolved the alerts", async () => {
    const owner = await login(srv, merchantLogin(FRESH));
    const [{ currency }] = await db.sql<{ currency: string }[]>`SELECT currency FROM stores WHERE slug = ${FRESH}`;
    const orders = Array.from({ length: 5 }, (_, i) => ({
      externalId: `a4-m1-${i}`,
      buyer: `buyer-${i}@example.com`,
      status: "delivered",
      currency,
      items: [{ title: "print", quantity: 1, unitPrice: 2500 }],
      fulfilledOnTime: true,
    }));
    const r = await srv.json(`/api/v1/merchant/stores/${FRESH}/orders`, { method: "POST", headers: auth(owner), body: { orders } });
    expect(r.status).toBe(201);

    const alerts = async () => {
      const list = await srv.json("/api/v1/admin/trust/alerts?status=all", { headers: auth(admin) });
      expect(list.status).toBe(200);
      return (list.body.data as { id: string; storeSlug: string; kind: string; status: string }[]).filter((a) => a.storeSlug === FRESH);
    };
    await recompute(FRESH);
    const first = await alerts();
    expect(first.map((a) => a.kind)).toContain("rapid_gain");

    await recompute(FRESH);
    expect((await alerts()).length).toBe(first.length);

    for (const a of first) {
      const res = await srv.json(`/api/v1/admin/trust/alerts/${a.id}/resolve`, {
        method: "POST",
        headers: auth(admin),
        body: { resolution: "confirmed_legitimate", note: "checked" },
      });
      expect(res.status).toBe(200);
    }
    await recompute(FRESH);
    const last = await alerts();
    expect(last.length).toBe(first.length);
    expect(last.filter((a) => a.status === "open")).toEqual([]);
  }, 60_000);
});

describe("signed trust data and appeals (L3, L5)", () => {
  test("the trust JWS names the platform as its issuer (SITE_URL)", async () => {
    await recompute(DEMO);
    const pub = await srv.json(`/api/v1/stores/${DEMO}/trust-score`);
    expect(pub.status).toBe(200);
    expect(decodeJwt(pub.body.data.jws as string).iss).toBe(SITE_URL);
  });

  test("an appeal reason is trimmed before its length check, and stored trimmed", async () => {
    const owner = await login(srv, merchantLogin(FRESH));
    const blank = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: FRESH, reason: " ".repeat(12) } });
    expect(blank.status).toBe(400);
    expect(blank.body.code).toBe("validation_error");
    expect(blank.body.details).toMatchObject({ field: "reason" });
    const padded = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: FRESH, reason: "   too short   " } });
    expect(padded.status).toBe(400);
    expect(padded.body.code).toBe("validation_error");
    const good = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: FRESH, reason: "  Our carrier lost the scans.  " } });
    expect(good.status).toBe(201);
    expect(good.body.data.reason).toBe("Our carrier lost the scans.");
  });
});

describe("refresh interval (L4)", () => {
  test("a restart with a shorter TRUST_REFRESH_INTERVAL_MS re-arms the refresh at now + the new interval", async () => {
    const due = async () => {
      const [r] = await db.sql<{ due_at: Date }[]>`SELECT due_at FROM actor_reminders WHERE kind = 'trust' AND name = 'refreshAll'`;
      return r!.due_at.getTime();
    };
    expect(await due()).toBeGreaterThan(Date.now() + 5 * 3_600_000);
    await running!.stop();
    running = undefined;
    await start({ SEED_DEMO: false, TRUST_REFRESH_INTERVAL_MS: 60_000 });
    expect(await due()).toBeLessThanOrEqual(Date.now() + 60_000);
  }, 120_000);
});
