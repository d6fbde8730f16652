/**
 * PUT /policies bounds its strings in characters, as every bound is (docs/conventions.md; helper C's note, session
 * 22): `shippingEstimateDays` and `supportResponseTimeSla` (1 to 50) and the negotiation's `excludedCategories` (255
 * each, as a product's category they are matched against) counted UTF-16 units, so 30 emoji were "over 50".
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: Record<string, string>;
beforeAll(async () => {
  admin = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);

const put = (body: Record<string, unknown>) => srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: admin, body });
const NEGOTIATION = { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 3 };

describe("PUT /policies counts its strings in characters", () => {
  test("30 emoji are a shipping estimate and a support SLA, and 250 emoji an excluded category", async () => {
    const r = await put({
      acceptsReturns: true,
      returnWindowDays: 30,
      shippingEstimateDays: "🚚".repeat(30),
      supportResponseTimeSla: "⏱️".repeat(20),
      negotiation: { ...NEGOTIATION, excludedCategories: ["🍎".repeat(250)] },
    });
    expect(r.status).toBe(200);
    const back = await srv.json("/api/v1/merchant/stores/demo-store/policies", { headers: admin });
    expect(back.body.data.shippingEstimateDays).toBe("🚚".repeat(30));
    expect(back.body.data.negotiation.excludedCategories).toEqual(["🍎".repeat(250)]);
  });

  test("51 characters are refused with the 1-to-50 rule on the field", async () => {
    const r = await put({ acceptsReturns: true, shippingEstimateDays: "🚚".repeat(51) });
    expect({ status: r.status, code: r.body.code, field: r.body.details?.field, maxLength: r.body.details?.maxLength }).toEqual({
      status: 400,
      code: "validation_error",
      field: "shippingEstimateDays",
      maxLength: 50,
    });
  });
});
