/**
 * Who may see and change dashboard pages, and the CSRF defences, over plain HTTP against the real server:
 * logged-out visitors, another merchant, the owner and an operator; missing, wrong and foreign CSRF tokens;
 * cookie flags; log-out and expiry; escaping; the settings forms reaching the store actor.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41";
let srv: TestServer;
let key: TestKey;

interface Browserless {
  cookie: string;
  csrf: string;
}

const form = (fields: Record<string, string | string[]>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
  return p;
};

async function signIn(who: { email: string; password: string }): Promise<Browserless> {
  const page = await srv.fetch("/dashboard/login");
  const loginCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const r = await srv.fetch("/dashboard/login", {
    method: "POST",
    redirect: "manual",
    headers: { cookie: loginCookie, "content-type": "application/x-www-form-urlencoded" },
    body: form({ _csrf: token, email: who.email, password: who.password, next: "/dashboard" }),
  });
  expect(r.status).toBe(303);
  const cookie = r.headers.get("set-cookie")!.split(";")[0]!;
  const home = await srv.fetch("/dashboard?switch=1", { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await home.text())![1]!;
  return { cookie, csrf };
}

const idHash = (s: Browserless) => createHash("sha256").update(s.cookie.split("=")[1]!).digest("hex");
const get = (path: string, s?: Browserless) => srv.fetch(path, { redirect: "manual", headers: s ? { cookie: s.cookie } : {} });
const post = (path: string, s: Browserless | null, fields: Record<string, string | string[]>) =>
  srv.fetch(path, { method: "POST", redirect: "manual", headers: { ...(s ? { cookie: s.cookie } : {}), "content-type": "application/x-www-form-urlencoded" }, body: form(fields) });

async function pendingRefund(): Promise<{ orderId: string; refundId: string }> {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const co = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
  const orderId = co.body.data.order_id as string;
  const rf = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { reason: "test" } });
  expect(rf.status).toBe(201);
  return { orderId, refundId: rf.body.data.refund_id };
}

async function refundStatus(id: string): Promise<string> {
  const [r] = await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${id}`;
  return r!.status;
}

let owner: Browserless;
let stranger: Browserless;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = await signIn(ADMIN);
  stranger = await signIn(merchantLogin("greenleaf-living"));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a logged-out visitor", () => {
  test("is sent to the log-in page from every page, with the page to come back to", async () => {
    for (const path of ["/dashboard", "/dashboard/s/demo-store", "/dashboard/s/demo-store/catalog", "/dashboard/s/demo-store/orders", "/dashboard/s/demo-store/refunds", "/dashboard/s/demo-store/settings", "/dashboard/s/demo-store/settings/webhooks"]) {
      const r = await get(path);
      expect(r.status).toBe(303);
      expect(r.headers.get("location")).toBe(`/dashboard/login?next=${encodeURIComponent(path)}`);
    }
  });

  test("cannot change anything: a POST is redirected to the log-in page and the refund stays pending", async () => {
    const { refundId } = await pendingRefund();
    const r = await post(`/dashboard/s/demo-store/refunds/${refundId}/approve`, null, { _csrf: owner.csrf });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/dashboard/login");
    expect(await refundStatus(refundId)).toBe("PENDING_APPROVAL");
  });

  test("a log-in target outside the dashboard is ignored (no open redirect)", async () => {
    const page = await srv.fetch("/dashboard/login?next=https://evil.example/");
    const html = await page.text();
    expect(html).toContain('name="next" value="/dashboard"');
    for (const next of ["//evil.example", "/dashboard/../../x", "https://evil.example", "/dashboard\\@evil"]) {
      const p = await srv.fetch("/dashboard/login");
      const c = p.headers.get("set-cookie")!.split(";")[0]!;
      const token = /name="_csrf" value="([^"]+)"/.exec(await p.text())![1]!;
      const r = await srv.fetch("/dashboard/login", {
        method: "POST",
        redirect: "manual",
        headers: { cookie: c, "content-type": "application/x-www-form-urlencoded" },
        body: form({ _csrf: token, email: ADMIN.email, password: ADMIN.password, next }),
      });
      expect(r.headers.get("location")).toStartWith("/dashboard");
      expect(r.headers.get("location")).not.toStartWith("//");
      expect(r.headers.get("location")).not.toContain("..");
    }
  });
});

describe("another merchant", () => {
  test("sees only its own store and gets 404 for every page of someone else's", async () => {
    const home = await get("/dashboard", stranger);
    expect(home.status).toBe(303);
    expect(home.headers.get("location")).toBe("/dashboard/s/greenleaf-living");
    const picker = await (await get("/dashboard?switch=1", stranger)).text();
    expect(picker).toContain("greenleaf-living");
    expect(picker).not.toContain("demo-store");
    const { orderId } = await pendingRefund();
    for (const path of ["/dashboard/s/demo-store", "/dashboard/s/demo-store/catalog", "/dashboard/s/demo-store/orders", `/dashboard/s/demo-store/orders/${orderId}`, "/dashboard/s/demo-store/refunds", "/dashboard/s/demo-store/settings", "/dashboard/s/demo-store/settings/webhooks", "/dashboard/s/no-such-store"]) {
      const r = await get(path, stranger);
      expect(r.status).toBe(404);
      expect(await r.text()).not.toContain("Demo Store");
    }
    expect((await get("/dashboard/s/greenleaf-living", stranger)).status).toBe(200);
  });

  test("cannot change someone else's store even with its own valid CSRF token", async () => {
    const { refundId } = await pendingRefund();
    const r = await post(`/dashboard/s/demo-store/refunds/${refundId}/approve`, stranger, { _csrf: stranger.csrf });
    expect(r.status).toBe(404);
    expect(await refundStatus(refundId)).toBe("PENDING_APPROVAL");
    const w = await post("/dashboard/s/demo-store/settings/webhooks", stranger, { _csrf: stranger.csrf, url: "http://127.0.0.1:9/x", events: "order.created" });
    expect(w.status).toBe(404);
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE store_slug = 'demo-store'`;
    expect(n).toBe(0);
    // A refund of demo-store named under the stranger's own store is not found either.
    const own = await post(`/dashboard/s/greenleaf-living/refunds/${refundId}/approve`, stranger, { _csrf: stranger.csrf });
    expect(own.status).toBe(303);
    expect(await refundStatus(refundId)).toBe("PENDING_APPROVAL");
  });
});

describe("the owner and operators", () => {
  test("the owner approves a pending refund with a valid token (the same decideRefund as the REST API)", async () => {
    const { refundId } = await pendingRefund();
    const r = await post(`/dashboard/s/demo-store/refunds/${refundId}/approve`, owner, { _csrf: owner.csrf });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/dashboard/s/demo-store/refunds");
    expect(await refundStatus(refundId)).toBe("REFUNDED");
    const page = await (await get("/dashboard/s/demo-store/refunds", owner)).text();
    expect(page).toContain("approved and refunded");
    // The notice is shown once.
    expect(await (await get("/dashboard/s/demo-store/refunds", owner)).text()).not.toContain("approved and refunded");
  });

  test("an operator can open any store", async () => {
    expect((await get("/dashboard/s/greenleaf-living", owner)).status).toBe(200);
    expect((await get("/dashboard/s/suspended-goods/orders", owner)).status).toBe(200);
  });

  test("a merchant who owns the store sees its pages", async () => {
    const m = await signIn(merchantLogin("maple-pine-home"));
    const r = await get("/dashboard/s/maple-pine-home/catalog", m);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });
});

describe("CSRF", () => {
  test("a POST without a token, with a wrong token or with another session's token is refused with 403 and changes nothing", async () => {
    const { refundId } = await pendingRefund();
    const path = `/dashboard/s/demo-store/refunds/${refundId}/reject`;
    const none = await post(path, owner, {});
    expect(none.status).toBe(403);
    const wrong = await post(path, owner, { _csrf: owner.csrf.slice(0, -2) + (owner.csrf.endsWith("AA") ? "BB" : "AA") });
    expect(wrong.status).toBe(403);
    const second = await signIn(ADMIN);
    expect(second.csrf).not.toBe(owner.csrf);
    const foreign = await post(path, owner, { _csrf: second.csrf });
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).toContain("CSRF");
    expect(await refundStatus(refundId)).toBe("PENDING_APPROVAL");
    const ok = await post(path, second, { _csrf: second.csrf });
    expect(ok.status).toBe(303);
    expect(await refundStatus(refundId)).toBe("REJECTED");
  });

  test("every state-changing form refuses a missing token", async () => {
    const paths = [
      "/dashboard/logout",
      "/dashboard/s/demo-store/catalog/upload",
      "/dashboard/s/demo-store/settings/policies",
      "/dashboard/s/demo-store/settings/negotiation",
      "/dashboard/s/demo-store/settings/mcp-tools",
      "/dashboard/s/demo-store/settings/payment-methods",
      "/dashboard/s/demo-store/settings/coupons",
      "/dashboard/s/demo-store/settings/webhooks",
      `/dashboard/s/demo-store/settings/allowlist/${key.id}`,
      `/dashboard/s/demo-store/orders/${crypto.randomUUID()}/status`,
    ];
    for (const p of paths) expect({ p, status: (await post(p, owner, { status: "blocked", mode: "all" })).status }).toEqual({ p, status: 403 });
  });

  test("a path id that is not a UUID is 404 on every page and form that takes one, with a valid token", async () => {
    const id = crypto.randomUUID();
    const bad = "not-a-uuid";
    const pages = [`/dashboard/s/demo-store/orders/${bad}`];
    const forms = [
      `/dashboard/s/demo-store/orders/${bad}/status`,
      `/dashboard/s/demo-store/refunds/${bad}/approve`,
      `/dashboard/s/demo-store/refunds/${id}/maybe`,
      `/dashboard/s/demo-store/settings/allowlist/${bad}`,
      `/dashboard/s/demo-store/settings/webhooks/${bad}/rotate`,
      `/dashboard/s/demo-store/settings/webhooks/${bad}/delete`,
      `/dashboard/s/demo-store/settings/webhooks/${bad}/deliveries/${id}/redeliver`,
      `/dashboard/s/demo-store/settings/webhooks/${id}/deliveries/${bad}/redeliver`,
    ];
    for (const p of pages) expect({ p, status: (await get(p, owner)).status }).toEqual({ p, status: 404 });
    for (const p of forms) expect({ p, status: (await post(p, owner, { _csrf: owner.csrf, status: "blocked" })).status }).toEqual({ p, status: 404 });
  });

  test("the log-in form needs its own token (bound to a cookie of the log-in page)", async () => {
    const r = await srv.fetch("/dashboard/login", { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form({ email: ADMIN.email, password: ADMIN.password }) });
    expect(r.status).toBe(403);
    expect(r.headers.get("set-cookie")).toBeNull();
    const page = await srv.fetch("/dashboard/login");
    const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const noCookie = await srv.fetch("/dashboard/login", { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form({ _csrf: token, email: ADMIN.email, password: ADMIN.password }) });
    expect(noCookie.status).toBe(403);
  });

  test("the session cookie is HttpOnly, SameSite=Strict and scoped to /dashboard (Secure is added in production)", async () => {
    const page = await srv.fetch("/dashboard/login");
    const login = page.headers.get("set-cookie")!;
    expect(login).toContain("HttpOnly");
    expect(login).toContain("SameSite=Strict");
    const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const r = await srv.fetch("/dashboard/login", {
      method: "POST",
      redirect: "manual",
      headers: { cookie: login.split(";")[0]!, "content-type": "application/x-www-form-urlencoded" },
      body: form({ _csrf: token, email: ADMIN.email, password: ADMIN.password }),
    });
    const cookie = r.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^acs_dash=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/dashboard");
    expect(cookie).not.toContain("Secure"); // NODE_ENV=test; the production flag is unit-tested (session cookie builder)
    // Only a hash of the id is stored.
    const id = /^acs_dash=([^;]+)/.exec(cookie)![1]!;
    const rows = await srv.db.sql`SELECT 1 FROM dashboard_sessions WHERE id_hash = ${id} OR csrf_secret = ${id}`;
    expect(rows.length).toBe(0);
  });

  test("wrong credentials give 401 and no session", async () => {
    const page = await srv.fetch("/dashboard/login");
    const c = page.headers.get("set-cookie")!.split(";")[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const r = await srv.fetch("/dashboard/login", { method: "POST", redirect: "manual", headers: { cookie: c, "content-type": "application/x-www-form-urlencoded" }, body: form({ _csrf: token, email: ADMIN.email, password: "nope" }) });
    expect(r.status).toBe(401);
    expect(r.headers.get("set-cookie")).toBeNull();
    expect(await r.text()).toContain("Invalid e-mail or password");
  });
});

describe("sessions", () => {
  test("log-out deletes the session; an expired or idle session is refused", async () => {
    const s = await signIn(ADMIN);
    expect((await get("/dashboard/s/demo-store", s)).status).toBe(200);
    const out = await post("/dashboard/logout", s, { _csrf: s.csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await get("/dashboard/s/demo-store", s)).status).toBe(303);

    const e = await signIn(ADMIN);
    await srv.db.sql`UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE id_hash = ${idHash(e)}`;
    expect((await get("/dashboard/s/demo-store", e)).status).toBe(303);

    const idle = await signIn(ADMIN);
    await srv.db.sql`UPDATE dashboard_sessions SET last_seen_at = now() - interval '3 hours' WHERE id_hash = ${idHash(idle)}`;
    expect((await get("/dashboard/s/demo-store", idle)).status).toBe(303);
    // The first two sessions (owner, stranger) are untouched.
    expect((await get("/dashboard/s/demo-store", owner)).status).toBe(200);
  });
});

describe("pages and forms", () => {
  test("merchant data is escaped: a product title with markup is shown as text", async () => {
    const admin = await login(srv);
    const put = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
      method: "PUT",
      headers: { authorization: `Bearer ${admin}` },
      body: { products: [{ externalId: "XSS-1", title: `<script>alert("x")</script><img src=x onerror=alert(1)>`, price: 1, currency: "USD" }] },
    });
    expect(put.body.data.accepted).toBe(1);
    const page = await (await get("/dashboard/s/demo-store/catalog", owner)).text();
    expect(page).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
    expect(page).not.toContain("<script>alert");
    expect(page).not.toContain("<img src=x");
  });

  test("the dashboard is not in the OpenAPI document", async () => {
    const doc = await srv.json("/api/v1/openapi.json");
    expect(Object.keys(doc.body.paths).filter((p) => p.startsWith("/dashboard"))).toEqual([]);
  });

  test("a JSONL upload uses catalog ingestion: per-line results with line numbers", async () => {
    const fd = new FormData();
    fd.append("_csrf", owner.csrf);
    const lines = [
      JSON.stringify({ externalId: "UP-1", title: "Upload One", price: 3.5, currency: "USD" }),
      "",
      JSON.stringify({ externalId: "UP-2", title: "Bad price", price: 1.234, currency: "USD" }),
      "[oops",
    ];
    fd.append("file", new File([lines.join("\n")], "cat.jsonl", { type: "application/x-ndjson" }));
    const r = await srv.fetch("/dashboard/s/demo-store/catalog/upload", { method: "POST", headers: { cookie: owner.cookie }, body: fd });
    expect(r.status).toBe(200);
    const page = await r.text();
    expect(page).toContain("3 lines read");
    expect(page).toContain("1 accepted");
    expect(page).toMatch(/<td data-label="Line">3<\/td><td data-label="External id">UP-2<\/td>/);
    expect(page).toMatch(/<td data-label="Line">4<\/td>/);
    const rows = await srv.db.sql<{ price_minor: number }[]>`SELECT price_minor FROM products WHERE store_slug = 'demo-store' AND external_id = 'UP-1'`;
    expect(Number(rows[0]!.price_minor)).toBe(350);
  });

  test("settings forms change the store through its actor: MCP tools, payment rails, coupons, policies, negotiation, allowlist", async () => {
    const s = "/dashboard/s/demo-store/settings";
    expect((await post(`${s}/mcp-tools`, owner, { _csrf: owner.csrf, mode: "selected", tools: ["search_products", "get_cart"] })).status).toBe(303);
    let [row] = await srv.db.sql<{ enabled_mcp_tools: string[] | null; payment_methods: string[]; policies: Record<string, unknown>; negotiation_rules: Record<string, unknown> | null }[]>`
      SELECT enabled_mcp_tools, payment_methods, policies, negotiation_rules FROM stores WHERE slug = 'demo-store'`;
    expect(row!.enabled_mcp_tools).toEqual(["get_cart", "search_products"]);
    await post(`${s}/mcp-tools`, owner, { _csrf: owner.csrf, mode: "selected", tools: ["no_such_tool"] });
    await post(`${s}/mcp-tools`, owner, { _csrf: owner.csrf, mode: "all" });

    await post(`${s}/payment-methods`, owner, { _csrf: owner.csrf, methods: ["card", "MOCK"] });
    await post(`${s}/coupons`, owner, { _csrf: owner.csrf, code: "dash25", kind: "percent", value: "25", minSpend: "10", usageLimit: "5" });
    await post(`${s}/coupons/WELCOME10/active`, owner, { _csrf: owner.csrf, active: "0" });
    await post(`${s}/policies`, owner, { _csrf: owner.csrf, acceptsReturns: "1", returnWindowDays: "45", freeShippingThreshold: "75.5", shippingEstimateDays: "2-4", supportResponseTimeSla: "12h" });
    await post(`${s}/negotiation`, owner, { _csrf: owner.csrf, enabled: "1", floorPercent: "70", autoAcceptPercent: "90", maxRounds: "2", excludedCategories: "Electronics\nToys" });
    await post(`${s}/allowlist/${key.id}`, owner, { _csrf: owner.csrf, status: "blocked" });
    [row] = await srv.db.sql`SELECT enabled_mcp_tools, payment_methods, policies, negotiation_rules FROM stores WHERE slug = 'demo-store'`;
    expect(row!.enabled_mcp_tools).toBeNull();
    expect(row!.payment_methods).toEqual(["card", "MOCK"]);
    expect(row!.policies).toMatchObject({ acceptsReturns: true, returnWindowDays: 45, freeShippingThresholdMinor: 7550, shippingEstimateDays: "2-4", supportResponseTimeSla: "12h" });
    expect(row!.negotiation_rules).toEqual({ enabled: true, floorPercent: 70, autoAcceptPercent: 90, maxRounds: 2, excludedCategories: ["Electronics", "Toys"] });
    const coupons = await srv.db.sql<{ code: string; value: number; active: boolean; usage_limit: number | null; min_spend_minor: number }[]>`
      SELECT code, value, active, usage_limit, min_spend_minor FROM coupons WHERE store_slug = 'demo-store' AND code IN ('DASH25', 'WELCOME10') ORDER BY code`;
    expect(coupons.map((c) => ({ ...c, value: Number(c.value), min_spend_minor: Number(c.min_spend_minor) }))).toEqual([
      { code: "DASH25", value: 25, active: true, usage_limit: 5, min_spend_minor: 1000 },
      { code: "WELCOME10", value: 10, active: false, usage_limit: null, min_spend_minor: 0 },
    ]);
    const [al] = await srv.db.sql<{ status: string }[]>`SELECT status FROM store_agent_allowlist WHERE store_slug = 'demo-store' AND agent_key_id = ${key.id}`;
    expect(al!.status).toBe("blocked");
    await post(`${s}/allowlist/${key.id}`, owner, { _csrf: owner.csrf, status: "allowed" });

    // Refusals come back as a notice on the page and change nothing.
    const bad = await post(`${s}/negotiation`, owner, { _csrf: owner.csrf, enabled: "1", floorPercent: "95", autoAcceptPercent: "90", maxRounds: "2" });
    expect(bad.status).toBe(303);
    const notice = await (await get(s, owner)).text();
    expect(notice).toContain('class="flash error"');
    expect(notice).toContain("floorPercent");
    const mock = await srv.db.sql<{ payment_methods: string[] }[]>`SELECT payment_methods FROM stores WHERE slug = 'greenleaf-living'`;
    await post("/dashboard/s/greenleaf-living/settings/payment-methods", stranger, { _csrf: stranger.csrf, methods: ["card", "MOCK"] });
    const after = await srv.db.sql<{ payment_methods: string[] }[]>`SELECT payment_methods FROM stores WHERE slug = 'greenleaf-living'`;
    expect(after[0]!.payment_methods).toEqual(mock[0]!.payment_methods);
  });

  test("an order's status moves through the order machine; an illegal move is refused with a notice", async () => {
    const { orderId } = await pendingRefund();
    const path = `/dashboard/s/demo-store/orders/${orderId}/status`;
    expect((await post(path, owner, { _csrf: owner.csrf, status: "shipped", note: "DHL 123" })).status).toBe(303);
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(o!.status).toBe("shipped");
    await post(path, owner, { _csrf: owner.csrf, status: "fulfilled" });
    const page = await (await get(`/dashboard/s/demo-store/orders/${orderId}`, owner)).text();
    expect(page).toContain('class="flash error"');
    expect(page).toContain("DHL 123");
    const [o2] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(o2!.status).toBe("shipped");
  });

  test("a note past 500 characters is refused with a notice saying so (audit X-F7: the cut split an emoji); 500 are kept whole", async () => {
    const { orderId } = await pendingRefund();
    const path = `/dashboard/s/demo-store/orders/${orderId}/status`;
    const notice = async () => /class="flash [a-z]+" role="(?:alert|status)">([^<]*)</.exec(await (await get(`/dashboard/s/demo-store/orders/${orderId}`, owner)).text())?.[1];
    const tooLong = `${"a".repeat(499)}😀`; // 501 UTF-16 units, as REST's maxLength and the input's maxlength count
    expect((await post(path, owner, { _csrf: owner.csrf, status: "shipped", note: tooLong })).status).toBe(303);
    expect(await notice()).toBe("A note has at most 500 characters; nothing was changed.");
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(o!.status).not.toBe("shipped");
    const fits = `${"b".repeat(498)}😀`;
    expect((await post(path, owner, { _csrf: owner.csrf, status: "shipped", note: fits })).status).toBe(303);
    expect(await notice()).toBe("Order is now shipped.");
    const page = await (await get(`/dashboard/s/demo-store/orders/${orderId}`, owner)).text();
    expect(page).toContain(fits);
  });
});
