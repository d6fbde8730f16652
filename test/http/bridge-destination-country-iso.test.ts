/**
 * Review R-2 (session 17) of 508eac1: the cart's ISO check of a destination's country names details.field
 * country_code, a field of REST and MCP only; an ACP session with fulfillment_address.country "ZZ" (two letters, no
 * country) came back 400 on $.country_code, a member ACP does not have (UCP alike). Now the bridges' own destinationOf
 * checks ISO codes with the protocol's field, as it did for "Z1".
 */import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { ACP, UCP } from "../helpers/bridge.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a non-ISO country through ACP and UCP names the protocol's field", () => {
  const address = (country: string) => ({ name: "Ada Lovelace", line_one: "1 Main St", city: "Nowhere", state: "", country, postal_code: "12345" });
  const create = (country: string) =>
    srv.json(ACP, {
      method: "POST",
      headers: { ...key.headers, "idempotency-key": crypto.randomUUID(), "api-version": "2025-09-29" },
      body: { items: [{ id: SHAMPOO, quantity: 1 }], fulfillment_address: address(country) },
    });

  test("'Z1' (not two letters) is 400 on $.fulfillment_address (the bridge's own check)", async () => {
    const r = await create("Z1");
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.fulfillment_address");
  });

  test("'ZZ' (two letters, no country) is 400 on the same ACP member, not on $.country_code", async () => {
    const r = await create("ZZ");
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.param).toBe("$.fulfillment_address");
  });

  test("UCP: 'ZZ' names the destination, as 'Z1' does, not $.country_code", async () => {
    const ucp = (country: string) =>
      srv.json(UCP, {
        method: "POST",
        headers: { ...key.headers, "idempotency-key": crypto.randomUUID() },
        body: { line_items: [{ item: { id: SHAMPOO }, quantity: 1 }], fulfillment: { methods: [{ type: "shipping", destinations: [{ address_country: country, postal_code: "12345" }] }] } },
      });
    const z1 = await ucp("Z1");
    expect(z1.body.messages[0].path).toBe("$.fulfillment.methods[0].destinations[0]");
    const zz = await ucp("ZZ");
    expect(zz.body.messages[0].code).toBe("INVALID_ARGUMENT");
    expect(zz.body.messages[0].path).toBe("$.fulfillment.methods[0].destinations[0]");
  });
});
