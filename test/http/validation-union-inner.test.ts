/**
 * A field whose schema is a union of an object and null (PUT /policies `negotiation`) answers the rule the object
 * broke, on the inner field's path (infra/validation-message.ts `innerUnionFailure`), not "must be an
 * object or null (got an object)" on the whole field (G2's note). A value of none of the union's kinds keeps the
 * union's own rule.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const rules = { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 3 };

let srv: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const putPolicies = (body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}/policies`, { method: "PUT", headers: owner, body });

describe("a union of an object and null names the inner rule that failed", () => {
  test("101 excluded categories: 400 on negotiation.excludedCategories, maxItems 100", async () => {
    const r = await putPolicies({ acceptsReturns: true, negotiation: { ...rules, excludedCategories: Array.from({ length: 101 }, (_, i) => `c${i}`) } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      success: false,
      code: "validation_error",
      error: expect.stringMatching(/^Invalid body field 'negotiation\.excludedCategories': must be an array of at most 100 items \(got /),
      details: { location: "body", field: "negotiation.excludedCategories", type: "array", maxItems: 100 },
    });
  });

  test("a category of 256 characters: 400 on negotiation.excludedCategories.1, maxLength 255", async () => {
    const r = await putPolicies({ acceptsReturns: true, negotiation: { ...rules, excludedCategories: ["ok", "x".repeat(256)] } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      code: "validation_error",
      error: expect.stringMatching(/^Invalid body field 'negotiation\.excludedCategories\.1': must be a string of at most 255 characters/),
      details: { field: "negotiation.excludedCategories.1", maxLength: 255 },
    });
  });

  test("a missing inner field is named with its rule; a value of neither kind keeps the union's rule", async () => {
    const { maxRounds: _, ...noRounds } = rules;
    const missing = await putPolicies({ acceptsReturns: true, negotiation: { ...noRounds, excludedCategories: [] } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: "validation_error", details: { field: "negotiation.maxRounds", required: true } });
    const neither = await putPolicies({ acceptsReturns: true, negotiation: "yes" });
    expect(neither.status).toBe(400);
    expect(neither.body).toMatchObject({ code: "validation_error", error: "Invalid body field 'negotiation': must be an object or null (got \"yes\")", details: { field: "negotiation" } });
  });
});
