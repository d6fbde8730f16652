/**
 * Audit AD-2: ACP's `API-Version` handling was missing from the served OpenAPI (no request header, no echoed response
 * header, no 400 `unsupported_api_version`), and `/docs/errors` had no anchor for that code, which the refusal answers.
 * Checks the served documents against what the bridge does (test/http/acp-api-version.test.ts covers the behaviour).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServer, type TestServer } from "../helpers/server.ts";

type Json = Record<string, any>;

let srv: TestServer;
let doc: Json;

beforeAll(async () => {
  srv = await startServer();
  doc = (await srv.json("/api/v1/openapi.json")).body;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const ACP_OPERATIONS = [
  ["post", "/api/v1/agent/acp/checkout_sessions"],
  ["get", "/api/v1/agent/acp/checkout_sessions/{id}"],
  ["post", "/api/v1/agent/acp/checkout_sessions/{id}"],
  ["post", "/api/v1/agent/acp/checkout_sessions/{id}/complete"],
  ["post", "/api/v1/agent/acp/checkout_sessions/{id}/cancel"],
] as const;

describe("API-Version in the served OpenAPI", () => {
  test("every ACP operation declares the API-Version request header, echoes it on its success answer and lists unsupported_api_version among its 400 codes", () => {
    for (const [method, path] of ACP_OPERATIONS) {
      const op = doc.paths[path]?.[method];
      expect(op).toBeDefined();
      const param = (op.parameters as Json[]).find((p) => p.in === "header" && p.name === "API-Version");
      expect(param).toMatchObject({ required: false, schema: { type: "string", enum: ["2025-09-29"] } });
      expect(param!.description).toContain("unsupported_api_version");
      const success = Object.entries(op.responses as Record<string, Json>).filter(([s]) => s.startsWith("2"));
      expect(success.length).toBeGreaterThan(0);
      for (const [, r] of success) expect(r.headers["API-Version"]).toEqual({ $ref: "#/components/headers/AcpApiVersion" });
      expect(op.responses["400"]["x-error-codes"]).toContain("unsupported_api_version");
      expect(op.responses["400"].headers["API-Version"]).toEqual({ $ref: "#/components/headers/AcpApiVersionIfServed" });
    }
    expect(doc.components.headers.AcpApiVersion).toMatchObject({ required: true, schema: { enum: ["2025-09-29"] } });
    expect(doc.components.headers.AcpApiVersionIfServed).toMatchObject({ required: false });
  });

  test("POST /agent/checkout, which bridges ACP creates, declares the header as optional and the refusal code", () => {
    const op = doc.paths["/api/v1/agent/checkout"].post;
    expect((op.parameters as Json[]).some((p) => p.in === "header" && p.name === "API-Version")).toBe(true);
    expect(op.responses["201"].headers["API-Version"]).toEqual({ $ref: "#/components/headers/AcpApiVersionIfServed" });
    expect(op.responses["400"]["x-error-codes"]).toContain("unsupported_api_version");
  });
});

describe("/docs/errors", () => {
  test("has a row with an anchor for unsupported_api_version, ACP's version refusal", async () => {
    const page = await (await srv.fetch("/docs/errors")).text();
    expect(page).toContain('<tr id="unsupported_api_version">');
    expect(page).toMatch(/<tr id="unsupported_api_version">.*<td>400<\/td>.*API-Version/);
  });
});
