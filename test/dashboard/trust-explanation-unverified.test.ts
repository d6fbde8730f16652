/**
 * Helper D (session 20): the merchant dashboard's overview showed, for an UNVERIFIED store whose score reached 0.7,
 * "Agent checkout: not allowed" (the eligibility rule, audit B-1) and, under "Why this score", the explanation's
 * "Eligible for agent checkout." (explainTrust judged the score alone). No agent can reach such a store (every agent
 * read is 404, every cart refused), so the explanation must say so too. unverified-outlet (UNVERIFIED, 0.6877
 * seeded) is lifted over 0.7 by merchant-reported delivered orders, as test/http/trust-ineligible-checkout-flag.test.ts
 * does.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "unverified-outlet";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let s: DashboardSession;

beforeAll(async () => {
  const owner = await login(srv, merchantLogin(SLUG));
  const orders = Array.from({ length: 60 }, (_, i) => ({
    externalId: `d-unv-${i}`,
    buyer: `buyer${i}@d-unv.example`,
    status: "delivered",
    currency: "USD",
    items: [{ title: "thing", quantity: 1, unitPrice: 20 }],
    fulfilledOnTime: true,
  }));
  const rec = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { orders } });
  expect(rec.status).toBe(201);
  const rc = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: { authorization: `Bearer ${await login(srv)}` }, body: { slug: SLUG } });
  expect(rc.status).toBe(200);
  s = await dashboardSession(srv, SLUG);
}, 120_000);

test("the overview of an UNVERIFIED store over 0.7 does not call it eligible for agent checkout", async () => {
  const pub = await srv.json(`/api/v1/stores/${SLUG}/trust-score`);
  expect(pub.body.data.score_0to1).toBeGreaterThanOrEqual(0.7); // the precondition: the score alone would allow it
  const html = await (await srv.fetch(`/dashboard/s/${SLUG}`, { headers: { cookie: s.cookie } })).text();
  expect(html).toContain(`<dt>Agent checkout</dt><dd><span class="badge bad">not allowed</span>`);
  const why = html.slice(html.indexOf(`id="explain-h"`), html.indexOf(`id="hist-h"`));
  expect(why).not.toContain("Eligible for agent checkout");
  expect(why).toContain("identity is not verified");
}, 60_000);
