/**
 * Audit B-3: an ACP answer must validate against its version's schema, whose Buyer.email and
 * FulfillmentDetails.email are `format: email` (upstream spec/2026-04-17 and 2025-09-29 schema.agentic_checkout.json;
 * our fixtures keep it). The bridge's input check (gateway/bridge/input.ts EMAIL, /^[^\s@]+@[^\s@]+$/) takes
 * "ada@example" and "x@y", keeps them and echoes them: the 201 session then fails the schema, so a strict client
 * that validates answers refuses the whole session. Now the bridge checks emails as ajv-formats' `email` does (input.ts
 * EMAIL): 400 INVALID_ARGUMENT naming the member, as for any other email the check refuses.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import served2026 from "../fixtures/acp-2026-04-17.schema.json";
import schema2025 from "../fixtures/acp-2025-09-29.schema.json";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(served2026, "acp26");
ajv.addSchema(schema2025, "acp25");
const session26 = ajv.getSchema("acp26#/$defs/CheckoutSession")!;
const session25 = ajv.getSchema("acp25#/$defs/CheckoutSession")!;
const errorsOf = (v: typeof session26, body: unknown): string[] => (v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
function send(version: string, body: unknown) {
  return srv.json(ACP, { method: "POST", headers: { ...key.headers, "api-version": version, "idempotency-key": crypto.randomUUID() }, body });
}

describe("ACP: an email the version's schema does not take is refused, never echoed", () => {
  test("in 2026-04-17 a buyer.email or fulfillment_details.email without a dotted domain is refused naming the member, and dotted ones are kept", async () => {
    const r = await send("2026-04-17", { line_items: [{ id: BOARD }], buyer: { email: "ada@example" }, fulfillment_details: { address: ADDRESS } });
    expect({ status: r.status, code: r.body.code, param: r.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.buyer.email" });
    const d = await send("2026-04-17", { line_items: [{ id: BOARD }], buyer: { email: "ada@example.com" }, fulfillment_details: { email: "x@y", address: ADDRESS } });
    expect({ status: d.status, code: d.body.code, param: d.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.fulfillment_details.email" });
    // dotted addresses are kept, and the answer is a valid CheckoutSession of the version
    const ok = await send("2026-04-17", { line_items: [{ id: BOARD }], buyer: { email: "ada.l+shop@example.co.uk" }, fulfillment_details: { email: "x@y.example", address: ADDRESS } });
    expect(ok.status).toBe(201);
    expect(ok.body.buyer.email).toBe("ada.l+shop@example.co.uk");
    expect(errorsOf(session26, ok.body)).toEqual([]);
  });

  test("in 2025-09-29 a buyer.email without a dotted domain is refused, and a dotted one validates", async () => {
    const buyer = { first_name: "Ada", last_name: "Lovelace", email: "ada@example" };
    const r = await send("2025-09-29", { items: [{ id: BOARD, quantity: 1 }], buyer });
    expect({ status: r.status, code: r.body.code, param: r.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.buyer.email" });
    const ok = await send("2025-09-29", { items: [{ id: BOARD, quantity: 1 }], buyer: { ...buyer, email: "ada@example.com" } });
    expect(ok.status).toBe(201);
    const { order: _order, ...rest } = ok.body;
    expect(errorsOf(session25, rest)).toEqual([]);
  });
});
