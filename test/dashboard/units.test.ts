/** Pure parts of the dashboard: escaping templates, cookies, redirect targets, charts, catalog flags, rail rules. */
import { describe, expect, test } from "bun:test";
import { missingPolicyFields, productFlags } from "../../actors/store/merchant-reads.ts";
import { nextPaymentMethods } from "../../actors/store/settings.ts";
import { activityChart, scoreChart } from "../../gateway/dashboard/charts.ts";
import { html, Html, join } from "../../gateway/dashboard/html.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { actorMessage, safeNext } from "../../gateway/dashboard/index.ts";
import { factorLabel } from "../../gateway/dashboard/pages/overview.ts";
import { buildCookie } from "../../gateway/dashboard/session.ts";

describe("templates escape by default", () => {
  test("interpolated strings are escaped in text and attribute positions", () => {
    const evil = `"><script>alert('x')</script>&\``;
    const out = html`<p title="${evil}">${evil}</p>`.value;
    expect(out).toBe(`<p title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#96;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#96;</p>`);
  });

  test("nested templates and arrays are kept as markup; null, undefined and false render nothing", () => {
    const items = ["<a>", "b"].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.value).toBe("<ul><li>&lt;a&gt;</li><li>b</li></ul>0");
    expect(join([html`<b>x</b>`, "<i>"], ", ").value).toBe("<b>x</b>, &lt;i&gt;");
    expect(html`${"x"}` instanceof Html).toBe(true);
  });
});

describe("cookies and redirects", () => {
  test("the session cookie is HttpOnly and SameSite=Strict, with Secure only when asked (production)", () => {
    expect(buildCookie("acs_dash", "abc", { secure: false, maxAgeSeconds: 60 })).toBe("acs_dash=abc; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=60");
    expect(buildCookie("acs_dash", "abc", { secure: true, maxAgeSeconds: 60 })).toBe("acs_dash=abc; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=60; Secure");
    expect(buildCookie("acs_dash", "", { secure: true, maxAgeSeconds: 0 })).toContain("Max-Age=0");
  });

  test("only dashboard paths are accepted as the page to return to after log-in", () => {
    expect(safeNext("/dashboard/s/demo-store/orders?status=paid")).toBe("/dashboard/s/demo-store/orders?status=paid");
    for (const bad of [undefined, null, "", "https://evil.example", "//evil.example", "/dashboard//evil", "/dashboard/../x", "/dashboardX", "/dashboard\\x", "/dashboard\nx", "/api/v1"]) {
      expect(safeNext(bad)).toBe("/dashboard");
    }
  });
});

describe("charts", () => {
  test("the score chart draws a line over the thresholds and describes itself for screen readers", () => {
    const svg = scoreChart([{ at: 1000, score0to1: 0.5 }, { at: 3000, score0to1: 0.9 }], { from: 0, to: 4000, label: "History" }).value;
    expect(svg).toContain('role="img"');
    expect(svg).toContain('aria-label="History: 2 scores, latest 0.90"');
    expect(svg).toContain("agent checkout 0.70");
    expect(svg).toMatch(/<path d="M\d/);
    expect(scoreChart([], { from: 0, to: 1, label: "H" }).value).toContain("No score computed yet");
  });

  test("the activity chart stacks agent checkouts on human orders, one bar group per day", () => {
    const days = [
      { day: "2025-01-01", humanOrders: 2, agentOrders: 1 },
      { day: "2025-01-02", humanOrders: 0, agentOrders: 0 },
    ];
    const svg = activityChart(days, "Orders").value;
    expect(svg.match(/<g><title>/g)?.length).toBe(2);
    expect(svg).toContain("2025-01-01: 2 human, 1 agent");
    expect(svg).toContain("2 human orders and 1 agent checkouts over 2 days");
  });
});

describe("catalog and settings rules", () => {
  const now = new Date("2025-06-10T00:00:00Z");
  test("product flags: missing GTIN, missing images, stale after 7 days, out of stock, inactive", () => {
    expect(productFlags({ gtin: "4006381333931", imageCount: 2, syncedAt: new Date("2025-06-09T00:00:00Z"), inStock: true, active: true }, now)).toEqual([]);
    expect(productFlags({ gtin: null, imageCount: 0, syncedAt: new Date("2025-06-01T00:00:00Z"), inStock: false, active: false }, now)).toEqual([
      "missing_gtin",
      "missing_images",
      "stale",
      "out_of_stock",
      "inactive",
    ]);
  });

  test("missing policy fields; the return window only matters when returns are accepted", () => {
    expect(missingPolicyFields({ acceptsReturns: true })).toEqual(["returnWindowDays", "shippingEstimateDays", "supportResponseTimeSla"]);
    expect(missingPolicyFields({ acceptsReturns: false, shippingEstimateDays: "3-5", supportResponseTimeSla: "24h" })).toEqual([]);
  });

  test("MOCK can be kept or dropped but never added; rails come back in a fixed order", () => {
    expect(nextPaymentMethods(["MOCK", "card"], ["card", "MOCK", "x402"])).toEqual(["card", "x402", "MOCK"]);
    expect(nextPaymentMethods(["MOCK", "card"], ["card"])).toEqual(["card"]);
    expect(() => nextPaymentMethods(["card"], ["MOCK"])).toThrow("once removed it cannot be enabled again");
  });

  test("trust factor names read as words", () => {
    expect(factorLabel("merchantReliabilityBase.disputeRefundHealth")).toBe("Dispute refund health");
    expect(factorLabel("dispute_rate")).toBe("Dispute rate");
  });
});

describe("notices in words (audit X-F6)", () => {
  test("an actor's message-schema refusal is shown as the field it names, not the message and schema text", () => {
    const refusal = (field?: string) =>
      new ActorError("INVALID_ARGUMENT", "invalid store.upsertCoupon message: Expected string to match '^[A-Za-z0-9_-]{2,64}$'", field === undefined ? undefined : { field });
    expect(actorMessage(refusal("/code"))).toBe("Invalid code: the value is not accepted.");
    expect(actorMessage(refusal("/negotiation/floorPercent"))).toBe("Invalid negotiation.floorPercent: the value is not accepted.");
    expect(actorMessage(refusal())).toBe("A value in the form is not accepted; nothing was changed.");
    expect(actorMessage(new ActorError("validation_error", "Invalid value: more decimals than USD has (2)", { field: "value" }))).toBe("Invalid value: more decimals than USD has (2)");
  });
});
