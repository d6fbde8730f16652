/**
 * The search `page` bound is the same on REST and MCP (audit Q-1): REST refused a page above SEARCH_PAGE_MAX
 * (10,000) with 400 validation_error, while search_products, search_products_enriched and ucp_search_catalog took
 * any integer and echoed 1e300 as `meta.page`. Each is now INVALID_ARGUMENT on `page`; 10,000 itself is served.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, errorOf, structured, type Connected } from "./helpers.ts";

const TOOLS = ["search_products", "search_products_enriched", "ucp_search_catalog"];
let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

describe("the search page bound", () => {
  for (const page of [10_001, 1e15, 1e300]) {
    test(`page ${page} is refused on field page by REST and by every MCP search tool`, async () => {
      const rest = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "headphones", page } });
      expect({ status: rest.status, code: rest.body.code, field: rest.body.details?.field }).toEqual({ status: 400, code: "validation_error", field: "page" });
      for (const tool of TOOLS) {
        const r = await agent.call(tool, { query: "headphones", page });
        const got = r.isError ? { code: errorOf(r).code, field: errorOf(r).details.field } : { code: "success", metaPage: structured(r).meta.page };
        expect({ tool, ...got }).toEqual({ tool, code: "INVALID_ARGUMENT", field: "page" });
      }
    }, 30_000);
  }

  test("the last page allowed, 10,000, is served empty by every MCP search tool", async () => {
    for (const tool of TOOLS) {
      const r = await agent.call(tool, { query: "headphones", page: 10_000 });
      expect({ tool, isError: r.isError ?? false, page: structured(r).meta.page, products: structured(r).products }).toEqual({ tool, isError: false, page: 10_000, products: [] });
    }
  }, 30_000);
});
