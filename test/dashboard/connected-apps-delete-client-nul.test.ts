/**
 * Audit A-3 (fixed: the Connected apps delete route refuses an id no client can have with the 404 page before any
 * SQL, and the dashboard's error path answers a value the database refuses with the 400 page, as REST does).
 * Auditor A's finding: "Delete client" with a NUL byte in the id (`%00` in the path) reached deleteClient's SELECT,
 * which failed with "invalid byte sequence for encoding UTF8: 0x00", and the dashboard answered the 500 page (and
 * logged a "dashboard error" with a PostgresError stack). The same id on DELETE /api/v1/oauth/clients/{client_id}
 * is a 400. The route also cut the id to 200 characters, so a longer metadata-document URL posted by hand named
 * another (truncated) client.
 */
import { beforeAll, expect, test } from "bun:test";
import { ADMIN, login } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let mine: DashboardSession;

beforeAll(async () => {
  mine = await dashboardSession(srv, "greenleaf-living");
}, 120_000);

const post = (path: string, fields: Record<string, string> = {}) =>
  srv.fetch(path, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: mine.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: mine.csrf, ...fields }).toString(),
  });

test("deleting a client id with a NUL byte from the Connected apps page is the 404 page, not a 500", async () => {
  for (const id of ["%00", "mcpc_%00x"]) {
    const r = await post(`/dashboard/connected-apps/clients/${id}/delete`);
    expect({ id, status: r.status }).toEqual({ id, status: 404 });
  }
  // the REST route with the same id is already a 4xx
  const rest = await srv.fetch(`/api/v1/oauth/clients/mcpc_%00x`, { method: "DELETE", headers: { cookie: mine.cookie } });
  expect(rest.status).toBeLessThan(500);
}, 60_000);

/** The operator's dashboard session, through the log-in form as dashboardSession does for a merchant. */
async function operatorSession(): Promise<{ cookie: string; csrf: string }> {
  const page = await srv.fetch("/dashboard/login");
  const loginCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const lr = await srv.fetch("/dashboard/login", {
    method: "POST",
    redirect: "manual",
    headers: { cookie: loginCookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, email: ADMIN.email, password: ADMIN.password, next: "/dashboard" }),
  });
  const cookie = lr.headers.get("set-cookie")!.split(";")[0]!;
  const home = await srv.fetch("/dashboard/connected-apps", { headers: { cookie } });
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(await home.text())![1]! };
}

test("an operator deleting a long metadata-document client id from the page blocks that id, not a cut one", async () => {
  const op = await operatorSession();
  const url = `https://agent.example/${"p".repeat(250)}/client.json`;
  const r = await srv.fetch(`/dashboard/connected-apps/clients/${encodeURIComponent(url)}/delete`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: op.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: op.csrf }).toString(),
  });
  expect(r.status).toBe(303);
  // the whole URL is blocked: blocking it again over REST finds nothing to block (404), as for any blocked id
  const again = await srv.json(`/api/v1/oauth/clients/${encodeURIComponent(url)}`, { method: "DELETE", headers: { authorization: `Bearer ${await login(srv, ADMIN)}` } });
  expect(again.status).toBe(404);
  // an id longer than any client's is the 404 page
  const tooLong = await srv.fetch(`/dashboard/connected-apps/clients/mcpc_${"x".repeat(2100)}/delete`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: op.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: op.csrf }).toString(),
  });
  expect(tooLong.status).toBe(404);
}, 60_000);

// a guard: every other route already refused these before the database (the error path's isInputDataError 400 is the net)
test("a NUL byte anywhere a dashboard page reads from the request is a 4xx page, never the 500 page", async () => {
  const base = "/dashboard/s/greenleaf-living";
  const gets = [`/dashboard/s/%00`, `${base}/orders?status=%00`, `${base}/orders?q=%00`, `${base}/orders?cursor=%00`, `${base}/refunds?status=%00`, `${base}/refunds?cursor=%00`, `${base}/catalog?q=%00`];
  for (const path of gets) {
    const r = await srv.fetch(path, { redirect: "manual", headers: { cookie: mine.cookie } });
    expect({ path, status: r.status < 500 }).toEqual({ path, status: true });
  }
  const posts: [string, Record<string, string>][] = [
    [`${base}/settings/coupons/%00/active`, { active: "false" }],
    [`${base}/settings/allowlist/%00`, {}],
    [`${base}/settings/coupons`, { code: "A\u0000B", percent_off: "10" }],
    [`${base}/settings/policies`, { return_policy: "x\u0000y" }],
    [`${base}/settings/webhooks`, { url: "https://example.com/\u0000" }],
    [`${base}/settings/webhooks/%00/delete`, {}],
    [`${base}/refunds/%00/approve`, {}],
    [`${base}/orders/%00/status`, { status: "shipped" }],
  ];
  for (const [path, fields] of posts) {
    const r = await post(path, fields);
    expect({ path, status: r.status < 500 }).toEqual({ path, status: true });
  }
}, 60_000);
