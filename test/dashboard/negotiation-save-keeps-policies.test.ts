/**
 * Saving the negotiation rules on Settings sends the store's policies back with them (PUT /policies replaces them).
 * It sent the policies as agents are shown them, so since the shown window became the one the refund rule applies
 * (f4f0d2c: 30 days when none is declared, 0 at a store without returns) a save declared that window for the
 * merchant, which trust's policy completeness then counted as declared. What the merchant declared is kept.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let s: DashboardSession;

beforeAll(async () => {
  s = await dashboardSession(srv, SLUG);
}, 120_000);

const putPolicies = async (body: Record<string, unknown>) => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/policies`, { method: "PUT", headers: { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` }, body });
  expect(r.status).toBe(200);
};
const saveNegotiation = () =>
  srv.fetch(`/dashboard/s/${SLUG}/settings/negotiation`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, enabled: "1", floorPercent: "80", autoAcceptPercent: "95", maxRounds: "2", excludedCategories: "" }),
  });
const stored = async () => (await srv.db.sql<{ policies: Record<string, unknown> }[]>`SELECT policies FROM stores WHERE slug = ${SLUG}`)[0]!.policies;

test("a store that accepts returns without declaring a window still declares none after the rules are saved", async () => {
  await putPolicies({ acceptsReturns: true, restockingFeePercent: 10 });
  expect((await saveNegotiation()).status).toBe(303);
  const p = await stored();
  expect(p.returnWindowDays).toBeUndefined();
  expect(p).toEqual({ acceptsReturns: true, restockingFeePercent: 10 });
  const [{ rules }] = await srv.db.sql<{ rules: Record<string, unknown> }[]>`SELECT negotiation_rules AS rules FROM stores WHERE slug = ${SLUG}`;
  expect(rules).toMatchObject({ enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 2 });
}, 60_000);

test("a store without returns does not get a 0-day window declared, and a declared window is kept as it was", async () => {
  await putPolicies({ acceptsReturns: false });
  expect((await saveNegotiation()).status).toBe(303);
  expect((await stored()).returnWindowDays).toBeUndefined();

  await putPolicies({ acceptsReturns: true, returnWindowDays: 14 });
  expect((await saveNegotiation()).status).toBe(303);
  expect(await stored()).toMatchObject({ acceptsReturns: true, returnWindowDays: 14 });
}, 60_000);
