/**
 * Rate limits and revocation across processes: one actor host and two gateways (`bun gateway/main.ts actors` and
 * `… gateway`, separate processes) over a local 3-node NATS cluster. A key's buckets live in its one actor, so
 * admission is exact however the requests are spread over gateways, and a revocation is seen by every gateway
 * at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";
const SITE = "http://shop.test";

let dep: Deployment | undefined;
let gw: [string, string];

beforeAll(async () => {
  const d = await startDeployment(
    { prefix: "acs-dist-rl-", gateways: 2, env: { SITE_URL: SITE }, users: [{ email: EMAIL, password: PASSWORD, role: "operator" }] },
    (started) => (dep = started),
  );
  gw = [d.gateways[0]!, d.gateways[1]!];
  expect(gw[0]).not.toBe(gw[1]);
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

async function newKey(gateway: string): Promise<{ id: string; key: string; token: string }> {
  const login = await json(`${gateway}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(login.status).toBe(200);
  const token = login.body.data.token;
  const created = await json(`${gateway}/api/v1/agent-keys`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "dist" } });
  expect(created.status).toBe(201);
  return { id: created.body.data.id, key: created.body.data.key, token };
}

describe("two gateway processes over NATS", () => {
  test("200 concurrent requests against a fresh 100/min key bucket, spread over two gateways, admit exactly 100", async () => {
    const { key } = await newKey(gw[0]);
    // A route in the access table; no store is seeded, so an admitted request is a 404 and a refused one a 429.
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => json(`${gw[i % 2]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBe(100);
    expect(statuses.filter((s) => s !== 429).length).toBe(100);
    expect(new Set(statuses.filter((s) => s !== 429))).toEqual(new Set([404]));
    for (const r of results.filter((x) => x.status === 429)) {
      expect(r.body.code).toBe("rate_limit_exceeded");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    }
    const remaining = results.filter((r) => r.status === 404).map((r) => Number(r.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));
  }, 60_000);

  test("a key revoked through one gateway is refused with 401 by the other at once", async () => {
    const { id, key, token } = await newKey(gw[0]);
    expect((await json(`${gw[1]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } })).status).toBe(404);
    const del = await json(`${gw[0]}/api/v1/agent-keys/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    expect(del.status).toBe(200);
    const r = await json(`${gw[1]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "unauthorized", details: { reason: "revoked" } });
  }, 60_000);

  test("a bearer token issued by one gateway is accepted by the other, both sharing the deployment's SITE_URL as issuer", async () => {
    const login = await json(`${gw[0]}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect(login.status).toBe(200);
    const token: string = login.body.data.token;
    const claims = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
    const other = await json(`${gw[1]}/api/v1/agent-keys`, { headers: { authorization: `Bearer ${token}` } });
    expect({ iss: claims.iss, status: other.status, success: other.body.success }).toEqual({ iss: SITE, status: 200, success: true });
  }, 60_000);

  // last: it uses up this IP's global bucket, which login needs
  test("the global per-IP bucket is shared by both gateways: 600 anonymous requests admit exactly the 500-minus-used remainder", async () => {
    const probe = await fetch(`${gw[1]}/api/v1/nowhere`);
    const left = Number(probe.headers.get("x-ratelimit-remaining"));
    expect(probe.headers.get("x-ratelimit-limit")).toBe("500");
    const results = await Promise.all(Array.from({ length: 600 }, (_, i) => fetch(`${gw[i % 2]}/api/v1/nowhere`).then((r) => r.status)));
    expect(results.filter((s) => s === 404).length).toBe(left);
    expect(results.filter((s) => s === 429).length).toBe(600 - left);
  }, 60_000);
});
