/**
 * Helper F (session 22): ACP's `param` and UCP's `path` are JSONPaths into the request body (docs/protocols.md: "a
 * refusal located in the query string or the path has none"). The Idempotency-Key refusals (a key reused with another
 * request, a key over 255 characters) named the header as a body member, `param: "$.Idempotency-Key"` (ACP
 * 2025-09-29) and `path: "$.Idempotency-Key"` (UCP), which no body has; 2026-04-17 already left it out. Now neither
 * names one; `details` says where (`field: "Idempotency-Key"`, `location: "header"`). Through HTTP against the real
 * server, with the seeded demo data.
 */
import { describe, expect, test } from "bun:test";
import { createKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

describe("an Idempotency-Key refusal of a bridged request names no body member", () => {
  test("ACP 2025-09-29: a key reused with another request is 409 without param, details naming the header", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const headers = { ...k.headers, "idempotency-key": crypto.randomUUID() };
    const first = await srv.json(ACP, { method: "POST", headers, body: { items: [{ id: BOARD, quantity: 1 }] } });
    expect(first.status).toBe(201);
    const other = await srv.json(ACP, { method: "POST", headers, body: { items: [{ id: BOARD, quantity: 2 }] } });
    expect(other.status).toBe(409);
    expect(other.body).toEqual({
      type: "request_not_idempotent",
      code: "IDEMPOTENCY_KEY_CONFLICT",
      message: "This Idempotency-Key was used with a different request.",
      details: { field: "Idempotency-Key", location: "header" },
    });
  });

  test("ACP 2025-09-29: a key over 255 characters is 400 without param", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const r = await srv.json(ACP, { method: "POST", headers: { ...k.headers, "idempotency-key": "k".repeat(256) }, body: { items: [{ id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      type: "invalid_request",
      code: "INVALID_ARGUMENT",
      message: "Idempotency-Key is too long (max 255).",
      details: { field: "Idempotency-Key", location: "header" },
    });
  });

  test("UCP: a key reused with another request is 409 whose message has no path", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const headers = { ...k.headers, "idempotency-key": crypto.randomUUID() };
    const first = await srv.json(UCP, { method: "POST", headers, body: { line_items: [{ item: { id: BOARD }, quantity: 1 }] } });
    expect(first.status).toBe(201);
    const other = await srv.json(UCP, { method: "POST", headers, body: { line_items: [{ item: { id: BOARD }, quantity: 2 }] } });
    expect(other.status).toBe(409);
    expect(other.body.messages).toEqual([
      {
        type: "error",
        code: "IDEMPOTENCY_KEY_CONFLICT",
        content: "This Idempotency-Key was used with a different request.",
        severity: "requires_buyer_input",
        details: { field: "Idempotency-Key", location: "header" },
      },
    ]);
  });

  test("a refusal of a body member still names it (ACP param, UCP path)", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const acp = await srv.json(ACP, { method: "POST", headers: k.headers, body: { items: [{ id: BOARD, quantity: 0 }] } });
    expect(acp.status).toBe(400);
    expect(acp.body.param).toBe("$.items[0].quantity");
    const ucp = await srv.json(UCP, { method: "POST", headers: k.headers, body: { line_items: [{ item: { id: BOARD }, quantity: 0 }] } });
    expect(ucp.status).toBe(400);
    expect(ucp.body.messages[0].path).toBe("$.line_items[0].quantity");
  });
});
