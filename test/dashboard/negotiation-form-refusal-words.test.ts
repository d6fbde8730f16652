/**
 * Helper F (session 20): the negotiation form's refusals read TypeBox's first error of the whole policies object, so a
 * rule inside the negotiation rules (an excluded category over 255 characters, more than 100 categories) was shown as
 * "Invalid negotiation: Expected union value" (the rules are an object-or-null union): it names neither the field nor
 * the rule. The form now answers as REST does (`innerUnionFailure` and the words of `validationAnswer`): the field
 * inside the rules and its bound.
 */
import { beforeAll, expect, test } from "bun:test";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const base = "/dashboard/s/greenleaf-living/settings";
let s: DashboardSession;

beforeAll(async () => {
  s = await dashboardSession(srv, "greenleaf-living");
}, 120_000);

async function saveRules(excludedCategories: string): Promise<string> {
  const r = await srv.fetch(`${base}/negotiation`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, enabled: "1", floorPercent: "80", autoAcceptPercent: "95", maxRounds: "3", excludedCategories }).toString(),
  });
  expect(r.status).toBe(303);
  const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
  return /role="alert">([^<]*)</.exec(page)?.[1] ?? "(no notice)";
}

test("an excluded category over 255 characters is refused naming the category and the bound", async () => {
  const notice = await saveRules(`Garden\n${"x".repeat(300)}`);
  expect(notice).not.toContain("union");
  expect(notice).toMatch(/^Invalid negotiation\.excludedCategories\.1: must be a string of at most 255 characters/);
});

test("more than 100 excluded categories are refused naming the list and the bound", async () => {
  const notice = await saveRules(Array.from({ length: 101 }, (_, i) => `Category ${i}`).join("\n"));
  expect(notice).not.toContain("union");
  expect(notice).toMatch(/^Invalid negotiation\.excludedCategories: must be an array of at most 100 items/);
});
