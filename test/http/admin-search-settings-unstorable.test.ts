/**
 * Audit W-3: PUT /api/v1/admin/search/settings with text Postgres cannot store (a NUL byte, a lone UTF-16 surrogate)
 * in a stop word or a synonym answers 400 validation_error naming the field, as the merchant routes do
 * (docs/catalog.md: "answer 400 validation_error naming the field (details.field) and write nothing"), and changes
 * nothing. It reached the database and came back as the generic "A value in the request is not acceptable" with no
 * details at all.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let operator: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  operator = { authorization: `Bearer ${await login(srv)}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const cases: [string, unknown, string][] = [
  ["a NUL byte in a stop word", { stopWords: ["zz\u0000"] }, "stopWords.0"],
  ["a lone surrogate in a stop word", { stopWords: ["ok", "\ud800"] }, "stopWords.1"],
  ["a NUL byte in a synonym", { synonyms: { tv: ["tele\u0000vision"] } }, "synonyms.tv.0"],
  ["a lone surrogate in a synonym", { synonyms: { tv: ["\udc00"] } }, "synonyms.tv.0"],
  ["a NUL byte in a synonym key", { synonyms: { "t\u0000v": ["television"] } }, "synonyms.t\u0000v"],
  ["typo sizes in the wrong order (the cross-field check)", { typoTolerance: { minWordSizeForOneTypo: 10, minWordSizeForTwoTypos: 2 } }, "typoTolerance.minWordSizeForTwoTypos"],
];
for (const [what, body, field] of cases) {
  test(`${what}: 400 validation_error naming ${JSON.stringify(field)}, the settings unchanged`, async () => {
    const before = await srv.json("/api/v1/admin/search/settings", { headers: operator });
    const r = await srv.json("/api/v1/admin/search/settings", { method: "PUT", headers: operator, body });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field } });
    const after = await srv.json("/api/v1/admin/search/settings", { headers: operator });
    expect(after.body.data.version).toBe(before.body.data.version);
    expect(after.body.data.settings).toEqual(before.body.data.settings);
  });
}

test("a merchant (not an operator) with an unstorable stop word still gets 403, not the 400", async () => {
  const { merchantLogin } = await import("../helpers/agents.ts");
  const merchant = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
  const r = await srv.json("/api/v1/admin/search/settings", { method: "PUT", headers: merchant, body: { stopWords: ["zz\u0000"] } });
  expect(r.status).toBe(403);
});
