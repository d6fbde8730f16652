/**
 * The dashboard's settings forms apply REST's rules, through the real forms against the real server and Postgres:
 * a coupon passes the one check POST /coupons uses (`couponFromInput`: whole percent, money of the store's currency
 * within the maximum, a real expiry date; audit A3-3, A3-8), and excluded negotiation categories are one per line,
 * so a category with a comma stays whole (audit A3-9).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let s: DashboardSession;

beforeAll(async () => {
  s = await dashboardSession(srv, SLUG);
}, 120_000);

const base = `/dashboard/s/${SLUG}/settings`;
const post = (path: string, fields: Record<string, string>) =>
  srv.fetch(`${base}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, ...fields }),
  });

/** Posts the coupon form; the notice the settings page then shows, and the stored row (null: none). */
async function addCoupon(fields: Record<string, string>) {
  const r = await post("/coupons", fields);
  expect(r.status).toBe(303);
  const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
  const shown = /role="(?:alert|status)"[^>]*>([^<]*)</.exec(page)?.[1];
  const notice = shown === undefined ? null : shown.replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const [row] = await srv.db.sql<{ kind: string; value: string; min_spend_minor: string; expires_at: Date | null }[]>`
    SELECT kind, value, min_spend_minor, expires_at FROM coupons WHERE store_slug = ${SLUG} AND code = ${fields.code!.toUpperCase()}`;
  return { notice, row: row ? { kind: row.kind, value: Number(row.value), minSpendMinor: Number(row.min_spend_minor), expiresAt: row.expires_at?.toISOString() ?? null } : null };
}

describe("the dashboard coupon form uses REST's checks (A3-3, A3-8)", () => {
  test("values REST refuses are refused with its message and nothing is stored", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ code: "DFIX1E15", kind: "fixed", value: "1e15" }, "Invalid value: above the maximum amount (10000000000 USD)"],
      [{ code: "DFIXDEC", kind: "fixed", value: "1.234" }, "Invalid value: more decimals than USD has (2)"],
      [{ code: "DPCT", kind: "percent", value: "10.6" }, "A percent coupon's value is a whole percentage 1..100."],
      [{ code: "DMIN", kind: "percent", value: "10", minSpend: "0.005" }, "Invalid minSpend: more decimals than USD has (2)"],
      [{ code: "DFEB", kind: "percent", value: "10", expiresAt: "2027-02-30T00:00" }, "Invalid expiresAt: 2027-02-30 is not a date in the calendar"],
      [{ code: "DLIM", kind: "percent", value: "10", usageLimit: "2.5" }, "Invalid usageLimit: must be a whole number from 0 to 2147483647"],
    ];
    for (const [fields, message] of cases) {
      const out = await addCoupon(fields);
      expect({ code: fields.code, ...out }).toEqual({ code: fields.code, notice: message, row: null });
    }
  });

  test("a valid coupon is stored as REST stores it", async () => {
    const out = await addCoupon({ code: "DOK", kind: "fixed", value: "12.5", minSpend: "40", expiresAt: "2028-02-29T12:00", usageLimit: "3" });
    expect(out.row).toEqual({ kind: "fixed", value: 1250, minSpendMinor: 4000, expiresAt: "2028-02-29T12:00:00.000Z" });
  });
});

describe("excluded negotiation categories (A3-9)", () => {
  test("one per line: a category with a comma stays one category, and the form shows it back as it is", async () => {
    const r = await post("/negotiation", { enabled: "1", floorPercent: "70", autoAcceptPercent: "90", maxRounds: "2", excludedCategories: "Home, Garden\r\nToys\n\n" });
    expect(r.status).toBe(303);
    const [row] = await srv.db.sql<{ rules: { excludedCategories: string[] } }[]>`SELECT negotiation_rules AS rules FROM stores WHERE slug = ${SLUG}`;
    expect(row!.rules.excludedCategories).toEqual(["Home, Garden", "Toys"]);
    const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
    expect(page).toContain('<textarea id="excl" name="excludedCategories" rows="3">Home, Garden\nToys</textarea>');
  });
});

describe("policies form and what agents read (A2-F12)", () => {
  test("the form edits the stored estimate (3-6) and says agents read the domestic zone's (free from $60.00, 3-5 days)", async () => {
    const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
    expect(page).toContain('name="shippingEstimateDays" maxlength="50" placeholder="3-5" value="3-6"');
    expect(page).toContain("Agents now read: <strong data-agent-shipping>free shipping from $60.00, 3-5 days</strong>.");
  });
});

/**
 * The number inputs of a page whose value a browser would refuse to submit (HTML step rule: the value minus the step
 * base, `min` or else `value`, is a whole number of steps; "any" takes every value), as "name=value (step)".
 */
function unsubmittable(page: string): string[] {
  const out: string[] = [];
  for (const [tag] of page.matchAll(/<input [^>]*type="number"[^>]*>/g)) {
    const a = Object.fromEntries([...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (!a.value || a.step === "any") continue;
    const step = Number(a.step ?? "1");
    const steps = (Number(a.value) - Number(a.min ?? a.value)) / step;
    if (Math.abs(steps - Math.round(steps)) > 1e-9) out.push(`${a.name}=${a.value} (${a.step ?? "1"})`);
  }
  return out;
}

describe("values stored through REST submit as they are (audit X-F2)", () => {
  test("percents at any precision and money to the currency's minor unit leave every settings input submittable", async () => {
    const other = "summit-sports-co";
    const token = await login(srv, merchantLogin(other));
    const put = await srv.json(`/api/v1/merchant/stores/${other}/policies`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
      body: {
        acceptsReturns: true,
        returnWindowDays: 30,
        restockingFeePercent: 12.25,
        negotiation: { enabled: true, floorPercent: 82.25, autoAcceptPercent: 95.125, maxRounds: 3, excludedCategories: [] },
      },
    });
    expect(put.status).toBe(200);
    // a 3-decimal currency with a threshold using all three (as REST stores 60.125 KWD)
    await srv.db.sql`UPDATE stores SET currency = 'KWD', policies = policies || '{"freeShippingThresholdMinor": 60125}'::jsonb WHERE slug = ${other}`;
    const o = await dashboardSession(srv, other);
    const page = await (await srv.fetch(`/dashboard/s/${other}/settings`, { headers: { cookie: o.cookie } })).text();
    expect(unsubmittable(page)).toEqual([]);
    expect(page).toContain('name="restockingFeePercent" min="0" max="100" step="any" value="12.25"');
    expect(page).toContain('name="floorPercent" min="0" max="100" step="any" value="82.25"');
    expect(page).toContain('name="freeShippingThreshold" min="0" step="0.001" value="60.125"');
    expect(page).toContain('name="value" min="0.001" step="0.001" required');
    expect(page).toContain('name="minSpend" min="0" step="0.001"');
  });
});

describe("the policies form's returns box and refusals (audit X-F5)", () => {
  const policiesOf = async () => (await srv.db.sql<{ policies: Record<string, unknown> }[]>`SELECT policies FROM stores WHERE slug = ${SLUG}`)[0]!.policies;

  test("unchecking Accepts returns switches returns off, although the stored window is still in its field", async () => {
    const on = await post("/policies", { acceptsReturns: "1", returnWindowDays: "30", shippingEstimateDays: "3-6", supportResponseTimeSla: "24h" });
    expect(on.status).toBe(303);
    expect((await policiesOf()).returnWindowDays).toBe(30);
    const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
    expect(page).toContain('name="returnWindowDays" min="0" max="3650" value="30"');
    // the browser sends the form as shown, the box unchecked
    const off = await post("/policies", { returnWindowDays: "30", shippingEstimateDays: "3-6", supportResponseTimeSla: "24h" });
    expect(off.status).toBe(303);
    const after = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
    expect(/role="(?:alert|status)"[^>]*>([^<]*)</.exec(after)?.[1]).toMatch(/^Policies saved \(version \d+\)\.$/);
    const stored = await policiesOf();
    expect(stored.acceptsReturns).toBe(false);
    expect(stored.returnWindowDays).toBeUndefined();
  });

  test("a refused change shows the form again as posted, with the refusal, and changes nothing", async () => {
    const before = await policiesOf();
    const r = await post("/policies", { acceptsReturns: "1", returnWindowDays: "45", restockingFeePercent: "150", shippingEstimateDays: "4-8", supportResponseTimeSla: "48h" });
    expect(r.status).toBe(400);
    const page = await r.text();
    expect(page).toMatch(/role="alert">Invalid restockingFeePercent: [^<]+</);
    expect(page).toContain('name="acceptsReturns" value="1" checked');
    expect(page).toContain('name="returnWindowDays" min="0" max="3650" value="45"');
    expect(page).toContain('step="any" value="150"');
    expect(page).toContain('name="shippingEstimateDays" maxlength="50" placeholder="3-5" value="4-8"');
    expect(page).toContain('name="supportResponseTimeSla" maxlength="50" placeholder="24h" value="48h"');
    expect(await policiesOf()).toEqual(before);
  });
});

describe("refusals in words, not the actor message's schema text (audit X-F6)", () => {
  test("a coupon code outside the pattern is refused naming the rule, and nothing is stored", async () => {
    const out = await addCoupon({ code: "bad code!", kind: "percent", value: "10" });
    expect(out).toEqual({ notice: "Invalid code: use 2 to 64 letters, digits, hyphens (-) or underscores (_).", row: null });
  });

  test("an allowlist key id outside the message's uuid format is the 404 page, not a notice", async () => {
    const r = await post("/allowlist/11111111-1111-1111-1111-111111111111", { status: "blocked" });
    expect(r.status).toBe(404);
    const page = await r.text();
    expect(page).toContain("<h1>Not found</h1>");
    expect(page).not.toContain("setAllowlist");
  });
});
