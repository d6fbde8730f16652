/**
 * Audit W-1: the operator-only admin routes check the caller's role before they look at the body or the query, as
 * agent routes authenticate and admit the key first (auth-before-validation.test.ts): a merchant's session gets 403
 * forbidden whatever it sends, never a 400 that describes the route's schema (PUT /admin/search/settings named
 * every settings key).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let merchant: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  merchant = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a merchant on an operator-only route with a body or query that breaks its schema: 403, not 400", () => {
  const cases: [string, string, unknown][] = [
    ["PUT", "/api/v1/admin/search/settings", { bogus: 1 }],
    ["PUT", "/api/v1/admin/search/settings", { rankingWeights: "x" }],
    ["POST", "/api/v1/admin/trust/recompute", { slug: "NOPE!" }],
    ["PUT", "/api/v1/admin/users/plan", { email: "x" }],
    ["POST", `/api/v1/admin/trust/alerts/${crypto.randomUUID()}/resolve`, {}],
    ["GET", "/api/v1/admin/trust/alerts?status=zzz", undefined],
    ["DELETE", "/api/v1/admin/agent-keys/nope", undefined],
  ];
  for (const [method, path, body] of cases) {
    test(`${method} ${path} ${JSON.stringify(body ?? "")}`, async () => {
      const r = await srv.json(path, { method, headers: merchant, ...(body !== undefined ? { body } : {}) });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ success: false, error: "Operator role required.", code: "forbidden" });
    });
  }
});
