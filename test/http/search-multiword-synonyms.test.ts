/**
 * Audit A (session 16 leftover), fixed in session 17 (engineer L): PUT /api/v1/admin/search/settings accepted a
 * multi-word synonym key ("tee shirt") that the embedded engine never matched (it looked synonyms up per single query
 * word). Meilisearch matches keys of 1 to 3 consecutive query words; the embedded engine now does too: the key's
 * synonyms become alternatives of every query word it covers (docs/search.md "Settings"). A key the engines would
 * never match (more than 3 words, or no word at all) is refused with 400 validation_error, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let admin: Record<string, string>;
let key: TestKey;
const S = "/api/v1/admin/search/settings";

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = { authorization: `Bearer ${await login(srv)}` };
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ["search"] });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const put = (body: unknown) => srv.json(S, { method: "PUT", headers: admin, body });
const search = async (query: string, limit = 10) => {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, limit, filters: { inStock: false } } });
  expect(r.status).toBe(200);
  return r.body.data.products as { title: string; category: string }[];
};

describe("multi-word synonym keys", () => {
  test("a 2-word and a 3-word key find the synonym's products", async () => {
    expect(await search("zorb blat")).toEqual([]);
    expect(await search("zorb blat quix")).toEqual([]);
    const r = await put({ synonyms: { "zorb blat": ["duvet"], "Zorb-Blat Quix": ["french press"] } });
    expect(r.status).toBe(200);
    const duvets = await search("zorb blat");
    expect(duvets.length).toBeGreaterThan(0);
    for (const p of duvets) expect(p.title).toContain("Duvet");
    // "zorb blat quix" holds the 3-word key and the 2-word one: French presses cover all three words (the best text
    // match), duvets two; ranking then weighs trust and freshness too
    const presses = await search("zorb blat quix", 20);
    expect(presses[0]!.title).toContain("French Press");
    const kinds = presses.map((p) => (p.title.includes("French Press") ? "press" : p.title.includes("Duvet") ? "duvet" : p.title));
    expect(kinds.every((k) => k === "press" || k === "duvet")).toBe(true);
    expect(kinds).toContain("duvet");
    // the words of a key alone are not the key
    expect(await search("zorb")).toEqual([]);
    expect(await search("blat zorb")).toEqual([]);
  });

  test("'tee shirt' => t-shirt: every word of the query is covered, so T-shirts come before other shirts", async () => {
    const r = await put({ synonyms: { "tee shirt": ["t-shirt"] } });
    expect(r.status).toBe(200);
    const top = await search("tee shirt", 5);
    expect(top.length).toBe(5);
    for (const p of top) expect(p.title).toContain("T-Shirt");
  });

  test("a key of more than 3 words, or of no word, is 400 and nothing is stored", async () => {
    const before = (await srv.json(S, { headers: admin })).body.data;
    for (const bad of ["lord of the rings", "!!!"]) {
      const r = await put({ synonyms: { [bad]: ["lotr"] } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("validation_error");
      expect(r.body.details).toMatchObject({ field: "synonyms", key: bad, maxWords: 3 });
    }
    const after = (await srv.json(S, { headers: admin })).body.data;
    expect(after.version).toBe(before.version);
    expect(after.settings.synonyms).toEqual(before.settings.synonyms);
  });
});
