/**
 * A plan change and an operator's revocation hold at once on every gateway (review R2-2): one actor host and two
 * gateway processes over a local 3-node NATS cluster. The key is used through gateway B (its actor loaded, its tier
 * in memory), the plan is lowered and the key revoked through gateway A, and gateway B's next request sees each.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const MERCHANT = "shop@example.com";
const PASSWORD = "distributed-password";

let dep: Deployment | undefined;
let gw: [string, string];

beforeAll(async () => {
  const d = await startDeployment(
    {
      prefix: "acs-dist-plan-",
      gateways: 2,
      users: [
        { email: EMAIL, password: PASSWORD, role: "operator" },
        { email: MERCHANT, password: PASSWORD, role: "merchant" },
      ],
    },
    (started) => (dep = started),
  );
  gw = [d.gateways[0]!, d.gateways[1]!];
  expect(gw[0]).not.toBe(gw[1]);
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

async function session(gateway: string, email: string): Promise<Record<string, string>> {
  const login = await json(`${gateway}/api/v1/auth/login`, { method: "POST", body: { email, password: PASSWORD } });
  expect(login.status).toBe(200);
  return { authorization: `Bearer ${login.body.data.token}` };
}

const priceHistory = (gateway: string, key: string) =>
  json(`${gateway}/api/v1/agent/products/${crypto.randomUUID()}/price-history`, { headers: { "x-agent-api-key": key } });

describe("two gateway processes over NATS", () => {
  test("PUT plan through gateway A caps the key gateway B serves, at once; the operator's revocation too", async () => {
    const [a, b] = gw;
    const ops = await session(a, EMAIL);
    const shop = await session(b, MERCHANT);
    const setPlan = (plan: string) => json(`${a}/api/v1/admin/users/plan`, { method: "PUT", headers: ops, body: { email: MERCHANT, plan } });
    expect((await setPlan("ENTERPRISE")).status).toBe(200);
    const key = (await json(`${b}/api/v1/agent-keys`, { method: "POST", headers: shop, body: { name: "dist", tier: "ENTERPRISE" } })).body.data;
    const sandbox = (await json(`${b}/api/v1/agent-keys`, { method: "POST", headers: shop, body: { name: "dist", tier: "SANDBOX" } })).body.data;

    // access passes (no such product: 404), at ENTERPRISE's limit
    const before = await priceHistory(b, key.key);
    expect({ status: before.status, limit: before.headers.get("x-ratelimit-limit") }).toEqual({ status: 404, limit: "10000" });
    expect((await priceHistory(b, sandbox.key)).status).toBe(404);

    const capped = await setPlan("STARTER");
    expect(capped.body.data).toMatchObject({ plan: "STARTER", previousPlan: "ENTERPRISE", keysCapped: 1 });
    for (const g of [b, a]) {
      const r = await priceHistory(g, key.key);
      expect({ status: r.status, code: r.body.code, limit: r.headers.get("x-ratelimit-limit") }).toEqual({ status: 403, code: "feature_not_in_tier", limit: "100" });
      const s = await priceHistory(g, sandbox.key);
      expect({ status: s.status, planTier: s.body.details?.planTier }).toEqual({ status: 403, planTier: "STARTER" });
    }

    expect((await json(`${a}/api/v1/admin/agent-keys/${key.id}`, { method: "DELETE", headers: ops })).status).toBe(200);
    const revoked = await json(`${b}/api/v1/agent/search`, { method: "POST", headers: { "x-agent-api-key": key.key }, body: { query: "mug" } });
    expect({ status: revoked.status, reason: revoked.body.details?.reason }).toEqual({ status: 401, reason: "revoked" });
  }, 60_000);
});
