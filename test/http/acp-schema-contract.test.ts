/**
 * Audit AD-1, AD-6, AD-7: real ACP answers validate against ACP 2025-09-29's published schema
 * (test/fixtures/acp-2025-09-29.schema.json, vendored; docs/protocols.md says the bridge follows it). A strict client
 * (generated types, schema validation) rejected every session answer: `null` for absent members, relative URLs, a
 * `continue_url` link type outside the Link enum, a payment provider outside its enum. Also: a replayed bridge
 * refusal carries `Idempotent-Replayed: true` (AD-6), and a session without an address at a single-method store
 * (demo-store) quotes its domestic default in `totals` and lists no option (AD-7, docs/protocols.md "Shipping").
 * Through HTTP against the real server, with real Postgres.
 *
 * ajv is the validator the MCP SDK (a dependency) brings; the 2020-12 build, with formats (uri, email, date-time).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import schema from "../fixtures/acp-2025-09-29.schema.json";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

type Res = { status: number; body: any; headers: Headers };

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(schema, "acp");
const sessionSchema = ajv.getSchema("acp#/$defs/CheckoutSession")!;
const orderSchema = ajv.getSchema("acp#/$defs/Order")!;
const errorSchema = ajv.getSchema("acp#/$defs/Error")!;

/**
 * The schema's errors for a session answer (none: valid). A completed session is a CheckoutSessionWithOrder:
 * `allOf` of CheckoutSessionBase and `{order}`, but this revision's Base is `additionalProperties: false` without
 * `order` among its properties, so no object satisfies the `allOf` literally (the later dated revisions list `order`
 * in the Base). What a client can check is the session without `order` against CheckoutSession and `order` against
 * Order, which is what this does.
 */
function sessionErrors(body: Record<string, unknown>): string[] {
  const { order, ...session } = body;
  const out: string[] = [];
  if (!sessionSchema(session)) out.push(...(sessionSchema.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
  if (order !== undefined && !orderSchema(order)) out.push(...(orderSchema.errors ?? []).map((e) => `/order${e.instancePath} ${e.message}`));
  return out;
}

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const BUYER = { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" };
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const pay = (token: string) => ({ payment_data: { token, provider: "stripe" } });

function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": "2025-09-29", ...headers }, ...(body === undefined ? {} : { body }) });
}

describe("ACP answers against ACP 2025-09-29's schema", () => {
  test("create without an address, update with buyer and address, and a read are valid sessions, with absolute links and no null members", async () => {
    const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(sessionErrors(created.body)).toEqual([]);
    for (const absent of ["buyer", "fulfillment_address", "fulfillment_option_id", "payment_provider"]) expect(absent in created.body).toBe(false);
    expect(created.body.links).toEqual([{ type: "terms_of_use", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/agent\/docs$/) }]);
    // AD-7: the single-method store's domestic default is quoted (ready, its cost in totals) and no option is listed
    expect(created.body.status).toBe("ready_for_payment");
    expect(created.body.fulfillment_options).toEqual([]);
    expect(created.body.totals.map((t: { type: string }) => t.type)).toContain("fulfillment");

    const updated = await send("POST", `${ACP}/${created.body.id}`, { buyer: BUYER, fulfillment_address: ADDRESS });
    expect(updated.status).toBe(200);
    expect(sessionErrors(updated.body)).toEqual([]);
    expect(updated.body).toMatchObject({ buyer: BUYER, fulfillment_address: ADDRESS, fulfillment_option_id: expect.any(String) });

    const read = await send("GET", `${ACP}/${created.body.id}`);
    expect(sessionErrors(read.body)).toEqual([]);
  }, 60_000);

  test("a complete that needs the buyer's approval is a valid in_progress session carrying the link in an info message; the approved complete is valid with an absolute permalink", async () => {
    const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer: BUYER, fulfillment_address: ADDRESS });
    expect(sessionErrors(created.body)).toEqual([]);
    const waiting = await send("POST", `${ACP}/${created.body.id}/complete`, pay("tok_needs_approval"));
    expect(waiting.status).toBe(200);
    expect(waiting.body.status).toBe("in_progress");
    expect(sessionErrors(waiting.body)).toEqual([]);
    const link = continueUrl(waiting);
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
    expect(waiting.body.messages).toContainEqual({ type: "info", content_type: "markdown", content: expect.stringContaining(`<${link}>`) });
    expect(waiting.body.links.map((l: { type: string }) => l.type)).toEqual(["terms_of_use"]);
    const read = await send("GET", `${ACP}/${created.body.id}`);
    expect(sessionErrors(read.body)).toEqual([]);
    expect(continueUrl(read)).toBe(link);

    expect((await decideAt(srv, link!, "approve")).status).toBe(200);
    const done = await send("POST", `${ACP}/${created.body.id}/complete`, pay("tok_needs_approval"));
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(sessionErrors(done.body)).toEqual([]);
    expect(done.body.order.permalink_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/api/v1/agent/orders/${done.body.order.id}$`));
  }, 60_000);

  test("a direct complete and a cancel are valid sessions", async () => {
    const a = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], fulfillment_address: ADDRESS });
    const paid = await send("POST", `${ACP}/${a.body.id}/complete`, pay("tok_approve"));
    expect(paid.body.status).toBe("completed");
    expect(sessionErrors(paid.body)).toEqual([]);

    const b = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const canceled = await send("POST", `${ACP}/${b.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe("canceled");
    expect(sessionErrors(canceled.body)).toEqual([]);
  }, 60_000);

  test("a refusal is ACP's Error plus our details, and its replay under the same Idempotency-Key says Idempotent-Replayed", async () => {
    const idem = { "idempotency-key": crypto.randomUUID() };
    const first = await send("POST", ACP, { items: [] }, idem);
    expect(first.status).toBe(400);
    const { details: _details, ...acpPart } = first.body;
    expect(errorSchema(acpPart)).toBe(true);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await send("POST", ACP, { items: [] }, idem);
    expect(again.status).toBe(400);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("api-version")).toBe("2025-09-29");
  }, 60_000);
});

describe("UCP order link", () => {
  test("a completed UCP checkout's permalink_url is absolute", async () => {
    const c = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const done = await send("POST", `${UCP}/${c.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } });
    expect(done.body.status).toBe("completed");
    expect(done.body.order.permalink_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/api/v1/agent/orders/${done.body.order.id}$`));
  }, 60_000);
});
