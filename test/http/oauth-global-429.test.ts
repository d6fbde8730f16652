/**
 * The global per-IP layer (500 requests per 15 min, gateway/plugins/rate-limit.ts) refuses a request before its route
 * runs. On /oauth/register, /oauth/token and /oauth/revoke that refusal answered in the service envelope (`error`
 * holding the sentence, no `error_description`), while every other error of those routes is an RFC 6749 §5.2 body:
 * an OAuth client read the sentence as the error code and had no message. It is now the same OAuth body as the
 * registration bucket's 429 (review RZ-2), with Retry-After, the bucket's X-RateLimit-* headers and no-store.
 * The discovery documents and the JWKS are not OAuth error responses: their 429 keeps the envelope.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseErrorResponse } from "@modelcontextprotocol/sdk/client/auth.js";
import { startServer, type JsonInit, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
// the request metrics are the process's (infra/metrics.ts): other test files run in this process count there too
const REFUSED_LINE = 'http_requests_total{method="POST",route="refused_before_routing",status="429"}';
const refusedCount = async () => {
  const line = (await (await srv.fetch("/metrics")).text()).split("\n").find((l) => l.startsWith(`${REFUSED_LINE} `));
  return line ? Number(line.slice(REFUSED_LINE.length + 1)) : 0;
};
let refusedBefore = 0;
beforeAll(async () => {
  srv = await startServer({ seed: false });
  refusedBefore = await refusedCount();
  // the address's whole global bucket, on a path no layer of its own counts
  const spent = await Promise.all(Array.from({ length: 500 }, () => srv.fetch("/api/v1/nowhere").then((r) => r.status)));
  expect(spent.filter((s) => s === 404).length).toBe(500);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

const oauthCalls: [string, JsonInit][] = [
  ["/api/v1/oauth/register", { method: "POST", body: { client_name: "Agent", redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" } }],
  ["/api/v1/oauth/token", form({ grant_type: "client_credentials", client_id: "mcpc_unknown" })],
  ["/api/v1/oauth/revoke", form({ token: "rt_unknown", client_id: "mcpc_unknown" })],
  ["/api/v1/oauth/token/", form({ grant_type: "refresh_token", client_id: "mcpc_unknown", refresh_token: "rt_unknown" })],
];

test.each(oauthCalls)("a request to %s past the global per-IP limit is refused with an OAuth error body, Retry-After, the bucket's headers and no-store", async (path, init) => {
  const refused = await srv.json(path, init);
  expect(refused.status).toBe(429);
  const retryAfter = Number(refused.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(800);
  expect(retryAfter).toBeLessThanOrEqual(900);
  const description = `Rate limit exceeded; retry after ${retryAfter} seconds.`;
  expect(refused.body).toEqual({ success: false, error: "rate_limit_exceeded", error_description: description, code: "rate_limit_exceeded" });
  expect(refused.headers.get("content-type")).toStartWith("application/json");
  expect(refused.headers.get("x-ratelimit-limit")).toBe("500");
  expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
  expect(Number(refused.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000 + 800);
  expect(refused.headers.get("cache-control")).toBe("no-store");
  expect(refused.headers.get("x-request-id")).toBeTruthy();

  // what an OAuth client (the MCP SDK) makes of it: the description is the error's message
  const parsed = await parseErrorResponse(new Response(JSON.stringify(refused.body), { status: 429 }));
  expect(parsed.message).toBe(description);
});

test("each of those refusals is counted in the request metrics, as a POST refused before routing with status 429", async () => {
  // bun runs a file's tests in order: this file's only 429s so far are the OAuth refusals above (the 500 before were
  // 404s), and the count read before them is what other files of this process had left
  expect(await refusedCount()).toBe(refusedBefore + oauthCalls.length);
});

test("other paths, the discovery documents and the JWKS keep the service envelope for the same refusal", async () => {
  for (const path of ["/api/v1/nowhere", "/.well-known/oauth-authorization-server", "/api/v1/oauth/jwks"]) {
    const refused = await srv.json(path);
    expect({ path, status: refused.status }).toEqual({ path, status: 429 });
    expect(refused.body).toEqual({ success: false, error: "Rate limit exceeded; wait until X-RateLimit-Reset.", code: "rate_limit_exceeded", details: expect.any(Object) });
    expect(refused.body.error_description).toBeUndefined();
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(800);
  }
});
