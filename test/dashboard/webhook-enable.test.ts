/**
 * Settings → Webhooks shows a disabled endpoint (why and since when) and turns it back on (docs/dashboard.md; the
 * service disables an endpoint after 5 days without a 2xx, test/http/webhook-endpoint-disabled.test.ts walks that).
 * Here the merchant disables it with the page's button, sees it disabled, and enables it again.
 */
import { beforeAll, expect, test } from "bun:test";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let s: DashboardSession;

beforeAll(async () => {
  s = await dashboardSession(srv, SLUG);
}, 120_000);

const base = `/dashboard/s/${SLUG}/settings/webhooks`;
const post = (path: string) =>
  srv.fetch(`${base}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf }),
  });
const page = async () => (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();

test("a disabled endpoint is shown disabled with its reason and an Enable button, and enabling it shows it enabled", async () => {
  const added = await srv.fetch(base, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, url: "http://127.0.0.1:9/enable-hook", events: "order.created" }),
  });
  expect(added.status).toBe(201);
  const [ep] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM webhook_endpoints WHERE store_slug = ${SLUG} AND url = 'http://127.0.0.1:9/enable-hook'`;
  const enabledPage = await page();
  expect(enabledPage).toContain(`action="${base}/${ep!.id}/disable"`);
  expect(enabledPage).not.toContain(`action="${base}/${ep!.id}/enable"`);

  const off = await post(`/${ep!.id}/disable`);
  expect(off.status).toBe(303);
  const disabledPage = await page();
  expect(disabledPage).toContain("Endpoint http://127.0.0.1:9/enable-hook disabled.");
  expect(disabledPage).toContain(`<span class="badge bad">disabled</span>`);
  expect(disabledPage).toContain("Disabled by the merchant. No deliveries are made for new events until you enable it");
  expect(disabledPage).toContain(`action="${base}/${ep!.id}/enable"`);
  const [row] = await srv.db.sql<{ disabled_at: Date | null }[]>`SELECT disabled_at FROM webhook_endpoints WHERE id = ${ep!.id}`;
  expect(row!.disabled_at).not.toBeNull();

  const on = await post(`/${ep!.id}/enable`);
  expect(on.status).toBe(303);
  const again = await page();
  expect(again).toContain("Endpoint http://127.0.0.1:9/enable-hook enabled: new events are delivered again (events while it was disabled are not).");
  expect(again).toContain(`action="${base}/${ep!.id}/disable"`);
  expect(again).not.toContain(`<span class="badge bad">disabled</span>`);
}, 60_000);

test("another merchant's enable through the dashboard is 404 and changes nothing", async () => {
  const other = await dashboardSession(srv, "northwind-outfitters");
  const [ep] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM webhook_endpoints WHERE store_slug = ${SLUG} AND url = 'http://127.0.0.1:9/enable-hook'`;
  await post(`/${ep!.id}/disable`);
  const r = await srv.fetch(`${base}/${ep!.id}/enable`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: other.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: other.csrf }),
  });
  expect(r.status).toBe(404);
  const [row] = await srv.db.sql<{ disabled_at: Date | null }[]>`SELECT disabled_at FROM webhook_endpoints WHERE id = ${ep!.id}`;
  expect(row!.disabled_at).not.toBeNull();
}, 60_000);
