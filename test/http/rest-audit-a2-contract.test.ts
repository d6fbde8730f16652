/**
 * REST audit A2, small contract fixes: trust-appeal evidence URLs are http(s) only (F7), and format, pattern,
 * required, null and item-count failures say the rule in the house form with its facts, not TypeBox's own text
 * (F11). The 405 `Allow` with HEAD (F10) is in validation-messages.test.ts beside the other 405s.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { HTTP_URL_PATTERN } from "../../infra/validation-message.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "cozy-paws-supply";
const SLUG_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}$";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: Record<string, string>;
let owner: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await login(srv)}` };
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(STORE))}` };
}, 120_000);

/** The whole 400 of one schema rule: message, field and facts, exactly. */
function rule400(location: string, field: string, what: string, facts: Record<string, unknown> = {}) {
  return {
    success: false,
    code: "validation_error",
    error: `Invalid ${location} field '${field}': ${what}`,
    details: { location, field, ...facts, errors: [{ field, message: what }] },
  };
}

const appeal = (evidenceUrls: unknown, storeSlug = STORE) =>
  srv.json("/api/v1/trust/appeal", { method: "POST", headers: owner, body: { storeSlug, reason: "The carrier's late scans are missing from our data.", evidenceUrls } });
const appeals = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM trust_appeals WHERE store_slug = ${STORE}`)[0].n;

describe("trust-appeal evidence URLs are http or https only (A2-F7)", () => {
  test("javascript:, data:, file: and scheme-relative URLs are 400 naming the item and the rule, and no appeal is stored", async () => {
    for (const [i, url] of ["javascript:alert(document.cookie)", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "//example.com/x"].entries()) {
      const urls = ["https://example.com/ok.pdf", url];
      const r = await appeal(urls);
      expect({ i, status: r.status }).toEqual({ i, status: 400 });
      expect(r.body).toEqual(rule400("body", "evidenceUrls.1", `must be an http or https URL (got ${JSON.stringify(url)})`, { type: "string", pattern: HTTP_URL_PATTERN }));
    }
    expect(await appeals()).toBe(0);
  });

  test("http and https URLs, the scheme in any case, are filed and served back to the operator as sent", async () => {
    const urls = ["https://example.com/scan-report.pdf", "HTTP://example.com/photos?id=7"];
    const r = await appeal(urls);
    expect(r.status).toBe(201);
    const list = await srv.json("/api/v1/admin/trust/appeals", { headers: admin });
    expect(list.body.data.find((a: { id: string }) => a.id === r.body.data.id).evidenceUrls).toEqual(urls);
  });
});

describe("format, pattern, required, null and item-count failures follow the house form (A2-F11)", () => {
  test("a path id that is not a UUID: must be a UUID, with details.format", async () => {
    const r = await srv.json("/api/v1/agent-keys/not-a-uuid", { method: "DELETE", headers: admin });
    expect(r.status).toBe(400);
    expect(r.body).toEqual(rule400("params", "id", 'must be a UUID (got "not-a-uuid")', { type: "string", format: "uuid" }));
  });

  test("a slug against its pattern: the pattern is quoted and in details.pattern", async () => {
    const r = await appeal(undefined, "Not A Slug");
    expect(r.body).toEqual(rule400("body", "storeSlug", `must be a string matching the pattern '${SLUG_PATTERN}' (got "Not A Slug")`, { type: "string", pattern: SLUG_PATTERN }));
  });

  test("a NUL character is said in words", async () => {
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", headers: admin, body: { name: "a\u0000b" } });
    expect(r.body).toEqual(rule400("body", "name", 'must be a string without NUL characters (got "a\\u0000b")', { type: "string", pattern: "^[^\\u0000]*$" }));
  });

  test("a missing field says what to send and details.required; a secret field's rule is said the same way", async () => {
    const r = await srv.json("/api/v1/auth/login", { method: "POST", body: { email: "someone@example.com" } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual(
      rule400("body", "password", "must be a string of 1 to 1024 characters (missing)", { required: true, type: "string", minLength: 1, maxLength: 1024 }),
    );
  });

  test("null where a string is required: must be <rule> (got null), and a secret's null is not quoted either", async () => {
    const r = await srv.json("/api/v1/auth/login", { method: "POST", body: { email: null, password: "x" } });
    expect(r.body).toEqual(rule400("body", "email", "must be a string of 3 to 320 characters (got null)", { type: "string", minLength: 3, maxLength: 320 }));
    const s = await srv.json("/api/v1/auth/login", { method: "POST", body: { email: "someone@example.com", password: 12345678 } });
    expect(s.body).toEqual(
      rule400("body", "password", "must be a string of 1 to 1024 characters (got a number, not shown)", { type: "string", minLength: 1, maxLength: 1024 }),
    );
  });

  test("too many items: must be an array of at most 10 items, with details.maxItems", async () => {
    const r = await appeal(Array.from({ length: 11 }, (_, i) => `https://example.com/${i}`));
    expect(r.body).toEqual(rule400("body", "evidenceUrls", "must be an array of at most 10 items (got an array of 11 items)", { type: "array", maxItems: 10 }));
  });
});
