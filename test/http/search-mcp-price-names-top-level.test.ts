/**
 * Audit M-4: REST search with the MCP tool's argument names at the top level (`max_price`, `min_price`,
 * `in_stock_only`: what an agent porting its search_products call to REST sends) is 200 with the filter silently
 * dropped: unfiltered products, prices far above `max_price`. Audit E fixed exactly this inside `filters`
 * (docs/decisions.md, "Unknown filters fields are refused") but unknown top-level fields are still ignored.
 * The MCP tool refuses them (`additionalProperties: false`). Expected: 400 validation_error naming the field and
 * pointing at `filters.maxPrice`, as the `filters` check does.
 * Run: cp into test/http/ and `bun test/run.ts test/http/search-mcp-price-names-top-level.test.ts`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE" });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

for (const body of [
  { query: "headphones", max_price: 1 },
  { query: "headphones", min_price: 10_000 },
  { query: "headphones", min_price: 100, max_price: 1 },
]) {
  test(`POST /agent/search ${JSON.stringify(body)}: the MCP spelling is refused, not dropped`, async () => {
    const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body });
    // today: 200 with products priced above max_price (the filter was never applied)
    expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: "validation_error" });
    expect(r.body.error).toContain(Object.keys(body).find((k) => k !== "query")!);
  });
}
