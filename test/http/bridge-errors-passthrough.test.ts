/**
 * Audit E [REST bridge]: a request bridged from POST /agent/checkout (x-protocol header or body shape) is answered in
 * the bridge's own shape, errors included. Before the fix the gateway validated a bridged error against the REST
 * route's error schema and answered 400 "Invalid response field 'success'", blaming the client for our response.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const UNKNOWN = "00000000-0000-4000-8000-0000000000aa";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent${path}`, { method: "POST", headers: { ...key.headers, ...headers }, body });

/** The same request answered by the bridge's own route and through POST /agent/checkout. */
async function both(protocol: "acp" | "ucp", body: unknown) {
  const direct = await post(protocol === "acp" ? "/acp/checkout_sessions" : "/ucp/checkout-sessions", body);
  const bridged = await post("/checkout", body, { "x-protocol": protocol });
  return { direct, bridged };
}

describe("errors of requests bridged from POST /agent/checkout", () => {
  test("an ACP body the bridge refuses gets ACP's error, exactly as on the ACP route", async () => {
    const { direct, bridged } = await both("acp", { cartId: "4c4c6307-0000-4000-8000-000000000000" });
    expect(direct.status).toBe(400);
    expect(direct.body).toMatchObject({ type: "invalid_request", code: "MISSING_REQUIRED_ARGUMENT", param: "$.items" });
    expect(bridged.status).toBe(direct.status);
    expect(bridged.body).toEqual(direct.body);
    expect(bridged.headers.get("x-protocol")).toBe("acp");
    for (const h of ["x-agent-commerce", "x-initiated-by", "x-ratelimit-limit", "content-type"]) expect(bridged.headers.get(h)).toBe(direct.headers.get(h));
  });

  test("an ACP item that does not exist gets ACP's not-found error, not our envelope", async () => {
    const { direct, bridged } = await both("acp", { items: [{ id: UNKNOWN, quantity: 1 }] });
    expect(direct.status).toBeGreaterThanOrEqual(400);
    expect(direct.body.type).toBeString();
    expect(bridged.status).toBe(direct.status);
    expect(bridged.body).toEqual(direct.body);
    expect(bridged.body.success).toBeUndefined();
  });

  test("a UCP body the bridge refuses gets UCP's error, also when the header is spelled in capitals", async () => {
    const direct = await post("/ucp/checkout-sessions", { line_items: [] });
    const bridged = await post("/checkout", { line_items: [] }, { "x-protocol": "UCP" });
    expect(direct.status).toBe(400);
    expect(bridged.status).toBe(direct.status);
    expect(bridged.body).toEqual(direct.body);
    expect(bridged.body.success).toBeUndefined();
    expect(bridged.body.details?.location).not.toBe("response");
  });

  test("a bridged success still answers in the bridge's shape", async () => {
    const r = await post("/checkout", { items: [{ id: BOARD, quantity: 1 }] }, { "x-protocol": "acp" });
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(/^cs_[0-9a-f]{32}$/);
    expect(r.body.success).toBeUndefined();
  });
});
