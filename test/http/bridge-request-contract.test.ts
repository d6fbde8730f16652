/**
 * The request contract on the protocol bridges (review R3-4, R3-5, R3-6), through HTTP against the real service:
 *  - a refusal of the contract (a form or text body, a body that is not a JSON object, one that does not parse, a
 *    repeated query parameter) answers in the protocol's own error shape on ACP and UCP, and in our envelope on AP2,
 *    which defines none;
 *  - every JSON media type is read as JSON (`Application/JSON`, `+json` suffixes) and a body that does not parse is
 *    refused, never taken as "no body" (an ACP update that changed nothing answered 200);
 *  - an AP2 user-signature 401 challenges for the mandate's signature, not for the API key that was accepted.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const ACP = "/api/v1/agent/acp/checkout_sessions";
const UCP = "/api/v1/agent/ucp/checkout-sessions";
const AP2 = "/api/v1/agent/ap2/payment-mandates";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

/** A request with this exact body text and Content-Type (none when null). */
const send = (method: string, path: string, text: string | null, contentType: string | null, headers: Record<string, string> = {}) =>
  srv.json(path, {
    method,
    headers: { ...key.headers, ...headers, ...(contentType ? { "content-type": contentType } : {}) },
    ...(text === null ? {} : { body: text }),
  });

const acpCreate = JSON.stringify({ items: [{ id: BOARD, quantity: 1 }] });
const ucpCreate = JSON.stringify({ line_items: [{ item: { id: BOARD }, quantity: 1 }] });

/** ACP's error object `{type, code, message, param?}`, not our envelope. */
function expectAcpError(r: { status: number; body: any }, code: string) {
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ type: "invalid_request", code });
  expect(typeof r.body.message).toBe("string");
  expect(r.body.success).toBeUndefined();
  expect(r.body.error).toBeUndefined();
}

/** UCP's `{ucp, messages: [{type: "error", code, content, severity}]}`, not our envelope. */
function expectUcpError(r: { status: number; body: any }, code: string) {
  expect(r.status).toBe(400);
  expect(r.body.ucp).toMatchObject({ version: expect.any(String) });
  expect(r.body.messages).toHaveLength(1);
  expect(r.body.messages[0]).toMatchObject({ type: "error", code, severity: "requires_buyer_input" });
  expect(typeof r.body.messages[0].content).toBe("string");
  expect(r.body.success).toBeUndefined();
}

async function sessionCount(): Promise<number> {
  const [r] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM bridge_sessions WHERE agent_key_id = ${key.id} AND protocol IN ('acp', 'ucp')`;
  return r!.n;
}

async function newAcpSession(): Promise<string> {
  const r = await send("POST", ACP, acpCreate, "application/json");
  expect(r.status).toBe(201);
  return r.body.id;
}

async function acpQuantities(id: string): Promise<number[]> {
  const r = await srv.json(`${ACP}/${id}`, { headers: key.headers });
  expect(r.status).toBe(200);
  return r.body.line_items.map((l: { item: { quantity: number } }) => l.item.quantity);
}

describe("R3-4: the request contract's refusals answer in the bridge's own error shape", () => {
  test("an ACP create sent as a form is ACP's invalid_request naming the content type, and creates nothing", async () => {
    const before = await sessionCount();
    const r = await send("POST", ACP, "items=x", "application/x-www-form-urlencoded");
    expectAcpError(r, "validation_error");
    expect(r.body.message).toContain("must be JSON sent with Content-Type: application/json");
    expect(r.body.details).toMatchObject({ location: "body", contentType: "application/x-www-form-urlencoded", expectedContentType: "application/json" });
    expect(await sessionCount()).toBe(before);
  });

  for (const text of ["[]", "null", "42"]) {
    test(`an ACP create whose body is ${text} is ACP's invalid_request "must be a JSON object"`, async () => {
      const r = await send("POST", ACP, text, "application/json");
      expectAcpError(r, "validation_error");
      expect(r.body.message).toContain("must be a JSON object");
    });
  }

  test("an ACP create with a query parameter given twice is ACP's invalid_request, with no body param, and creates nothing", async () => {
    const before = await sessionCount();
    const r = await send("POST", `${ACP}?v=1&v=2`, acpCreate, "application/json");
    expectAcpError(r, "validation_error");
    expect(r.body.message).toBe("Invalid query field 'v': given more than once; send each query parameter once");
    // ACP's param is a JSONPath into the body; a query parameter is not one
    expect(r.body.param).toBeUndefined();
    expect(r.body.details).toMatchObject({ location: "query", field: "v" });
    expect(await sessionCount()).toBe(before);
  });

  test("a UCP create sent as text/plain is UCP's error message, and creates nothing", async () => {
    const before = await sessionCount();
    const r = await send("POST", UCP, ucpCreate, "text/plain");
    expectUcpError(r, "validation_error");
    expect(r.body.messages[0].content).toContain("must be JSON sent with Content-Type: application/json");
    expect(await sessionCount()).toBe(before);
  });

  test("a UCP update whose body is an array is UCP's error message", async () => {
    const created = await send("POST", UCP, ucpCreate, "application/json");
    expect(created.status).toBe(201);
    const r = await send("PUT", `${UCP}/${created.body.id}`, "[]", "application/json");
    expectUcpError(r, "validation_error");
    expect(r.body.messages[0].content).toContain("must be a JSON object");
  });

  test("an ACP update sent as a form is refused in ACP's shape and changes nothing", async () => {
    const id = await newAcpSession();
    const r = await send("POST", `${ACP}/${id}`, `items=${encodeURIComponent(JSON.stringify([{ id: BOARD, quantity: 3 }]))}`, "application/x-www-form-urlencoded");
    expectAcpError(r, "validation_error");
    expect(await acpQuantities(id)).toEqual([1]);
  });

  test("POST /agent/checkout with x-protocol acp and a form body is refused in ACP's shape, as on the ACP route", async () => {
    const r = await send("POST", "/api/v1/agent/checkout", "items=x", "application/x-www-form-urlencoded", { "x-protocol": "acp" });
    expectAcpError(r, "validation_error");
    const direct = await send("POST", ACP, "items=x", "application/x-www-form-urlencoded");
    expect(r.body).toEqual(direct.body);
  });

  test("POST /agent/checkout with a UCP-shaped body and a repeated query parameter is refused in UCP's shape", async () => {
    const r = await send("POST", "/api/v1/agent/checkout?a=1&a=2", ucpCreate, "application/json");
    expectUcpError(r, "validation_error");
  });

  test("POST /agent/checkout of our own shape keeps our envelope for the same refusal", async () => {
    const r = await send("POST", "/api/v1/agent/checkout", "cartId=x", "application/x-www-form-urlencoded");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { contentType: "application/x-www-form-urlencoded" } });
  });

  test("an AP2 mandate sent as a form is our envelope (AP2 defines no HTTP error shape)", async () => {
    const r = await send("POST", AP2, "cart_id=x", "application/x-www-form-urlencoded");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { contentType: "application/x-www-form-urlencoded" } });
  });

  test("a session id over 100 characters is ACP's invalid_request without a body param, and a wrong method is ACP's 405 with Allow", async () => {
    const long = await srv.json(`${ACP}/${"x".repeat(120)}`, { headers: key.headers });
    expectAcpError(long, "validation_error");
    expect(long.body.param).toBeUndefined();
    expect(long.body.details).toMatchObject({ location: "params", field: "id" });
    const wrong = await srv.json(ACP, { method: "DELETE", headers: key.headers });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect(wrong.body).toMatchObject({ type: "invalid_request", code: "method_not_allowed" });
  });

  test("an ACP request without a valid key is ACP's error too, with the API-key challenge", async () => {
    const r = await srv.json(ACP, { method: "POST", headers: { "x-agent-api-key": "agnt_nope" }, body: { items: [{ id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "unauthorized" });
    expect(r.body.success).toBeUndefined();
    expect(r.headers.get("www-authenticate")).toBe(`ApiKey realm="api", header="X-Agent-Api-Key"`);
  });
});

describe("R3-5: every JSON media type is read as JSON, and a body that does not parse is refused", () => {
  for (const type of ["Application/JSON", "application/JSON; charset=utf-8", "application/vnd.api+json", "application/merge-patch+json"]) {
    test(`a cart created with Content-Type ${type} is read (201 with the item)`, async () => {
      const r = await send("POST", "/api/v1/agent/cart", JSON.stringify({ items: [{ product_id: BOARD, quantity: 2 }] }), type);
      expect(r.status).toBe(201);
      expect(r.body.data.items[0]).toMatchObject({ product_id: BOARD, quantity: 2 });
    });
  }

  test("a REST body sent as Application/JSON that does not parse is 400 not valid JSON (not 'must be an object (got undefined)')", async () => {
    const r = await send("POST", "/api/v1/agent/cart", '{"items":[', "Application/JSON");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", error: "Request body is not valid JSON." });
  });

  test("an ACP update sent as Application/JSON changes the quantity (it was 200 with nothing changed)", async () => {
    const id = await newAcpSession();
    const r = await send("POST", `${ACP}/${id}`, JSON.stringify({ items: [{ id: BOARD, quantity: 3 }] }), "Application/JSON");
    expect(r.status).toBe(200);
    expect(await acpQuantities(id)).toEqual([3]);
  });

  test("an ACP create sent as application/vnd.api+json creates the session", async () => {
    const r = await send("POST", ACP, acpCreate, "application/vnd.api+json");
    expect(r.status).toBe(201);
    expect(r.body.line_items).toHaveLength(1);
  });

  test("a truncated ACP update is ACP's invalid_request and changes nothing (it was 200 with nothing changed)", async () => {
    const id = await newAcpSession();
    const r = await send("POST", `${ACP}/${id}`, `{"items":[{"id":"${BOARD}","quantity":3}`, "application/json");
    expectAcpError(r, "validation_error");
    expect(r.body.message).toBe("Request body is not valid JSON.");
    expect(await acpQuantities(id)).toEqual([1]);
  });

  test("a truncated UCP update is UCP's error message", async () => {
    const created = await send("POST", UCP, ucpCreate, "application/json");
    expect(created.status).toBe(201);
    const r = await send("PUT", `${UCP}/${created.body.id}`, '{"line_items":[', "application/json");
    expectUcpError(r, "validation_error");
  });

  test("an ACP cancel without a body (and without a content type) is still no body: 200 canceled", async () => {
    const id = await newAcpSession();
    const r = await send("POST", `${ACP}/${id}/cancel`, null, null);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("canceled");
  });
});

describe("R3-6: an AP2 user-signature failure challenges for the mandate's signature", () => {
  const b64url = (s: string) => Buffer.from(s).toString("base64url");
  const mandate = (authorization: string) =>
    JSON.stringify({
      cart_id: "00000000-0000-4000-8000-000000000000",
      payment_mandate: {
        payment_mandate_contents: {
          payment_mandate_id: "pm_l2",
          payment_details_total: { label: "t", amount: { currency: "USD", value: 1 } },
          payment_response: { details: { token: "tok_approve" } },
          merchant_agent: "demo-store",
        },
        user_authorization: authorization,
      },
    });

  test("a kid not registered is 401 AGENT_TOKEN_INVALID whose challenge names the user authorization and the reason, not the accepted API key", async () => {
    const jws = `${b64url(JSON.stringify({ alg: "ES256", kid: "nope", typ: "kb+jwt" }))}.e30.AAAA`;
    const r = await send("POST", AP2, mandate(jws), "application/json");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "AGENT_TOKEN_INVALID", details: { reason: "unknown_key" } });
    expect(r.headers.get("www-authenticate")).toBe(`AP2-User-Authorization realm="api", field="payment_mandate.user_authorization", error="unknown_key"`);
  });

  test("the same mandate through POST /agent/checkout gets the same challenge", async () => {
    const r = await send("POST", "/api/v1/agent/checkout", mandate("not-a-jws"), "application/json");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: "AGENT_TOKEN_INVALID", details: { reason: "malformed" } });
    expect(r.headers.get("www-authenticate")).toBe(`AP2-User-Authorization realm="api", field="payment_mandate.user_authorization", error="malformed"`);
  });

  test("an AP2 request without a valid key still gets the API-key challenge", async () => {
    const r = await srv.json(AP2, { method: "POST", headers: { "x-agent-api-key": "agnt_nope", "content-type": "application/json" }, body: mandate("x") });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe("unauthorized");
    expect(r.headers.get("www-authenticate")).toBe(`ApiKey realm="api", header="X-Agent-Api-Key"`);
  });
});
