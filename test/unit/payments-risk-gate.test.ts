import { describe, expect, test } from "bun:test";
import { countWithin, evaluateRisk, parseRiskMode, riskGateError, type RiskInput } from "../../actors/payments/risk-gate.ts";

const NOW = Date.UTC(2025, 5, 1, 12);
const H = 3_600_000;
const input = (over: Partial<RiskInput> = {}): RiskInput => ({
  amountMinor: 5_000,
  currency: "USD",
  now: NOW,
  keyCreatedAt: NOW - 30 * 24 * H,
  recentCheckoutTimes: [],
  ...over,
});
const codes = (i: RiskInput): string[] => evaluateRisk(i, "enforce").signals.map((s) => s.rule_code);

describe("risk rules", () => {
  const cases: [string, Partial<RiskInput>, "allow" | "step_up" | "block", string[]][] = [
    ["an ordinary checkout", {}, "allow", []],
    ["exactly 1,000.00", { amountMinor: 100_000 }, "allow", []],
    ["1,000.01", { amountMinor: 100_001 }, "step_up", ["AMOUNT_STEP_UP"]],
    ["exactly 10,000.00", { amountMinor: 1_000_000 }, "step_up", ["AMOUNT_STEP_UP"]],
    ["10,000.01", { amountMinor: 1_000_001 }, "block", ["AMOUNT_BLOCK"]],
    ["¥100,000 (zero-decimal currency under its own limit)", { amountMinor: 100_000, currency: "JPY" }, "allow", []],
    ["¥150,001", { amountMinor: 150_001, currency: "JPY" }, "step_up", ["AMOUNT_STEP_UP"]],
    ["1,000.000 KWD (three-decimal currency: limits in its own major unit)", { amountMinor: 1_000_000, currency: "KWD" }, "allow", []],
    ["1,000.001 KWD", { amountMinor: 1_000_001, currency: "KWD" }, "step_up", ["AMOUNT_STEP_UP"]],
    ["10,000.001 BHD", { amountMinor: 10_000_001, currency: "BHD" }, "block", ["AMOUNT_BLOCK"]],
    ["a key 59 minutes old spending 30.000 KWD", { keyCreatedAt: NOW - 59 * 60_000, amountMinor: 30_000, currency: "KWD" }, "allow", []],
    ["a key 59 minutes old spending 250.001 KWD", { keyCreatedAt: NOW - 59 * 60_000, amountMinor: 250_001, currency: "KWD" }, "step_up", ["NEW_KEY_HIGH_AMOUNT"]],
    ["CLP 100,000 (about 100 USD, zero-decimal with its own row)", { amountMinor: 100_000, currency: "CLP" }, "allow", []],
    ["CLP 950,001 (above about 1,000 USD)", { amountMinor: 950_001, currency: "CLP" }, "step_up", ["AMOUNT_STEP_UP"]],
    // review R-5: two- and three-decimal currencies of small unit kept limits of a few dollars (IDR blocked above ~0.63 USD)
    ["Rp 160,000.00 (about 10 USD, two-decimal currency of small unit)", { amountMinor: 16_000_000, currency: "IDR" }, "allow", []],
    ["Rp 16,000,000.01 (above about 1,000 USD)", { amountMinor: 1_600_000_001, currency: "IDR" }, "step_up", ["AMOUNT_STEP_UP"]],
    ["₹50,000.00 (about 590 USD)", { amountMinor: 5_000_000, currency: "INR" }, "allow", []],
    ["₹850,000.01 (above about 10,000 USD)", { amountMinor: 85_000_001, currency: "INR" }, "block", ["AMOUNT_BLOCK"]],
    ["IQD 1,000,000.000 (about 760 USD, three-decimal currency of small unit)", { amountMinor: 1_000_000_000, currency: "IQD" }, "allow", []],
    ["a key 59 minutes old spending ₹20,000.00 (about 235 USD)", { keyCreatedAt: NOW - 59 * 60_000, amountMinor: 2_000_000, currency: "INR" }, "allow", []],
    ["a currency written in lower case takes its own row", { amountMinor: 150_001, currency: "jpy" }, "step_up", ["AMOUNT_STEP_UP"]],
    ["9 checkouts in the last hour", { recentCheckoutTimes: Array(9).fill(NOW - 1) }, "allow", []],
    ["10 checkouts in the last hour", { recentCheckoutTimes: Array(10).fill(NOW - 1) }, "step_up", ["VELOCITY_STEP_UP"]],
    ["30 checkouts in the last hour", { recentCheckoutTimes: Array(30).fill(NOW - 1) }, "block", ["VELOCITY_BLOCK"]],
    ["30 checkouts more than an hour ago", { recentCheckoutTimes: Array(30).fill(NOW - H) }, "allow", []],
    ["a key 59 minutes old spending 250.01", { keyCreatedAt: NOW - 59 * 60_000, amountMinor: 25_001 }, "step_up", ["NEW_KEY_HIGH_AMOUNT"]],
    ["a key 59 minutes old spending 250.00", { keyCreatedAt: NOW - 59 * 60_000, amountMinor: 25_000 }, "allow", []],
    ["a key one hour old spending 900.00", { keyCreatedAt: NOW - H, amountMinor: 90_000 }, "allow", []],
    ["USD at a German store (one mismatch: reported only)", { storeCountry: "DE" }, "allow", ["CURRENCY_COUNTRY_MISMATCH"]],
    ["shipping to FR with a US card (one mismatch)", { shippingCountry: "FR", billingCountry: "US" }, "allow", ["SHIP_COUNTRY_MISMATCH"]],
    [
      "both mismatches together",
      { storeCountry: "DE", shippingCountry: "FR", billingCountry: "US" },
      "step_up",
      ["CURRENCY_COUNTRY_MISMATCH", "SHIP_COUNTRY_MISMATCH", "MISMATCH_COMBINED"],
    ],
    ["a block and a step-up together", { amountMinor: 2_000_000, recentCheckoutTimes: Array(10).fill(NOW - 1) }, "block", ["AMOUNT_BLOCK", "VELOCITY_STEP_UP"]],
  ];
  for (const [what, over, decision, fired] of cases) {
    test(`${what} → ${decision}`, () => {
      expect(evaluateRisk(input(over), "enforce").decision).toBe(decision);
      expect(codes(input(over))).toEqual(fired);
    });
  }

  test("the velocity window counts only the last hour and not the future", () => {
    expect(countWithin([NOW - H, NOW - H + 1, NOW, NOW + 1], NOW, H)).toBe(2);
  });
});

describe("observe and enforce modes", () => {
  const blocked = input({ amountMinor: 2_000_000 });
  const stepUp = input({ amountMinor: 200_000 });

  test("enforce applies a block as 403 policy_blocked naming the rule", () => {
    const r = evaluateRisk(blocked, "enforce");
    expect(r.effective).toBe("block");
    const err = riskGateError(r);
    expect(err?.code).toBe("policy_blocked");
    expect(err?.http).toBe(403);
    expect(err?.details?.rule_code).toBe("AMOUNT_BLOCK");
  });

  test("enforce turns a step-up into 202 user_action_required", () => {
    const err = riskGateError(evaluateRisk(stepUp, "enforce"));
    expect(err?.code).toBe("user_action_required");
    expect(err?.http).toBe(202);
  });

  test("observe allows everything but reports what it would have done", () => {
    for (const i of [blocked, stepUp]) {
      const r = evaluateRisk(i, "observe");
      expect(r.effective).toBe("allow");
      expect(r.decision).not.toBe("allow");
      expect(r.signals.length).toBeGreaterThan(0);
      expect(riskGateError(r)).toBeUndefined();
    }
  });

  test("an allowed checkout has no error in either mode", () => {
    expect(riskGateError(evaluateRisk(input(), "enforce"))).toBeUndefined();
  });

  test("the mode parses observe and enforce, defaults to observe, and refuses anything else", () => {
    expect(parseRiskMode("enforce")).toBe("enforce");
    expect(parseRiskMode("observe")).toBe("observe");
    expect(parseRiskMode(undefined)).toBe("observe");
    expect(() => parseRiskMode("ENFORCE")).toThrow();
  });
});
