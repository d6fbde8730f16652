/**
 * ACP API version 2026-04-17 served beside 2025-09-29 (session 12): every answer of a request naming it validates
 * against that version's schema (test/fixtures/acp-2026-04-17.schema.json, our own schema of the members served,
 * written from upstream spec/2026-04-17/json-schema/schema.agentic_checkout.json): create from `line_items` (or the
 * RFC's `items`), `fulfillment_details` and `selected_fulfillment_options[]`, the version's Buyer, complete with
 * `payment_data.instrument.credential.token`, the buyer's approval at `continue_url` (status `requires_escalation`),
 * cancel, and its Error (no `details`, no `request_not_idempotent`). Before, every ACP client on a version after
 * 2025-09-29 was refused 400 unsupported_api_version. A session is one session in either version: created in one,
 * read, updated and completed in the other, each answer in the caller's version. Through HTTP against the real
 * server, with real Postgres.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import served2026 from "../fixtures/acp-2026-04-17.schema.json";
import schema2025 from "../fixtures/acp-2025-09-29.schema.json";
import { requestHash } from "../../gateway/bridge/common.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

type Res = { status: number; body: any; headers: Headers };

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(served2026, "acp26");
ajv.addSchema(schema2025, "acp25");
const session26 = ajv.getSchema("acp26#/$defs/CheckoutSession")!;
const withOrder26 = ajv.getSchema("acp26#/$defs/CheckoutSessionWithOrder")!;
const error26 = ajv.getSchema("acp26#/$defs/Error")!;
const session25 = ajv.getSchema("acp25#/$defs/CheckoutSession")!;

const errorsOf = (v: typeof session26, body: unknown): string[] => (v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
/** A 2025-09-29 session answer's errors: `order` checked apart (that revision's Base does not list it). */
const errors25 = (body: Record<string, unknown>): string[] => {
  const { order: _order, ...rest } = body;
  return errorsOf(session25, rest);
};

const srv = useServer({ seed: true });
let key: TestKey;
let summitProduct: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'summit-sports-co' AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  summitProduct = p!.id;
}, 120_000);

const V = "2026-04-17";
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const DETAILS = { name: "Ada Lovelace", phone_number: "+15551234567", email: "ada@example.com", address: { ...ADDRESS, company: "Analytical Engines" } };
const BUYER = { first_name: "Ada", last_name: "Lovelace", full_name: "Ada Lovelace", email: "ada@example.com", account_type: "guest" };
const pay = (token: string) => ({ payment_data: { handler_id: "sandbox_card", instrument: { type: "card", credential: { type: "spt", token } } } });

function send(method: string, path: string, body?: unknown, opts: { version?: string | null; idem?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = { ...key.headers, "idempotency-key": opts.idem ?? crypto.randomUUID() };
  const version = opts.version === undefined ? V : opts.version;
  if (version !== null) headers["api-version"] = version;
  return srv.json(path, { method, headers, ...(body === undefined ? {} : { body }) });
}

describe("ACP 2026-04-17: answers validate against the version's schema", () => {
  test("a create from line_items without a quantity, an update with the version's Buyer and fulfillment_details, and a read are valid sessions naming the version", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }], currency: "usd", capabilities: { interventions: { supported: [] } } });
    expect(created.status).toBe(201);
    expect(created.headers.get("api-version")).toBe(V);
    expect(errorsOf(session26, created.body)).toEqual([]);
    expect(created.body).toMatchObject({ protocol: { version: V }, capabilities: {}, status: "ready_for_payment", currency: "usd", fulfillment_options: [] });
    expect(created.body.line_items).toEqual([
      expect.objectContaining({ item: expect.objectContaining({ id: BOARD }), quantity: 1, totals: expect.arrayContaining([expect.objectContaining({ type: "total" })]) }),
    ]);
    for (const absent of ["buyer", "fulfillment_details", "selected_fulfillment_options", "continue_url", "order", "fulfillment_address", "fulfillment_option_id"]) {
      expect(absent in created.body).toBe(false);
    }

    const updated = await send("POST", `${ACP}/${created.body.id}`, { buyer: BUYER, fulfillment_details: DETAILS });
    expect(updated.status).toBe(200);
    expect(errorsOf(session26, updated.body)).toEqual([]);
    // the Buyer's string members are kept; account_type is checked and not kept
    expect(updated.body.buyer).toEqual({ first_name: "Ada", last_name: "Lovelace", full_name: "Ada Lovelace", email: "ada@example.com" });
    expect(updated.body.fulfillment_details).toEqual(DETAILS);
    expect(updated.body.selected_fulfillment_options).toEqual([{ type: "shipping", option_id: expect.any(String), item_ids: [updated.body.line_items[0].id] }]);

    const read = await send("GET", `${ACP}/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(errorsOf(session26, read.body)).toEqual([]);
    expect(read.body).toEqual(updated.body);
  }, 60_000);

  test("at a store with two shipping methods: not_ready_for_payment naming fulfillment_details.address, then its options, a pick in selected_fulfillment_options, and a complete with the instrument's token that is a valid session with its order", async () => {
    const created = await send("POST", ACP, { items: [{ id: summitProduct, quantity: 2 }] });
    expect(created.status).toBe(201);
    expect(errorsOf(session26, created.body)).toEqual([]);
    expect(created.body.status).toBe("not_ready_for_payment");
    expect(created.body.line_items[0].quantity).toBe(2);
    expect(created.body.messages).toEqual([expect.objectContaining({ type: "error", code: "missing", param: "$.fulfillment_details.address", content: expect.stringContaining("fulfillment_details.address") })]);
    const id = created.body.id as string;

    const addressed = await send("POST", `${ACP}/${id}`, { fulfillment_details: { address: ADDRESS } });
    expect(addressed.status).toBe(200);
    expect(errorsOf(session26, addressed.body)).toEqual([]);
    expect(addressed.body.status).toBe("not_ready_for_payment");
    expect(addressed.body.messages).toEqual([expect.objectContaining({ code: "missing", param: "$.selected_fulfillment_options" })]);
    const options = addressed.body.fulfillment_options as { id: string; title: string; totals: { type: string; amount: number }[] }[];
    expect(options.map((o) => o.title)).toEqual(["Contiguous US", "Express"]);
    const express = options[1]!;

    const picked = await send("POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: express.id, item_ids: [created.body.line_items[0].id] }] });
    expect(picked.status).toBe(200);
    expect(errorsOf(session26, picked.body)).toEqual([]);
    expect(picked.body.status).toBe("ready_for_payment");
    expect(picked.body.selected_fulfillment_options).toEqual([{ type: "shipping", option_id: express.id, item_ids: [created.body.line_items[0].id] }]);
    const shipping = picked.body.totals.find((t: { type: string }) => t.type === "fulfillment").amount;
    expect(shipping).toBe(express.totals.find((t) => t.type === "total")!.amount);

    const done = await send("POST", `${ACP}/${id}/complete`, { ...pay("tok_approve"), buyer: { email: "ada@example.com" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(errorsOf(withOrder26, done.body)).toEqual([]);
    expect(done.body.order).toEqual({ type: "order", id: expect.any(String), checkout_session_id: id, permalink_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/agent\/orders\//) });
    const [order] = await srv.db.sql<{ shipping_minor: string }[]>`SELECT shipping_minor FROM orders WHERE id = ${done.body.order.id}`;
    expect(Number(order!.shipping_minor)).toBe(shipping);
  }, 60_000);

  test("a complete that needs the buyer's approval is requires_escalation with the link as continue_url (and in an info message); once approved the complete is valid with its order", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }], fulfillment_details: { address: ADDRESS } });
    const waiting = await send("POST", `${ACP}/${created.body.id}/complete`, pay("tok_needs_approval"));
    expect(waiting.status).toBe(200);
    expect(errorsOf(session26, waiting.body)).toEqual([]);
    expect(waiting.body.status).toBe("requires_escalation");
    const link = waiting.body.continue_url as string;
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
    expect(waiting.body.messages).toContainEqual({ type: "info", content_type: "markdown", content: expect.stringContaining(`<${link}>, then complete the session again`) });
    const read = await send("GET", `${ACP}/${created.body.id}`);
    expect(errorsOf(session26, read.body)).toEqual([]);
    expect(read.body.continue_url).toBe(link);

    expect((await decideAt(srv, link, "approve")).status).toBe(200);
    const done = await send("POST", `${ACP}/${created.body.id}/complete`, pay("tok_needs_approval"));
    expect(done.body.status).toBe("completed");
    expect(errorsOf(withOrder26, done.body)).toEqual([]);
    expect("continue_url" in done.body).toBe(false);
  }, 60_000);

  test("fulfillment_details replaces the parts it names: a contact-only update keeps the address and its shipping, and null clears both", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }], fulfillment_details: DETAILS });
    expect(created.body.fulfillment_details).toEqual(DETAILS);
    const contactOnly = await send("POST", `${ACP}/${created.body.id}`, { fulfillment_details: { name: "Charles Babbage", email: "cb@example.com" } });
    expect(contactOnly.status).toBe(200);
    expect(errorsOf(session26, contactOnly.body)).toEqual([]);
    expect(contactOnly.body.fulfillment_details).toEqual({ name: "Charles Babbage", email: "cb@example.com", address: DETAILS.address });
    expect(contactOnly.body.selected_fulfillment_options).toEqual(created.body.selected_fulfillment_options);
    const cleared = await send("POST", `${ACP}/${created.body.id}`, { fulfillment_details: null });
    expect(cleared.status).toBe(200);
    expect(errorsOf(session26, cleared.body)).toEqual([]);
    expect("fulfillment_details" in cleared.body).toBe(false);
  }, 60_000);

  test("a cancel is a valid canceled session, and a second cancel answers the same", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }] });
    const canceled = await send("POST", `${ACP}/${created.body.id}/cancel`, { intent_trace: { reason_code: "price_sensitivity" } });
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe("canceled");
    expect(errorsOf(session26, canceled.body)).toEqual([]);
    const again = await send("POST", `${ACP}/${created.body.id}/cancel`);
    expect({ status: again.status, state: again.body.status }).toEqual({ status: 200, state: "canceled" });
  }, 60_000);
});

describe("ACP 2026-04-17: refusals are the version's Error", () => {
  test("a create without items, with 2025-09-29's fulfillment_address, in another currency, an unknown session and a complete without a token are each 400/404 in the version's Error, with no details", async () => {
    const cases: [Res, number, string, string | undefined][] = [
      [await send("POST", ACP, { line_items: [] }), 400, "MISSING_REQUIRED_ARGUMENT", "$.line_items"],
      [await send("POST", ACP, { line_items: [{ id: BOARD }], fulfillment_address: ADDRESS }), 400, "INVALID_ARGUMENT", "$.fulfillment_address"],
      [await send("POST", ACP, { line_items: [{ id: BOARD }], currency: "eur" }), 400, "INVALID_ARGUMENT", "$.currency"],
      [await send("POST", ACP, { line_items: [{ id: BOARD }], buyer: { email: "ada@example.com", loyalty_tier: "gold" } }), 400, "INVALID_ARGUMENT", "$.buyer.loyalty_tier"],
      [await send("POST", ACP, { line_items: [{ id: BOARD }], selected_fulfillment_options: [{ type: "pickup", option_id: crypto.randomUUID(), item_ids: [] }] }), 400, "INVALID_ARGUMENT", "$.selected_fulfillment_options[0].type"],
      [await send("GET", `${ACP}/cs_nosuchsession`), 404, "CHECKOUT_SESSION_NOT_FOUND", undefined],
    ];
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }] });
    cases.push([await send("POST", `${ACP}/${made.body.id}/complete`, { payment_data: { handler_id: "sandbox_card" } }), 400, "MISSING_REQUIRED_ARGUMENT", "$.payment_data.instrument.credential.token"]);
    for (const [r, status, code, param] of cases) {
      expect({ status: r.status, code: r.body.code, param: r.body.param }).toEqual({ status, code, param });
      expect(r.body.type).toBe("invalid_request");
      expect(errorsOf(error26, r.body)).toEqual([]);
      expect(r.headers.get("api-version")).toBe(V);
    }
    expect(cases[1]![0].body.message).toContain("in 2026-04-17 send fulfillment_details.address");
  }, 60_000);

  test("a refusal before the route's own work (a body that is not JSON) is the version's Error too", async () => {
    const r = await srv.fetch(ACP, { method: "POST", headers: { ...key.headers, "api-version": V, "content-type": "application/json" }, body: "{not json" });
    const body = await r.json();
    expect(r.status).toBe(400);
    expect(errorsOf(error26, body)).toEqual([]);
    expect("details" in body).toBe(false);
  }, 60_000);

  test("the same Idempotency-Key with another body is idempotency_conflict, and the key sent again in 2025-09-29 is a conflict, never a replay in the other version's shape", async () => {
    const idem = crypto.randomUUID();
    const first = await send("POST", ACP, { line_items: [{ id: BOARD }] }, { idem });
    expect(first.status).toBe(201);
    const replay = await send("POST", ACP, { line_items: [{ id: BOARD }] }, { idem });
    expect({ status: replay.status, id: replay.body.id, replayed: replay.headers.get("idempotent-replayed") }).toEqual({ status: 201, id: first.body.id, replayed: "true" });
    const other = await send("POST", ACP, { line_items: [{ id: BOARD }, { id: BOARD }] }, { idem });
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ type: "invalid_request", code: "idempotency_conflict", message: "This Idempotency-Key was used with a different request." });
    expect(errorsOf(error26, other.body)).toEqual([]);
    const older = await send("POST", ACP, { line_items: [{ id: BOARD }] }, { idem, version: "2025-09-29" });
    expect(older.status).toBe(409);
    expect(older.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT" });
  }, 60_000);
});

describe("ACP 2026-04-17: an error's type is the one the version defines", () => {
  test("a declined card and a buyer's refusal are invalid_request (the request's instrument or buyer said no), not processing_error, which the version keeps for server-side failures", async () => {
    for (const [token, code] of [
      ["tok_decline", "PAYMENT_DECLINED"],
      ["tok_not_approved", "PAYMENT_NOT_APPROVED"],
    ] as const) {
      const made = await send("POST", ACP, { line_items: [{ id: BOARD }] });
      expect(made.status).toBe(201);
      const r = await send("POST", `${ACP}/${made.body.id}/complete`, pay(token));
      expect({ token, status: r.status, type: r.body.type, code: r.body.code }).toEqual({ token, status: 402, type: "invalid_request", code });
      expect(errorsOf(error26, r.body)).toEqual([]);
    }
  }, 60_000);

  test("a payment the processor failed and rolled back is processing_error", async () => {
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }] });
    const r = await send("POST", `${ACP}/${made.body.id}/complete`, pay("tok_fail"));
    expect({ status: r.status, type: r.body.type, code: r.body.code }).toEqual({ status: 402, type: "processing_error", code: "PAYMENT_FAILED_ROLLED_BACK" });
    expect(errorsOf(error26, r.body)).toEqual([]);
  }, 60_000);

  test("an unexpected server-side failure (a 500) is processing_error, not service_unavailable, which tells the client to retry a temporary outage", async () => {
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }] });
    // a session record the service cannot read: its shipping groups broken
    await srv.db.sql`UPDATE bridge_sessions SET meta = jsonb_set(meta, '{shipping}', '{"groups": [null]}'::jsonb) WHERE id = ${made.body.id}`;
    const r = await send("GET", `${ACP}/${made.body.id}`);
    expect({ status: r.status, type: r.body.type }).toEqual({ status: 500, type: "processing_error" });
    expect(errorsOf(error26, r.body)).toEqual([]);
    // 2025-09-29 keeps its mapping (every 5xx service_unavailable)
    const r25 = await send("GET", `${ACP}/${made.body.id}`, undefined, { version: "2025-09-29" });
    expect({ status: r25.status, type: r25.body.type }).toEqual({ status: 500, type: "service_unavailable" });
  }, 60_000);

  test("a key whose first request is still running is code idempotency_in_flight, the version's name; 2025-09-29 keeps CHECKOUT_ALREADY_IN_PROGRESS", async () => {
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }] });
    const path = `${ACP}/${made.body.id}/complete`;
    const body = pay("tok_approve");
    const idem = crypto.randomUUID();
    // the same request's claim, held by a request still running (index.ts `scope`: the non-default version is in the hash)
    await srv.db.sql`INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, claim_id, claimed_until)
      VALUES ('acp', ${key.id}, ${idem}, ${requestHash("POST", `${path}#API-Version=${V}`, body)}, ${crypto.randomUUID()}, now() + interval '1 hour')`;
    const r = await send("POST", path, body, { idem });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ type: "invalid_request", code: "idempotency_in_flight", message: "A request with this Idempotency-Key is still running; retry the same call." });
    expect(errorsOf(error26, r.body)).toEqual([]);

    const idem25 = crypto.randomUUID();
    const body25 = { payment_data: { token: "tok_approve", provider: "stripe" } };
    await srv.db.sql`INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, claim_id, claimed_until)
      VALUES ('acp', ${key.id}, ${idem25}, ${requestHash("POST", path, body25)}, ${crypto.randomUUID()}, now() + interval '1 hour')`;
    const r25 = await send("POST", path, body25, { idem: idem25, version: "2025-09-29" });
    expect(r25.status).toBe(409);
    expect(r25.body).toMatchObject({ type: "request_not_idempotent", code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { reason: "idempotency_in_flight" } });
    // a session busy with another write is not a key in flight: CHECKOUT_ALREADY_IN_PROGRESS in both versions
    await srv.db.sql`UPDATE bridge_sessions SET claim_id = ${crypto.randomUUID()}, claimed_until = now() + interval '1 hour' WHERE id = ${made.body.id}`;
    const busy = await send("POST", `${ACP}/${made.body.id}`, { buyer: { email: "ada@example.com" } });
    expect({ status: busy.status, type: busy.body.type, code: busy.body.code }).toEqual({ status: 409, type: "invalid_request", code: "CHECKOUT_ALREADY_IN_PROGRESS" });
  }, 60_000);
});

describe("ACP: one session in both versions, each answer in the caller's", () => {
  test("created in 2025-09-29, read and updated in 2026-04-17, completed in 2025-09-29, read again in 2026-04-17: every answer valid in its own version", async () => {
    const created = await send("POST", ACP, { items: [{ id: summitProduct, quantity: 1 }], buyer: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" }, fulfillment_address: ADDRESS }, { version: "2025-09-29" });
    expect(created.status).toBe(201);
    expect(errors25(created.body)).toEqual([]);
    const id = created.body.id as string;

    const read26 = await send("GET", `${ACP}/${id}`);
    expect(errorsOf(session26, read26.body)).toEqual([]);
    expect(read26.body).toMatchObject({ buyer: { email: "ada@example.com" }, fulfillment_details: { address: ADDRESS }, status: "not_ready_for_payment" });
    expect(read26.body.messages).toEqual([expect.objectContaining({ param: "$.selected_fulfillment_options", content: expect.stringContaining("selected_fulfillment_options") })]);
    const standard = read26.body.fulfillment_options[0].id as string;

    const updated26 = await send("POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: standard, item_ids: [] }], fulfillment_details: { name: "Ada", address: { ...ADDRESS, company: "AE" } } });
    expect(updated26.status).toBe(200);
    expect(errorsOf(session26, updated26.body)).toEqual([]);
    expect(updated26.body.status).toBe("ready_for_payment");

    // read in 2025-09-29: its own members only (no company, no contact), the pick as fulfillment_option_id
    const read25 = await send("GET", `${ACP}/${id}`, undefined, { version: null });
    expect(read25.headers.get("api-version")).toBe("2025-09-29");
    expect(errors25(read25.body)).toEqual([]);
    expect(read25.body).toMatchObject({ status: "ready_for_payment", fulfillment_address: ADDRESS, fulfillment_option_id: standard });
    expect(read25.body.fulfillment_address.company).toBeUndefined();

    const done25 = await send("POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } }, { version: "2025-09-29" });
    expect(done25.body.status).toBe("completed");
    expect(errors25(done25.body)).toEqual([]);
    const after26 = await send("GET", `${ACP}/${id}`);
    expect(errorsOf(withOrder26, after26.body)).toEqual([]);
    expect(after26.body.order).toMatchObject({ type: "order", id: done25.body.order.id });
  }, 60_000);

  test("a buyer written in 2026-04-17 with only email and full_name reads in 2025-09-29 as a valid Buyer, its first and last name taken from full_name", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }], currency: "usd", capabilities: {}, buyer: { email: "ada@example.com", full_name: "Ada King Lovelace" } });
    expect(created.status).toBe(201);
    const read25 = await send("GET", `${ACP}/${created.body.id}`, undefined, { version: "2025-09-29" });
    expect(read25.status).toBe(200);
    expect(errors25(read25.body)).toEqual([]);
    expect(read25.body.buyer).toEqual({ first_name: "Ada", last_name: "King Lovelace", email: "ada@example.com" });
    // the 2026-04-17 answer still shows the buyer as written
    expect((await send("GET", `${ACP}/${created.body.id}`)).body.buyer).toEqual({ email: "ada@example.com", full_name: "Ada King Lovelace" });
  }, 60_000);

  test("a buyer written in 2026-04-17 that is no 2025-09-29 Buyer even so (an email alone) is left out of a 2025-09-29 answer, which stays valid", async () => {
    const created = await send("POST", ACP, { line_items: [{ id: BOARD }], buyer: { email: "ada@example.com", full_name: "Ada" } });
    expect(created.status).toBe(201);
    const read25 = await send("GET", `${ACP}/${created.body.id}`, undefined, { version: null });
    expect(errors25(read25.body)).toEqual([]);
    expect("buyer" in read25.body).toBe(false);
    // the same buyer sent again in 2025-09-29 with its names is shown again
    const updated25 = await send("POST", `${ACP}/${created.body.id}`, { buyer: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" } }, { version: null });
    expect(updated25.body.buyer).toEqual({ first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" });
    expect(errors25(updated25.body)).toEqual([]);
  }, 60_000);

  test("a buyer kept without an email (2025-09-29 allows none to be checked here) is left out of a 2026-04-17 answer, whose Buyer requires one", async () => {
    const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer: { first_name: "Ada" } }, { version: "2025-09-29" });
    expect(created.body.buyer).toEqual({ first_name: "Ada" });
    const read26 = await send("GET", `${ACP}/${created.body.id}`);
    expect(errorsOf(session26, read26.body)).toEqual([]);
    expect("buyer" in read26.body).toBe(false);
  }, 60_000);
});
