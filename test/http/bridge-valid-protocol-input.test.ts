/**
 * The ACP/UCP bridges accept what each protocol's schema accepts (review RA-2). d07a8e9 checked a Buyer/Address
 * before any work, but refused valid input with 400: a UCP Buyer's other members (its schema is
 * `additionalProperties: true`; UCP 2026-01-11's Buyer Consent extension adds `buyer.consent`), and `""` in an
 * optional string member (ACP `line_two: ""`, which address forms send; UCP `phone_number: ""`). Now a UCP Buyer's
 * other members are dropped (not stored, not echoed), `consent` is checked for its type and dropped, and `""` is an
 * absent member. What stays refused: a member of the wrong type, text Postgres cannot store (NUL, a lone surrogate),
 * a kept member over 320 characters, and a member ACP's Buyer/Address do not have (ACP 2025-09-29's schema is
 * `additionalProperties: false`). Through HTTP against the real server, with real Postgres.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const send = (method: string, path: string, body?: unknown): Promise<Res> => sendAs(srv, key, method, path, body);
const get = (path: string): Promise<Res> => srv.json(path, { headers: key.headers });
const meta = async (id: string) => (await srv.db.sql<{ meta: any }[]>`SELECT meta FROM bridge_sessions WHERE id = ${id}`)[0]!.meta;
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;

const LINE = [{ item: { id: BOARD }, quantity: 1 }];
const ITEMS = [{ id: BOARD, quantity: 1 }];
const ACP_PAY = { payment_data: { token: "tok_approve", provider: "stripe" } };
const US = { name: "Ada", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94105" };
const acpRefusal = (field: string) => ({ type: "invalid_request", code: "INVALID_ARGUMENT", param: `$.${field}` });
const ucpRefusal = (field: string) => ({ type: "error", code: "INVALID_ARGUMENT", path: `$.${field}`, severity: "requires_buyer_input" });

describe("UCP: a Buyer's members beyond the ones the service keeps are accepted and dropped (Buyer additionalProperties: true)", () => {
  test("a create whose buyer carries the Buyer Consent extension's consent is 201, and consent is neither stored nor echoed", async () => {
    const consent = { analytics: false, preferences: true, marketing: false, sale_of_data: false };
    const r = await send("POST", UCP, { line_items: LINE, buyer: { email: "ada@example.com", consent } });
    expect(r.status).toBe(201);
    expect(r.body.buyer).toEqual({ email: "ada@example.com" });
    expect((await meta(r.body.id)).buyer).toEqual({ email: "ada@example.com" });
    expect((await get(`${UCP}/${r.body.id}`)).body.buyer).toEqual({ email: "ada@example.com" });
  }, 60_000);

  test("an update whose buyer carries consent with a member the extension does not list is 200 and keeps the Buyer's strings", async () => {
    const id = (await send("POST", UCP, { line_items: LINE })).body.id;
    const r = await send("PUT", `${UCP}/${id}`, { buyer: { first_name: "Ada", consent: { analytics: true, marketing_channels: [{ channel: "email", opted_in: true }] } } });
    expect(r.status).toBe(200);
    expect(r.body.buyer).toEqual({ first_name: "Ada" });
  }, 60_000);

  test("a create whose buyer carries members UCP does not define (any JSON type) is 201 and shows only the Buyer's members", async () => {
    const buyer = { full_name: "Ada Lovelace", loyalty_id: "L-1", tier: { level: 3 }, tags: ["vip"], score: 9, ["x".repeat(400)]: "long name" };
    const r = await send("POST", UCP, { line_items: LINE, buyer });
    expect(r.status).toBe(201);
    expect(r.body.buyer).toEqual({ full_name: "Ada Lovelace" });
    expect((await meta(r.body.id)).buyer).toEqual({ full_name: "Ada Lovelace" });
  }, 60_000);

  const bad: [string, unknown, string][] = [
    ["consent that is not an object", { consent: "yes" }, "buyer.consent"],
    ["a consent member that is not a boolean", { consent: { analytics: "yes" } }, "buyer.consent.analytics"],
    ["a NUL byte in a member UCP does not define", { loyalty_id: "L\u00001" }, "buyer.loyalty_id"],
    ["a phone_number that is a number", { phone_number: 5550100 }, "buyer.phone_number"],
  ];
  for (const [what, buyer, field] of bad) {
    test(`a create with ${what} is still 400 INVALID_ARGUMENT on $.${field} and makes no cart`, async () => {
      const c = await carts();
      const r = await send("POST", UCP, { line_items: LINE, buyer });
      expect(r.status).toBe(400);
      expect(r.body.messages[0]).toMatchObject(ucpRefusal(field));
      expect(await carts()).toBe(c);
    }, 60_000);
  }
});

describe("an empty string in an optional member is an absent member", () => {
  test("UCP: a create with phone_number \"\" is 201 and keeps the buyer without it", async () => {
    const r = await send("POST", UCP, { line_items: LINE, buyer: { email: "ada@example.com", phone_number: "" } });
    expect(r.status).toBe(201);
    expect(r.body.buyer).toEqual({ email: "ada@example.com" });
  }, 60_000);

  test("ACP: a create with fulfillment_address.line_two \"\" is 201, priced for the address, which is kept without line_two", async () => {
    const r = await send("POST", ACP, { items: ITEMS, fulfillment_address: { ...US, line_two: "" } });
    expect(r.status).toBe(201);
    expect(r.body.fulfillment_address).toEqual(US);
    expect((await meta(r.body.id)).fulfillment_address).toEqual(US);
    expect(r.body.fulfillment_options.length).toBeGreaterThan(0);
  }, 60_000);

  test("ACP: a complete whose buyer has phone_number \"\" and a blank last_name completes and keeps the buyer without them", async () => {
    const id = (await send("POST", ACP, { items: ITEMS, fulfillment_address: US })).body.id;
    const view = await get(`${ACP}/${id}`);
    if (view.body.status !== "ready_for_payment") {
      const pick = await send("POST", `${ACP}/${id}`, { fulfillment_option_id: view.body.fulfillment_options[0].id });
      expect(pick.body.status).toBe("ready_for_payment");
    }
    const r = await send("POST", `${ACP}/${id}/complete`, { ...ACP_PAY, buyer: { first_name: "Ada", last_name: "  ", email: "ada@example.com", phone_number: "" } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "completed", buyer: { first_name: "Ada", email: "ada@example.com" } });
    expect(r.body.buyer).toEqual({ first_name: "Ada", email: "ada@example.com" });
  }, 60_000);
});

describe("what stays refused in a kept member", () => {
  const bad: [string, Record<string, unknown>, string][] = [
    ["a NUL byte in line_two", { ...US, line_two: "Apt\u00001" }, "fulfillment_address.line_two"],
    ["a lone surrogate in line_two", { ...US, line_two: "Apt \ud800" }, "fulfillment_address.line_two"],
    ["a line_two that is a number", { ...US, line_two: 1 }, "fulfillment_address.line_two"],
    ["a line_two of 321 characters", { ...US, line_two: "a".repeat(321) }, "fulfillment_address.line_two"],
    ["a member ACP's Address does not have", { ...US, phone_number: "+15555550100" }, "fulfillment_address.phone_number"],
  ];
  for (const [what, fulfillment_address, field] of bad) {
    test(`ACP: a create with ${what} is 400 INVALID_ARGUMENT on $.${field} and makes no cart`, async () => {
      const c = await carts();
      const r = await send("POST", ACP, { items: ITEMS, fulfillment_address });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(acpRefusal(field));
      expect(await carts()).toBe(c);
    }, 60_000);
  }

  test("UCP: a full_name of 321 characters is 400 INVALID_ARGUMENT on $.buyer.full_name", async () => {
    const r = await send("POST", UCP, { line_items: LINE, buyer: { full_name: "a".repeat(321) } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject(ucpRefusal("buyer.full_name"));
  }, 60_000);
});
