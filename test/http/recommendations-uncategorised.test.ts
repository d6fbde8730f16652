/**
 * Audit A (session 16 leftover), fixed in session 17 (engineer L): recommendations (REST POST /agent/recommendations,
 * MCP get_recommendations) for a product without a category searched its title with no category filter and kept
 * every match, so a product sharing one word of the title ("Linen", "Cover", the brand) was "related" whatever it
 * was. Without a category, related now means the search engine finds the source's title in the product: a text score
 * of at least 0.45, about half the title's words matched in the title (docs/catalog.md "recommendations"). With a
 * category nothing changes (same category, ranked by the title, the category alone when no title word matches).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, structured, type Connected } from "../mcp/helpers.ts";

let srv: TestServer;
let key: TestKey;
let mcp: Connected;
let source: { id: string; title: string };

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string; title: string }[]>`
    SELECT id, title FROM products WHERE store_slug = 'demo-store' AND active AND title LIKE '%Duvet Cover%' ORDER BY id LIMIT 1`;
  source = p!;
  await srv.db.sql`UPDATE products SET category = NULL WHERE id = ${source.id}`;
  await getIndexer(srv.running.services)!.catchUp();
  mcp = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await mcp?.close?.();
  await srv?.stop();
});

const recommend = (productId: string, limit = 20) =>
  srv.json("/api/v1/agent/recommendations", { method: "POST", headers: key.headers, body: { productId, limit } });

describe("recommendations for a product without a category", () => {
  test("only products the title finds (duvet covers), not those sharing one word of it", async () => {
    const r = await recommend(source.id);
    expect(r.status).toBe(200);
    const titles: string[] = r.body.data.products.map((p: any) => p.title);
    expect(titles.length).toBeGreaterThan(0);
    for (const t of titles) expect(t).toContain("Duvet Cover");
    for (const p of r.body.data.products) expect(p.merchant.slug).not.toBe("demo-store");
  });

  test("MCP get_recommendations answers the same products", async () => {
    const rest = (await recommend(source.id, 10)).body.data.products.map((p: any) => p.id);
    const tool = structured(await mcp.call("get_recommendations", { product_id: source.id, limit: 10 }));
    expect(tool.products.map((p: any) => p.id)).toEqual(rest);
  });
});
