/**
 * A request head over 16 KiB is refused by Bun's HTTP server itself (review F1-5): 431, an empty body, no
 * X-Request-Id. The application cannot answer it (Bun.serve has no hook), so the service documents it: the served
 * OpenAPI description and docs/operations.md. These tests pin Bun's answer and the threshold, so a Bun upgrade that
 * changes either is noticed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const methodology = (queryChars: number) => srv.fetch(`/api/v1/trust/methodology?q=${"x".repeat(queryChars)}`);

describe("request head limit", () => {
  test("a request head under 16 KiB reaches the service and gets its own answer with a request id", async () => {
    const res = await methodology(15_000);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(res.headers.get("x-agent-commerce")).toBe("1");
  });

  test("a request head over 16 KiB is Bun's 431 with an empty body and none of the service's headers", async () => {
    const res = await methodology(17_000);
    expect(res.status).toBe(431);
    expect(await res.text()).toBe("");
    expect(res.headers.get("x-request-id")).toBeNull();
    expect(res.headers.get("x-agent-commerce")).toBeNull();
  });

  test("an oversized header is the same 431", async () => {
    const res = await srv.fetch("/api/v1/trust/methodology", { headers: { "x-filler": "y".repeat(17_000) } });
    expect(res.status).toBe(431);
  });

  test("the served OpenAPI description tells clients about the 431 the HTTP server answers", async () => {
    const doc = (await srv.json<{ info: { description: string } }>("/api/v1/openapi.json")).body;
    expect(doc.info.description).toContain("431");
    expect(doc.info.description).toContain("16 KiB");
    expect(doc.info.description).toContain("no X-Request-Id");
  });
});
