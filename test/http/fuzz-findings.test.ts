/**
 * Regressions for what the OpenAPI-driven fuzz test (test/http/fuzz-openapi.test.ts) found (session 11, F1): answers
 * the served document did not describe. Through HTTP against the real server, checked against the served document.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { codeOf, operationsOf, ResponseValidator, type DocOperation, type OpenApiDoc } from "../helpers/openapi-fuzz.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let doc: OpenApiDoc;
let validator: ResponseValidator;
let key: TestKey;
let admin: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const token = await login(srv);
  admin = { authorization: `Bearer ${token}` };
  key = await createKey(srv, { scopes: ALL_SCOPES, token });
  doc = (await srv.json<OpenApiDoc>("/api/v1/openapi.json")).body;
  validator = new ResponseValidator(doc);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

function operation(key: string): DocOperation {
  const d = operationsOf(doc).find((o) => o.key === key);
  if (!d) throw new Error(`no operation ${key}`);
  return d;
}

/** The schema errors of an answer against its operation's documented response (none: valid). */
function schemaErrors(d: DocOperation, status: number, body: unknown): string[] {
  const v = validator.validator(d, status);
  if (!v) return [`${d.key}: status ${status} documents no JSON schema`];
  return v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

describe("answers the fuzz test found undocumented (F1-1, F1-2, F1-3)", () => {
  test("replacing the shipping zones answers the number of zones now in force, as documented", async () => {
    const r = await srv.json("/api/v1/merchant/stores/demo-store/shipping-zones", { method: "PUT", headers: admin, body: { zones: [] } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ zones: 0, currencyNote: expect.any(String), example: null });
    expect(schemaErrors(operation("PUT /api/v1/merchant/stores/{slug}/shipping-zones"), 200, r.body)).toEqual([]);
  });

  test("serving every MCP tool (enabled: null) answers enabled null, as documented", async () => {
    const r = await srv.json("/api/v1/merchant/stores/demo-store/mcp-tools", { method: "PUT", headers: admin, body: { enabled: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ enabled: null });
    expect(schemaErrors(operation("PUT /api/v1/merchant/stores/{slug}/mcp-tools"), 200, r.body)).toEqual([]);
  });

  test("setting a key's allowlist status answers the store, the key and the status, as documented", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/demo-store/allowlist/${key.id}`, { method: "POST", headers: admin, body: { status: "allowed" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ merchant_slug: "demo-store", key_id: key.id, status: "allowed" });
    expect(schemaErrors(operation("POST /api/v1/merchant/stores/{slug}/allowlist/{keyId}"), 200, r.body)).toEqual([]);
  });
});

describe("a repeated query parameter is a documented 400 on every operation of the JSON contract (F1-4)", () => {
  test("every operation under /api/v1 (but the health probe and OAuth, outside the contract) answers ?x=1&x=2 with 400 validation_error, and documents that 400 with that code", async () => {
    const problems: string[] = [];
    const headersFor = (d: DocOperation): Record<string, string> => {
      const sec = d.op.security?.flatMap((s) => Object.keys(s)) ?? [];
      return sec.includes("agentApiKey") ? key.headers : sec.includes("bearer") ? admin : {};
    };
    // the operations without path parameters: the refusal comes before any lookup, so no fixture is needed
    const contract = (p: string) => p.startsWith("/api/v1/") && !p.startsWith("/api/v1/oauth/") && p !== "/api/v1/health";
    const checked = operationsOf(doc).filter((o) => !o.path.includes("{") && contract(o.path));
    expect(checked.length).toBeGreaterThan(30);
    for (const d of checked) {
      const r = await srv.json(`${d.path}?x=1&x=2`, { method: d.method, headers: headersFor(d), redirect: "manual" });
      if (r.status !== 400 || codeOf(r.body) !== "validation_error") {
        problems.push(`${d.key}: answered ${r.status} ${codeOf(r.body) ?? ""}`);
        continue;
      }
      const codes = d.op.responses?.["400"]?.["x-error-codes"] ?? [];
      if (!codes.includes("validation_error")) problems.push(`${d.key}: 400 validation_error not documented`);
    }
    expect(problems).toEqual([]);
  }, 30_000);
});
