/**
 * The velocity read stops at VELOCITY_READ_LIMIT sessions (actors/store/commerce.ts `riskColumns`): enough for the
 * gate to decide, since no rule counts past VELOCITY_BLOCK_COUNT. The pure part: the decisions at the thresholds, and
 * the block message saying "at least" where the count may have been cut.
 */
import { describe, expect, test } from "bun:test";
import { evaluateRisk, velocityMessage, VELOCITY_BLOCK_COUNT, VELOCITY_READ_LIMIT, VELOCITY_STEP_UP_COUNT } from "../../actors/payments/risk-gate.ts";

const NOW = 1_800_000_000_000;
const gate = (sessions: number) =>
  evaluateRisk({ amountMinor: 1_000, currency: "USD", now: NOW, keyCreatedAt: NOW - 86_400_000, recentCheckoutTimes: Array.from({ length: sessions }, (_, i) => NOW - 1_000 * (i + 1)) }, "enforce");

describe("the velocity read's bound", () => {
  test("the read returns enough sessions for every velocity rule to decide", () => {
    expect(VELOCITY_READ_LIMIT).toBeGreaterThanOrEqual(VELOCITY_BLOCK_COUNT);
    expect(VELOCITY_BLOCK_COUNT).toBeGreaterThan(VELOCITY_STEP_UP_COUNT);
  });

  test("the decisions at the thresholds are the same as without a bound: 9 allow, 10 and 29 step up, 30 blocks", () => {
    expect(gate(9).decision).toBe("allow");
    expect(gate(10).signals).toEqual([{ rule_code: "VELOCITY_STEP_UP", decision: "step_up", message: "10 checkouts by this key in the last hour" }]);
    expect(gate(29).signals).toEqual([{ rule_code: "VELOCITY_STEP_UP", decision: "step_up", message: "29 checkouts by this key in the last hour" }]);
    expect(gate(VELOCITY_READ_LIMIT).signals).toEqual([{ rule_code: "VELOCITY_BLOCK", decision: "block", message: "at least 30 checkouts by this key in the last hour" }]);
  });

  test("a count at the read's limit says 'at least', one below it says the count", () => {
    expect(velocityMessage(30)).toBe("at least 30 checkouts by this key in the last hour");
    expect(velocityMessage(29)).toBe("29 checkouts by this key in the last hour");
    expect(velocityMessage(10)).toBe("10 checkouts by this key in the last hour");
  });
});
