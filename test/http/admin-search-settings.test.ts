/**
 * PUT /api/v1/admin/search/settings is strict, refuses ranking weights that zero every score, and does not lose
 * concurrent changes (audit U MED-4).
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
  await srv.stop();
});

const put = (body: unknown, headers: Record<string, string> = {}) => srv.json(S, { method: "PUT", headers: { ...admin, ...headers }, body });
const get = () => srv.json(S, { headers: admin });
const storedPatch = async () => (await srv.db.sql<{ patch: Record<string, unknown> }[]>`SELECT patch FROM search_settings WHERE id = 1`)[0]?.patch;

describe("a strict settings patch", () => {
  test("a misspelt top-level key is 400 naming it, and nothing changes", async () => {
    const before = await get();
    const r = await put({ candidateWindw: 5 });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    expect(r.body.details.field).toBe("candidateWindw");
    expect(r.body.details.allowed).toContain("candidateWindow");
    expect((await get()).body.data.version).toBe(before.body.data.version);
  });

  test("a misspelt nested key is 400 naming its path and is never stored", async () => {
    const r = await put({ typoTolerance: { enabld: false } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    expect(r.body.details.field).toBe("typoTolerance.enabld");
    expect(r.body.details.allowed).toEqual(["enabled", "minWordSizeForOneTypo", "minWordSizeForTwoTypos"]);
    expect(JSON.stringify(await storedPatch() ?? {})).not.toContain("enabld");
    expect((await get()).body.data.settings.typoTolerance).toEqual({ enabled: true, minWordSizeForOneTypo: 5, minWordSizeForTwoTypos: 9 });
  });

  test("a junk key stored before the schema was strict is dropped by the next change", async () => {
    await srv.db.sql`INSERT INTO search_settings (id, patch) VALUES (1, ${srv.db.sql.json({ typoTolerance: { enabld: false }, bogus: 1 } as never)})
      ON CONFLICT (id) DO UPDATE SET patch = EXCLUDED.patch`;
    const r = await put({ deprioritizedPenalty: 0.25 });
    expect(r.status).toBe(200);
    expect(r.body.data.settings.typoTolerance).toEqual({ enabled: true, minWordSizeForOneTypo: 5, minWordSizeForTwoTypos: 9 });
    const stored = JSON.stringify(await storedPatch());
    expect(stored).not.toContain("enabld");
    expect(stored).not.toContain("bogus");
    expect((await put({ deprioritizedPenalty: 0.2 })).status).toBe(200);
  });

  test("ranking weights that are all 0 are 400 and searches keep their scores", async () => {
    const r = await put({ rankingWeights: { text: 0, trust: 0, freshness: 0, inStock: 0 } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    expect(r.body.error).toContain("rankingWeights");
    expect((await get()).body.data.settings.rankingWeights).toEqual({ text: 0.55, trust: 0.25, freshness: 0.1, inStock: 0.1 });
    const s = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "shirt", limit: 3 } });
    expect(s.status).toBe(200);
    expect(s.body.data.products.length).toBeGreaterThan(0);
    expect(s.body.data.products[0].relevanceScore).toBeGreaterThan(0);
  });

  test("a negative weight is 400 naming the field", async () => {
    const r = await put({ rankingWeights: { trust: -0.1 } });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe("rankingWeights.trust");
  });

  test("weights that sum above 0 are taken as given", async () => {
    const r = await put({ rankingWeights: { text: 1, trust: 0, freshness: 0, inStock: 0 } });
    expect(r.status).toBe(200);
    expect(r.body.data.settings.rankingWeights).toEqual({ text: 1, trust: 0, freshness: 0, inStock: 0 });
    expect((await put({ rankingWeights: { text: 0.55, trust: 0.25, freshness: 0.1, inStock: 0.1 } })).status).toBe(200);
  });
});

describe("concurrent changes", () => {
  test("two PUTs of different keys sent together both take effect, every round", async () => {
    for (let round = 0; round < 8; round++) {
      const penalty = round % 2 ? 0.3 : 0.35;
      const window = 900 + round;
      const [a, b] = await Promise.all([put({ deprioritizedPenalty: penalty }), put({ candidateWindow: window })]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.body.data.version).not.toBe(b.body.data.version);
      const now = (await get()).body.data.settings;
      expect({ round, penalty: now.deprioritizedPenalty, window: now.candidateWindow }).toEqual({ round, penalty, window });
    }
  });

  test("GET and PUT carry the version as ETag; a PUT with a stale If-Match is 409 conflict and changes nothing", async () => {
    const g = await get();
    const etag = g.headers.get("etag");
    expect(etag).toBe(`"${g.body.data.version}"`);
    const ok = await put({ candidateWindow: 1000 }, { "if-match": etag! });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("etag")).toBe(`"${ok.body.data.version}"`);
    const stale = await put({ candidateWindow: 500 }, { "if-match": etag! });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe("conflict");
    expect(stale.body.details.currentVersion).toBe(ok.body.data.version);
    expect((await get()).body.data.settings.candidateWindow).toBe(1000);
    const bad = await put({ candidateWindow: 500 }, { "if-match": "yesterday" });
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toBe("if-match");
  });
});
