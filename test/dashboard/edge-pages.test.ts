/**
 * Dashboard URLs a browser lands on without a route answering (audit X-F4): a GET on a form's POST URL (what the
 * address bar shows after an answer rendered on a POST, e.g. the upload's result), another method, or an unknown
 * path under /dashboard answered with the API's JSON 405/404 envelope, the agent transparency headers and no CSP.
 * They are now dashboard answers: 303 to the form's page, or the HTML 405/404 page with the dashboard's headers.
 */
import { expect, test } from "bun:test";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

/** The headers every dashboard HTML page has, and none of the agent ones. */
function expectDashboardHeaders(r: Response) {
  expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  expect(r.headers.get("x-frame-options")).toBe("DENY");
  expect(r.headers.get("cache-control")).toBe("no-store");
  expect(r.headers.get("x-initiated-by")).toBeNull();
  expect(r.headers.get("x-agent-commerce")).toBeNull();
}

test("a GET on a dashboard form's POST URL is sent to the form's page", async () => {
  const id = "4b3c1c1e-2f1a-4f0e-9c57-0d7f7f1d2a10";
  const cases: [string, string][] = [
    [`/dashboard/s/${STORE}/catalog/upload`, `/dashboard/s/${STORE}/catalog`],
    [`/dashboard/s/${STORE}/settings/webhooks/${id}/rotate`, `/dashboard/s/${STORE}/settings/webhooks`],
    [`/dashboard/s/${STORE}/settings/policies`, `/dashboard/s/${STORE}/settings`],
    [`/dashboard/s/${STORE}/orders/${id}/status`, `/dashboard/s/${STORE}/orders/${id}`],
    [`/dashboard/s/${STORE}/refunds/${id}/approve`, `/dashboard/s/${STORE}/refunds`],
    ["/dashboard/logout", "/dashboard"],
  ];
  for (const [path, page] of cases) {
    const r = await srv.fetch(path, { redirect: "manual" });
    expect({ path, status: r.status, location: r.headers.get("location"), agent: r.headers.get("x-initiated-by") }).toEqual({ path, status: 303, location: page, agent: null });
  }
});

test("another method on a dashboard form URL is the dashboard's 405 page with Allow", async () => {
  const r = await srv.fetch(`/dashboard/s/${STORE}/catalog/upload`, { method: "PUT", redirect: "manual" });
  expect(r.status).toBe(405);
  expect(r.headers.get("allow")).toBe("POST");
  expectDashboardHeaders(r);
  const body = await r.text();
  expect(body).toContain("<h1>Not available this way</h1>");
  expect(body).toContain("This address only answers a form (POST). Go back to the page the form was on.");
  expect(body).not.toContain('"success"');
});

test("a POST to a dashboard page that only opens with GET is the 405 page saying it is a page, not that it answers a form", async () => {
  const r = await srv.fetch(`/dashboard/s/${STORE}/catalog`, { method: "POST", body: "x=1", headers: { "content-type": "application/x-www-form-urlencoded" }, redirect: "manual" });
  expect(r.status).toBe(405);
  expect(r.headers.get("allow")).toBe("GET, HEAD");
  expectDashboardHeaders(r);
  const body = await r.text();
  expect(body).toContain("<h1>Not available this way</h1>");
  expect(body).toContain("This page opens from a link or the address bar (GET or HEAD); it does not take what was sent.");
  expect(body).not.toContain("only answers a form");
});

test("an unknown dashboard path is the dashboard's 404 page; an unknown API path keeps the JSON envelope", async () => {
  const r = await srv.fetch("/dashboard/no-such-page", { redirect: "manual" });
  expect(r.status).toBe(404);
  expectDashboardHeaders(r);
  expect(await r.text()).toContain("<h1>Not found</h1>");
  const api = await srv.fetch("/api/v1/no-such-route");
  expect(api.status).toBe(404);
  expect(api.headers.get("content-type")).toContain("application/json");
  expect(((await api.json()) as { code: string }).code).toBe("route_not_found");
});
