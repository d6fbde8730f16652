/**
 * The dashboard's refund views read the paged merchant list (listRefundsPage), not the 500 newest requests: every
 * pending request can be reached page by page, counts are exact on the refunds, overview and orders pages, and the
 * decisions list filters by status (refunded by default) with its own pager (F2's note).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41";
const EXTRA_PENDING = 520;

let srv: TestServer;
let key: TestKey;
let cookie: string;
let oldestPending: string;
let pendingTotal: number;

async function signIn(who: { email: string; password: string }): Promise<string> {
  const page = await srv.fetch("/dashboard/login");
  const loginCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const body = new URLSearchParams({ _csrf: token, email: who.email, password: who.password, next: "/dashboard" });
  const r = await srv.fetch("/dashboard/login", { method: "POST", redirect: "manual", headers: { cookie: loginCookie, "content-type": "application/x-www-form-urlencoded" }, body });
  expect(r.status).toBe(303);
  return r.headers.get("set-cookie")!.split(";")[0]!;
}

const page = async (path: string) => {
  const r = await srv.fetch(path, { redirect: "manual", headers: { cookie } });
  expect(r.status).toBe(200);
  return r.text();
};
/** The refund ids shown in one section of the refunds page (before / after the "All requests" heading). */
const idsIn = (html: string, section: "waiting" | "all") => {
  const [waiting, all] = html.split('id="all-h"');
  return [...(section === "waiting" ? waiting! : all!).matchAll(/data-refund="([0-9a-f-]{36})"/g)].map((m) => m[1]!);
};

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  cookie = await signIn(ADMIN); // demo-store's owner
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const co = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
  const orderId = co.body.data.order_id as string;
  // More pending requests than the old unpaged read (500) returned; the oldest of all is the one it lost.
  await srv.db.sql`
    INSERT INTO order_refunds (order_id, store_slug, amount_minor, currency, reason, status, created_at)
    SELECT ${orderId}, 'demo-store', 100, 'USD', 'bulk ' || g, 'PENDING_APPROVAL', now() - g * interval '1 minute'
    FROM generate_series(1, ${EXTRA_PENDING}) g`;
  [{ id: oldestPending }] = await srv.db.sql<{ id: string }[]>`
    INSERT INTO order_refunds (order_id, store_slug, amount_minor, currency, reason, status, created_at)
    VALUES (${orderId}, 'demo-store', 100, 'USD', 'the oldest one', 'PENDING_APPROVAL', now() - interval '30 days') RETURNING id::text AS id`;
  await srv.db.sql`
    INSERT INTO order_refunds (order_id, store_slug, amount_minor, currency, reason, status, created_at)
    SELECT ${orderId}, 'demo-store', 100, 'USD', 'failed ' || g, 'FAILED', now() - interval '60 days' - g * interval '1 minute' FROM generate_series(1, 3) g`;
  await srv.db.sql`
    INSERT INTO order_refunds (order_id, store_slug, amount_minor, currency, reason, status, created_at)
    SELECT ${orderId}, 'demo-store', 100, 'USD', 'refunded ' || g, 'REFUNDED', now() - interval '90 days' - g * interval '1 minute' FROM generate_series(1, 2) g`;
  [{ n: pendingTotal }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE store_slug = 'demo-store' AND status = 'PENDING_APPROVAL'`;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("dashboard refund lists are paged", () => {
  test("the waiting list counts every pending request and pages through all of them, the oldest on the last page", async () => {
    expect(pendingTotal).toBeGreaterThan(500);
    const pages = Math.ceil(pendingTotal / 50);
    const first = await page("/dashboard/s/demo-store/refunds");
    expect(first).toContain(`Waiting for a decision (${pendingTotal})`);
    expect(first).toContain(`Page 1 of ${pages} (${pendingTotal} in all)`);
    expect(idsIn(first, "waiting")).toHaveLength(50);
    expect(first).toContain(`href="/dashboard/s/demo-store/refunds?page=2" rel="next"`);
    const last = await page(`/dashboard/s/demo-store/refunds?page=${pages}`);
    expect(idsIn(last, "waiting")).toContain(oldestPending);
    expect(idsIn(last, "waiting")).toHaveLength(pendingTotal - (pages - 1) * 50);
    expect(last).toContain(`rel="prev"`);
  });

  test("the decisions list shows refunded requests by default, never the waiting ones a second time", async () => {
    const html = await page("/dashboard/s/demo-store/refunds");
    const ids = idsIn(html, "all");
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE store_slug = 'demo-store' AND status = 'REFUNDED'`;
    expect(n).toBeGreaterThanOrEqual(2);
    expect(ids).toHaveLength(Math.min(n, 50));
    const statuses = await srv.db.sql<{ status: string }[]>`SELECT DISTINCT status FROM order_refunds WHERE id = ANY(${ids}::uuid[])`;
    expect(statuses.map((r) => r.status)).toEqual(["REFUNDED"]);
    expect(idsIn(html, "waiting").filter((id) => ids.includes(id))).toEqual([]);
  });

  test("the decisions list filters by status and has its own pager, which keeps the waiting list's page", async () => {
    const failed = await page("/dashboard/s/demo-store/refunds?page=3&status=FAILED");
    const ids = idsIn(failed, "all");
    expect(ids).toHaveLength(3);
    const statuses = await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ANY(${ids}::uuid[])`;
    expect(statuses.map((r) => r.status)).toEqual(["FAILED", "FAILED", "FAILED"]);
    expect(failed).toContain("3 approved refunds failed at the payment rail: retry");
    const all = await page("/dashboard/s/demo-store/refunds?page=3&status=any");
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE store_slug = 'demo-store'`;
    expect(all).toContain(`(${n} in all)`);
    expect(all).toContain(`href="/dashboard/s/demo-store/refunds?page=3&amp;status=any&amp;history_page=2" rel="next"`);
    const second = await page("/dashboard/s/demo-store/refunds?page=3&status=any&history_page=2");
    expect(idsIn(second, "all")).toHaveLength(50);
    expect(idsIn(second, "all")).not.toEqual(idsIn(all, "all"));
    expect(idsIn(second, "waiting")).toEqual(idsIn(all, "waiting"));
  });

  test("the overview and the orders page show the exact pending count", async () => {
    expect(await page("/dashboard/s/demo-store")).toContain(`<dt>Pending refunds</dt><dd><a href="/dashboard/s/demo-store/refunds">${pendingTotal}</a>`);
    expect(await page("/dashboard/s/demo-store/orders")).toContain(`${pendingTotal} refund requests waiting for your decision`);
  });
});
