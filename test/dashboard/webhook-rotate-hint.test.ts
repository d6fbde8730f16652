/**
 * The dashboard's rotate texts say what rotation does (audit A8 LOW-1; docs/webhooks.md): only one old secret is
 * kept, so a rotation ends any earlier overlap. The confirm on "Rotate secret" and the hint shown with the new secret.
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
const post = (path: string, fields: Record<string, string>) =>
  srv.fetch(`${base}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, ...fields }),
  });

test("rotate confirm and hint say that a rotation ends any earlier overlap", async () => {
  const added = await post("", { url: "http://127.0.0.1:9/f8-hook", events: "order.created" });
  expect(added.status).toBe(201);
  const [ep] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM webhook_endpoints WHERE store_slug = ${SLUG} AND url = 'http://127.0.0.1:9/f8-hook'`;
  const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
  expect(page).toContain(`data-confirm="Create a new signing secret? The current one keeps working for 24 hours; any older one stops now."`);
  const rotated = await post(`/${ep!.id}/rotate`, {});
  expect(rotated.status).toBe(200);
  const html = await rotated.text();
  expect(html).toContain(`<p class="hint">The previous secret keeps signing alongside for 24 hours, until the next rotation (a rotation ends any earlier overlap).</p>`);
}, 60_000);
