import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { SandboxDecision } from "../../gateway/openapi/models.ts";
import { decisionStatus } from "../../gateway/rest/checkout.ts";

describe("the sandbox decision's documented status (review AD-4)", () => {
  test("the OpenAPI schema lists approved, captured and not_approved, and every status the route answers is one of them", () => {
    const base = { intent_id: "pi_x", decision: "approve" };
    for (const state of ["approved", "captured", "rejected", "not_approved"] as const) {
      expect(Value.Check(SandboxDecision, { ...base, status: decisionStatus(state) })).toBe(true);
    }
    expect(Value.Check(SandboxDecision, { ...base, status: "needs_buyer_approval" })).toBe(false);
  });
});
