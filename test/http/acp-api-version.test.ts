/**
 * ACP's `API-Version` header (RFC "Agentic Checkout" §2.1, §3.1: clients send it on every request, servers validate
 * it). The bridge used not to read the header, so a client on a later version had its new fields refused member by
 * member, or silently ignored. Every ACP route serves 2025-09-29 and (session 12) 2026-04-17, each in its own shapes
 * (test/http/acp-2026-04-17-contract.test.ts), echoed in `API-Version`; it refuses any other version (the versions
 * between, 2025-12-12, 2026-01-16, 2026-01-30, whose shapes are neither's) before any work in ACP's error shape
 * naming the supported versions, and serves a request without the header as 2025-09-29. Through HTTP against the
 * real server, with real Postgres.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const ITEMS = [{ id: BOARD, quantity: 1 }];
// ACP's later revisions: code unsupported_api_version and supported_versions at the top level (review T-3)
const refusal = { type: "invalid_request", code: "unsupported_api_version", supported_versions: ["2025-09-29", "2026-04-17"], details: { header: "API-Version", supported_versions: ["2025-09-29", "2026-04-17"], reason: "unsupported_api_version" } };

function call(method: string, path: string, opts: { version?: string; body?: unknown; idem?: string } = {}) {
  const headers: Record<string, string> = { ...key.headers, "idempotency-key": opts.idem ?? crypto.randomUUID() };
  if (opts.version !== undefined) headers["api-version"] = opts.version;
  return srv.json(path, { method, headers, ...(opts.body === undefined ? {} : { body: opts.body }) });
}
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;

describe("ACP API-Version", () => {
  test("a create naming 2025-09-29 is served and the answer names the version", async () => {
    const r = await call("POST", ACP, { version: "2025-09-29", body: { items: ITEMS } });
    expect(r.status).toBe(201);
    expect(r.headers.get("api-version")).toBe("2025-09-29");
    const read = await call("GET", `${ACP}/${r.body.id}`, { version: "2025-09-29" });
    expect(read.status).toBe(200);
    expect(read.headers.get("api-version")).toBe("2025-09-29");
  }, 60_000);

  test("a create without API-Version is served as 2025-09-29 and says so", async () => {
    const r = await call("POST", ACP, { body: { items: ITEMS } });
    expect(r.status).toBe(201);
    expect(r.headers.get("api-version")).toBe("2025-09-29");
  }, 60_000);

  test("a create naming a later ACP version is 400 in ACP's shape with the supported versions, makes no cart and records nothing under its key", async () => {
    const before = await carts();
    const idem = crypto.randomUUID();
    const r = await call("POST", ACP, { version: "2026-01-16", body: { items: ITEMS }, idem });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ...refusal, details: { ...refusal.details, requested: "2026-01-16" } });
    expect(r.body.message).toContain("2026-01-16 is not supported");
    expect(r.body.message).toContain("this server implements 2025-09-29, 2026-04-17");
    expect(r.body.param).toBeUndefined();
    expect(r.headers.get("api-version")).toBeNull();
    expect(await carts()).toBe(before);
    // the refusal was not stored as the key's answer: the same request in our version runs
    const again = await call("POST", ACP, { version: "2025-09-29", body: { items: ITEMS }, idem });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
  }, 60_000);

  test("a value that is not one version (two versions, a word, empty) is 400 naming the supported versions", async () => {
    for (const version of ["2025-09-29, 2026-01-16", "latest", ""]) {
      const r = await call("POST", ACP, { version, body: { items: ITEMS } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(refusal);
      expect(r.body.message).toContain("must name one ACP API version");
    }
  }, 60_000);

  test("the versions between the two served (2025-12-12, 2026-01-16, 2026-01-30) and an older one are each refused", async () => {
    for (const version of ["2025-12-12", "2026-01-16", "2026-01-30", "2025-01-01"]) {
      const r = await call("POST", ACP, { version, body: { items: ITEMS } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ ...refusal, details: { ...refusal.details, requested: version } });
    }
  }, 60_000);

  test("reads, updates, completes and cancels in an unsupported version are refused and change nothing", async () => {
    const made = await call("POST", ACP, { version: "2025-09-29", body: { items: ITEMS } });
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    const path = `${ACP}/${id}`;
    const answers = [
      await call("GET", path, { version: "2026-01-30" }),
      await call("POST", path, { version: "2026-01-30", body: { items: [{ id: BOARD, quantity: 2 }] } }),
      await call("POST", `${path}/complete`, { version: "2026-01-30", body: { payment_data: { token: "tok_approve", provider: "stripe" } } }),
      await call("POST", `${path}/cancel`, { version: "2026-01-30" }),
    ];
    for (const r of answers) {
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(refusal);
    }
    const now = await call("GET", path, { version: "2025-09-29" });
    expect(now.status).toBe(200);
    expect(now.body.status).not.toBe("canceled");
    expect(now.body.status).not.toBe("completed");
    expect(now.body.line_items[0].item.quantity).toBe(1);
  }, 60_000);

  test("an ACP create sent to POST /agent/checkout is read in its API-Version too", async () => {
    const bad = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "x-protocol": "acp", "api-version": "2026-01-30" }, body: { items: ITEMS } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject(refusal);
    const good = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "x-protocol": "acp", "api-version": "2025-09-29" }, body: { items: ITEMS } });
    expect(good.status).toBe(201);
    expect(good.headers.get("api-version")).toBe("2025-09-29");
    const later = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "x-protocol": "acp", "api-version": "2026-04-17" }, body: { line_items: [{ id: BOARD }] } });
    expect(later.status).toBe(201);
    expect(later.headers.get("api-version")).toBe("2026-04-17");
    expect(later.body).toMatchObject({ protocol: { version: "2026-04-17" }, capabilities: {}, line_items: [{ item: { id: BOARD }, quantity: 1 }] });
  }, 60_000);

  test("a 2026-04-17 create sent to POST /agent/checkout without x-protocol is read as ACP by its API-Version or its flat line_items, not as UCP", async () => {
    const byHeader = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "api-version": "2026-04-17" }, body: { line_items: [{ id: BOARD }] } });
    expect(byHeader.status).toBe(201);
    expect(byHeader.headers.get("x-protocol")).toBe("acp");
    expect(byHeader.body).toMatchObject({ id: expect.stringMatching(/^cs_/), protocol: { version: "2026-04-17" } });
    // no header: flat {id} entries are ACP's (served as the default version, which names its items `items`: refused in ACP's shape)
    const byShape = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { line_items: [{ id: BOARD }] } });
    expect(byShape.headers.get("x-protocol")).toBe("acp");
    expect(byShape.status).toBe(400);
    expect(byShape.body).toMatchObject({ type: "invalid_request", code: "MISSING_REQUIRED_ARGUMENT", param: "$.items" });
    expect(byShape.body.message).toContain("send API-Version: 2026-04-17");
    // UCP's own line items stay UCP's
    const ucp = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { line_items: [{ item: { id: BOARD }, quantity: 1 }] } });
    expect(ucp.status).toBe(201);
    expect(ucp.headers.get("x-protocol")).toBe("ucp");
  }, 60_000);

  test("a 2025-09-29 update carrying 2026-04-17's line_items is refused naming line_items and both ways on, not as an update missing its items", async () => {
    const made = await call("POST", ACP, { body: { items: ITEMS } });
    expect(made.status).toBe(201);
    const r = await call("POST", `${ACP}/${made.body.id}`, { body: { buyer: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" }, line_items: [{ id: BOARD }] } });
    expect({ status: r.status, type: r.body.type, code: r.body.code, param: r.body.param }).toEqual({ status: 400, type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.line_items" });
    expect(r.body.message).not.toContain("at least one item");
    expect(r.body.message).toContain("send API-Version: 2026-04-17 with it, or send items");
    // nothing changed: the buyer was not kept
    expect("buyer" in (await call("GET", `${ACP}/${made.body.id}`)).body).toBe(false);
  }, 60_000);

  test("a UCP create sent to POST /agent/checkout with an API-Version header stays UCP's: entries with UCP's item decide before the header", async () => {
    for (const version of ["2026-04-17", "2025-09-29"]) {
      const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "api-version": version }, body: { line_items: [{ item: { id: BOARD }, quantity: 1 }] } });
      expect({ version, status: r.status, protocol: r.headers.get("x-protocol") }).toEqual({ version, status: 201, protocol: "ucp" });
      expect(r.body.id).toMatch(/^ucp_/);
    }
    // a list of neither shape with the header is ACP's, refused in the version's words
    const neither = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, "api-version": "2026-04-17" }, body: { line_items: [{ sku: "x" }] } });
    expect({ status: neither.status, protocol: neither.headers.get("x-protocol"), type: neither.body.type, code: neither.body.code, param: neither.body.param }).toEqual({
      status: 400,
      protocol: "acp",
      type: "invalid_request",
      code: "INVALID_ARGUMENT",
      param: "$.line_items[0].id",
    });
  }, 60_000);
});
