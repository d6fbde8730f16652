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
      expect(param).toMatchObject({ required: false, schema: { type: "string", enum: ["2025-09-29", "2026-04-17"] } });
      expect(param!.description).toContain("unsupported_api_version");
      const success = Object.entries(op.responses as Record<string, Json>).filter(([s]) => s.startsWith("2"));
      expect(success.length).toBeGreaterThan(0);
      for (const [, r] of success) expect(r.headers["API-Version"]).toEqual({ $ref: "#/components/headers/AcpApiVersion" });
      expect(op.responses["400"]["x-error-codes"]).toContain("unsupported_api_version");
      expect(op.responses["400"].headers["API-Version"]).toEqual({ $ref: "#/components/headers/AcpApiVersionIfServed" });
    }
    expect(doc.components.headers.AcpApiVersion).toMatchObject({ required: true, schema: { enum: ["2025-09-29", "2026-04-17"] } });
    expect(doc.components.headers.AcpApiVersionIfServed).toMatchObject({ required: false });
  });

  test("each ACP request body documents both served versions' shapes, and the writes list 2026-04-17's idempotency_conflict", () => {
    const bodyOf = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema as Json;
    const create = bodyOf("/api/v1/agent/acp/checkout_sessions");
    const branches = (create.anyOf ?? create.oneOf) as Json[];
    expect(branches.map((b) => b.required)).toEqual([["items"], ["line_items"], ["items"]]);
    expect(branches[1]!.properties).toHaveProperty("fulfillment_details");
    expect(branches[1]!.properties).toHaveProperty("selected_fulfillment_options");
    const complete = bodyOf("/api/v1/agent/acp/checkout_sessions/{id}/complete");
    expect(JSON.stringify(complete)).toContain("credential");
    for (const [method, path] of ACP_OPERATIONS.filter(([m]) => m === "post")) expect(doc.paths[path][method].responses["409"]["x-error-codes"]).toContain("idempotency_conflict");
  });

  test("a 2026-04-17 create naming its items `items` without a quantity, which the server accepts, matches a documented branch", () => {
    const create = doc.paths["/api/v1/agent/acp/checkout_sessions"].post.requestBody.content["application/json"].schema as Json;
    const branches = (create.anyOf ?? create.oneOf) as Json[];
    // the 2025-09-29 branch requires a quantity and the 2026-04-17 line_items branch line_items: only the third takes it
    const takes = branches.filter((b) => {
      const items = b.properties?.items as Json | undefined;
      return b.required?.includes("items") && !((items?.items as Json | undefined)?.required ?? []).includes("quantity");
    });
    expect(takes).toHaveLength(1);
    expect(takes[0]!.description).toContain("2026-04-17");
    expect(takes[0]!.properties).toHaveProperty("fulfillment_details");
  });

  test("the 2026-04-17 update says fulfillment_details replaces only the parts it names, as the server does", () => {
    const update = doc.paths["/api/v1/agent/acp/checkout_sessions/{id}"].post.requestBody.content["application/json"].schema as Json;
    const text = JSON.stringify(update);
    expect(text).not.toContain("replaces the session's, address included");
    const v26 = ((update.anyOf ?? update.oneOf) as Json[]).find((b) => String(b.description).includes("2026-04-17"))!;
    expect(v26.description).toContain("fulfillment_details replaces only the parts it names");
    expect(v26.description).toContain("a contact-only update keeps the address");
  });

  test("the writes list 2026-04-17's idempotency_in_flight beside idempotency_conflict", () => {
    for (const [method, path] of ACP_OPERATIONS.filter(([m]) => m === "post")) expect(doc.paths[path][method].responses["409"]["x-error-codes"]).toContain("idempotency_in_flight");
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

  test("has a row for idempotency_conflict, ACP 2026-04-17's name for the bridge's own Idempotency-Key conflict", async () => {
    const page = await (await srv.fetch("/docs/errors")).text();
    expect(page).toMatch(/<tr id="idempotency_conflict">.*<td>409<\/td>.*2026-04-17/);
  });

  test("has a row for idempotency_in_flight, ACP 2026-04-17's name for a key whose first request still runs", async () => {
    const page = await (await srv.fetch("/docs/errors")).text();
    expect(page).toMatch(/<tr id="idempotency_in_flight">.*<td>409<\/td>.*2026-04-17/);
  });
});
