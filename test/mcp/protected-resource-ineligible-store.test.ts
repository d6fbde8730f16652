/**
 * The RFC 9728 protected-resource metadata of a store follows its MCP endpoint's eligibility (audit Q-6): a
 * suspended, hidden or UNVERIFIED store's MCP endpoint is 404 store_not_found, as an unknown store's, but its
 * metadata was 200 and advertised that endpoint as an OAuth-protected resource. An eligible store's stays 200.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const metadataPaths = (slug: string) => [
  `/.well-known/oauth-protected-resource/${slug}/mcp`,
  `/.well-known/oauth-protected-resource/${slug}/mcp/discovery`,
  `/.well-known/oauth-protected-resource/mcp/${slug}`,
];

describe("protected-resource metadata of a store", () => {
  for (const slug of ["suspended-goods", "lowtrust-bazaar", "unverified-outlet"]) {
    test(`is 404 store_not_found for ${slug}, whose MCP endpoint is 404, as for an unknown slug`, async () => {
      const mcp = await srv.fetch(`/${slug}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_merchant_profile", arguments: {} } }),
      });
      expect(mcp.status).toBe(404);
      for (const s of [slug, "no-such-store"]) {
        const got = await Promise.all(metadataPaths(s).map(async (p) => { const r = await srv.json(p); return [p, r.status, r.body.code] as const; }));
        expect(got).toEqual(metadataPaths(s).map((p) => [p, 404, "store_not_found"] as const));
      }
    }, 30_000);
  }

  test("is 200 naming the endpoint for an eligible store", async () => {
    for (const p of metadataPaths("demo-store")) {
      const r = await srv.json(p);
      expect({ p, status: r.status, resource: String(r.body.resource).replace(/^https?:\/\/[^/]+/, "") }).toEqual({ p, status: 200, resource: p.replace("/.well-known/oauth-protected-resource", "") });
    }
  }, 30_000);
});
