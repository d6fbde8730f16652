import { describe, expect, test } from "bun:test";
import {
  AGENT_THRESHOLD,
  SUSPENSION_THRESHOLD,
  agentCheckoutAllowed,
  displayBand,
  isDiscoverable,
  legacyLevel,
  operationalStatus,
  storeStatusForMerchantSummary,
} from "../../actors/trust/bands.ts";

describe("display bands", () => {
  const cases: [number, string][] = [
    [0, "RESTRICTED"],
    [0.4999, "RESTRICTED"],
    [0.5, "CAUTION"],
    [0.6999, "CAUTION"],
    [0.7, "ACCEPTABLE"],
    [0.7999, "ACCEPTABLE"],
    [0.8, "GOOD"],
    [0.8999, "GOOD"],
    [0.9, "EXCELLENT"],
    [1, "EXCELLENT"],
  ];
  for (const [score, band] of cases) test(`a score of ${score} is ${band}`, () => expect(displayBand(score)).toBe(band as never));
});

describe("operational status intervals", () => {
  const cases: [number, string][] = [
    [0, "suspended"],
    [0.1999, "suspended"],
    [0.2, "hidden"],
    [0.2999, "hidden"],
    [0.3, "deprioritized"],
    [0.4999, "deprioritized"],
    [0.5, "active"],
    [1, "active"],
  ];
  for (const [score, status] of cases) test(`a score of ${score} is ${status}`, () => expect(operationalStatus(score)).toBe(status as never));

  test("scores computed from the 0..100 scale land on the exact boundaries", () => {
    expect(operationalStatus(20 / 100)).toBe("hidden");
    expect(operationalStatus(30 / 100)).toBe("deprioritized");
    expect(operationalStatus(50 / 100)).toBe("active");
    expect(displayBand(70 / 100)).toBe("ACCEPTABLE");
  });

  test("a score outside 0..1 is clamped, NaN is refused", () => {
    expect(operationalStatus(-1)).toBe("suspended");
    expect(displayBand(7)).toBe("EXCELLENT");
    expect(() => displayBand(Number.NaN)).toThrow(RangeError);
  });
});

describe("legacy ladder", () => {
  const cases: [number, string][] = [
    [0.1, "RESTRICTED"],
    [0.2, "RESTRICTED"],
    [0.4999, "RESTRICTED"],
    [0.5, "CAUTION"],
    [0.7, "STANDARD"],
    [0.8499, "STANDARD"],
    [0.85, "VERIFIED"],
    [0.9499, "VERIFIED"],
    [0.95, "ELITE"],
  ];
  for (const [score, level] of cases) test(`a score of ${score} is legacy ${level}`, () => expect(legacyLevel(score)).toBe(level as never));
});

describe("thresholds and the merchant summary status", () => {
  test("the suspension threshold is 0.2 and the agent threshold 0.7", () => {
    expect(SUSPENSION_THRESHOLD).toBe(0.2);
    expect(AGENT_THRESHOLD).toBe(0.7);
  });

  test("agent checkout needs at least 0.7", () => {
    expect(agentCheckoutAllowed(0.6999)).toBe(false);
    expect(agentCheckoutAllowed(0.7)).toBe(true);
  });

  test("discovery needs at least 0.3", () => {
    expect(isDiscoverable(0.2999)).toBe(false);
    expect(isDiscoverable(0.3)).toBe(true);
  });

  const summary: [number, string][] = [
    [0.5, "active"],
    [0.95, "active"],
    [0.4999, "deprioritized"],
    [0.3, "deprioritized"],
    [0.25, "deprioritized"],
    [0.05, "deprioritized"],
  ];
  for (const [score, status] of summary) {
    test(`a merchant summary at ${score} says ${status}`, () => expect(storeStatusForMerchantSummary(score)).toBe(status as never));
  }
});
