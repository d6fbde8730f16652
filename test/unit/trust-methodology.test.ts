import { describe, expect, test } from "bun:test";
import { methodologyDocument } from "../../actors/trust/methodology.ts";

describe("methodology document", () => {
  const doc = methodologyDocument();

  test("it is version 4.1.0 on the 0..100 scale, refreshed every 6 hours", () => {
    expect(doc.version).toBe("4.1.0");
    expect(doc.scale).toEqual({ min: 0, max: 100 });
    expect(doc.refresh_interval_hours).toBe(6);
  });

  test("the thresholds stay at top level on the 0..1 scale", () => {
    expect(doc.suspension_threshold).toBe(0.2);
    expect(doc.agent_threshold).toBe(0.7);
  });

  test("it lists the tiers with the spec's caps and weights", () => {
    const rows = doc.tiers.map((t) => [t.tier, t.cap, t.weights]);
    expect(rows).toEqual([
      ["insufficient_data", null, null],
      ["cold_start", 65, { reliability: 0, readiness: 1, evidence: 0 }],
      ["human_established", 85, { reliability: 0.7, readiness: 0.3, evidence: 0 }],
      ["agent_verified_thin", 92, { reliability: 0.45, readiness: 0.25, evidence: 0.3 }],
      ["agent_verified", 100, { reliability: 0.35, readiness: 0.25, evidence: 0.4 }],
    ]);
  });

  test("it lists the six data-quality levels and the twelve v2 components", () => {
    expect(doc.data_quality_levels.map((d) => d.level)).toEqual([
      "verified",
      "measured",
      "proxy",
      "self_declared",
      "not_applicable",
      "synthetic_blocked",
    ]);
    expect(doc.v2.components).toHaveLength(12);
    expect(doc.v2.version).toBe("2.0");
  });

  test("bands, statuses and the deprecated ladder are present", () => {
    expect(doc.display_bands.map((b) => b.min)).toEqual([0, 0.5, 0.7, 0.8, 0.9]);
    expect(doc.operational_statuses.map((s) => [s.min, s.status])).toEqual([
      [0, "suspended"],
      [0.2, "hidden"],
      [0.3, "deprioritized"],
      [0.5, "active"],
    ]);
    expect(doc.legacy_ladder.deprecated).toBe(true);
  });

  test("no qualified timestamp is applied", () => {
    expect(doc.qtsp.enabled).toBe(false);
  });

  test("the deprecated v41_methodology block mirrors the top-level fields", () => {
    const { v41_methodology, ...top } = doc;
    const { deprecated, ...nested } = v41_methodology;
    expect(deprecated).toBe(true);
    expect(nested).toEqual(top);
  });

  test("the document is plain JSON", () => {
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });
});
