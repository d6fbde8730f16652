/**
 * The ACP/UCP bridges check a request's input before they do any cart or payment work (audit F-1 … F-5). A value the
 * session cannot keep (a NUL byte, a lone surrogate) used to be found by the session's save, after the work: a
 * complete charged the buyer and answered 400, an update had already abandoned the session's cart or re-priced its
 * shipping, a create left a priced cart behind. A buyer of any JSON type was stored and echoed, and a UCP
 * `fulfillment` of the wrong shape was read as "no destination", erasing the session's while its cart kept charging
 * for it. Now each is 400 INVALID_ARGUMENT in the protocol's error shape naming the field, with nothing changed,
 * charged or left behind; and a session write after a payment that fails anyway never replaces the payment's answer.
 * Through HTTP against the real server, with real Postgres.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const send = (method: string, path: string, body?: unknown): Promise<Res> => sendAs(srv, key, method, path, body);
const get = (path: string): Promise<Res> => srv.json(path, { headers: key.headers });

const ACP_PAY = { payment_data: { token: "tok_approve", provider: "stripe" } };
const UCP_PAY = { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } };
const US = { name: "Ada", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94105" };
const CA = { name: "Ada", line_one: "1 King St W", city: "Toronto", state: "ON", country: "CA", postal_code: "M5V 2T6" };
const ucpDest = (a: typeof US) => ({ methods: [{ type: "shipping", destinations: [{ id: "home", address_country: a.country, postal_code: a.postal_code }] }] });

/** ACP's error object for INVALID_ARGUMENT on `field`. */
const acpRefusal = (field: string) => ({ type: "invalid_request", code: "INVALID_ARGUMENT", param: `$.${field}` });
/** UCP's error message for INVALID_ARGUMENT on `field`. */
const ucpRefusal = (field: string) => ({ type: "error", code: "INVALID_ARGUMENT", path: `$.${field}`, severity: "requires_buyer_input" });

const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;
const sessions = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM bridge_sessions`)[0]!.n;
const sessionRow = async (id: string) =>
  (await srv.db.sql<{ cart_id: string; meta: any }[]>`SELECT cart_id::text AS cart_id, meta FROM bridge_sessions WHERE id = ${id}`)[0]!;
const cartState = async (cartId: string) =>
  (await srv.db.sql<{ status: string; shipping: any }[]>`SELECT state->'cart'->>'status' AS status, state->'cart'->'shipping' AS shipping FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]!;
/** Orders of the cart and the sandbox captures behind them (money moved). */
async function moneyOf(cartId: string): Promise<{ orders: number; captures: number }> {
  const [o] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cartId}`;
  const [c] = await srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE state = 'captured' AND intent_id IN (SELECT intent_id FROM orders WHERE cart_id = ${cartId})`;
  return { orders: o!.n, captures: c!.n };
}
const amount = (totals: { type: string; amount: number }[], type: string) => totals.find((t) => t.type === type)?.amount;

describe("ACP complete with a buyer the session cannot keep (F-1)", () => {
  for (const [what, first_name] of [
    ["a NUL byte", "a\u0000b"],
    ["a lone surrogate", "a\ud800b"],
  ] as const) {
    test(`${what} in buyer.first_name is 400 INVALID_ARGUMENT naming it, and nothing is charged`, async () => {
      const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
      expect(created.status).toBe(201);
      const id = created.body.id;
      const { cart_id } = await sessionRow(id);
      const r = await send("POST", `${ACP}/${id}/complete`, { ...ACP_PAY, buyer: { first_name, email: "a@b.co" } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(acpRefusal("buyer.first_name"));
      expect(await moneyOf(cart_id)).toEqual({ orders: 0, captures: 0 });
      expect((await cartState(cart_id)).status).not.toBe("COMPLETED");
      const read = await get(`${ACP}/${id}`);
      expect(read.body.status).toBe("ready_for_payment");
      expect(read.body.buyer).toBeUndefined(); // no buyer kept: ACP's schema has the member left out, never null
      expect(read.body.order).toBeUndefined();
      // the session is still payable, once
      const paid = await send("POST", `${ACP}/${id}/complete`, { ...ACP_PAY, buyer: { first_name: "Ada", email: "a@b.co" } });
      expect(paid.status).toBe(200);
      expect(paid.body).toMatchObject({ status: "completed", buyer: { first_name: "Ada", email: "a@b.co" } });
      expect(await moneyOf(cart_id)).toEqual({ orders: 1, captures: 1 });
    }, 60_000);
  }

  test("a NUL byte in buyer with an approval token leaves the payment unstarted, so a valid complete still gets its approval link", async () => {
    const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = created.body.id;
    const { cart_id } = await sessionRow(id);
    const approval = { payment_data: { token: "tok_needs_approval", provider: "stripe" } };
    const r = await send("POST", `${ACP}/${id}/complete`, { ...approval, buyer: { first_name: "a\u0000b" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("buyer.first_name"));
    expect(await moneyOf(cart_id)).toEqual({ orders: 0, captures: 0 });
    const ok = await send("POST", `${ACP}/${id}/complete`, approval);
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe("in_progress");
    const link = continueUrl(ok);
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
    expect(continueUrl(await get(`${ACP}/${id}`))).toBe(link);
    // the link decides the payment (review RA-5): approved there, the next complete pays
    expect((await decideAt(srv, link!, "approve")).status).toBe(200);
    expect((await send("POST", `${ACP}/${id}/complete`, approval)).body.status).toBe("completed");
  }, 60_000);
});

describe("ACP/UCP updates refused for their input change nothing (F-2)", () => {
  test("an ACP items update with a NUL byte in buyer keeps the session's cart open and payable", async () => {
    const id = (await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] })).body.id;
    const before = await sessionRow(id);
    const cartsBefore = await carts();
    const r = await send("POST", `${ACP}/${id}`, { items: [{ id: BOARD, quantity: 2 }], buyer: { first_name: "a\u0000b", email: "a@b.co" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("buyer.first_name"));
    expect(await carts()).toBe(cartsBefore);
    const after = await sessionRow(id);
    expect(after).toEqual(before);
    expect((await cartState(before.cart_id)).status).not.toBe("ABANDONED");
    const paid = await send("POST", `${ACP}/${id}/complete`, ACP_PAY);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
    expect(paid.body.line_items.map((l: { item: { quantity: number } }) => l.item.quantity)).toEqual([1]);
  }, 60_000);

  test("an ACP address update with a NUL byte in buyer leaves the cart's shipping and the session's address as they were", async () => {
    const created = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], fulfillment_address: US });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const before = await sessionRow(id);
    const shippingBefore = (await cartState(before.cart_id)).shipping;
    const r = await send("POST", `${ACP}/${id}`, { fulfillment_address: CA, buyer: { first_name: "a\u0000b" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("buyer.first_name"));
    expect((await cartState(before.cart_id)).shipping).toEqual(shippingBefore);
    expect(await sessionRow(id)).toEqual(before);
    const read = await get(`${ACP}/${id}`);
    expect(read.body.fulfillment_address).toEqual(US);
    expect(amount(read.body.totals, "fulfillment")).toBe(amount(created.body.totals, "fulfillment"));
  }, 60_000);

  test("a UCP line_items update with a NUL byte in buyer keeps the session's cart open and payable", async () => {
    const id = (await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] })).body.id;
    const before = await sessionRow(id);
    const cartsBefore = await carts();
    const r = await send("PUT", `${UCP}/${id}`, { line_items: [{ item: { id: BOARD }, quantity: 2 }], buyer: { email: "a\u0000@b.co" } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject(ucpRefusal("buyer.email"));
    expect(await carts()).toBe(cartsBefore);
    expect(await sessionRow(id)).toEqual(before);
    const paid = await send("POST", `${UCP}/${id}/complete`, UCP_PAY);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
  }, 60_000);
});

describe("ACP/UCP creates refused for their input leave no cart behind (F-3)", () => {
  const cases: [string, string, unknown, string][] = [
    ["an ACP buyer string with a NUL byte", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer: "a\u0000b" }, "buyer"],
    ["an ACP postal code with a NUL byte", ACP, { items: [{ id: BOARD, quantity: 1 }], fulfillment_address: { ...US, postal_code: "9\u00004105" } }, "fulfillment_address.postal_code"],
    ["a UCP buyer email with a NUL byte", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], buyer: { email: "a\u0000@b.co" } }, "buyer.email"],
    ["a UCP postal code with a lone surrogate", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], fulfillment: { methods: [{ destinations: [{ address_country: "US", postal_code: "941\udc0005" }] }] } }, "fulfillment.methods[0].destinations[0].postal_code"],
  ];
  for (const [what, path, body, field] of cases) {
    test(`${what} is 400 INVALID_ARGUMENT naming ${field}, with no cart and no session made`, async () => {
      const [c, s] = [await carts(), await sessions()];
      const r = await send("POST", path, body);
      expect(r.status).toBe(400);
      if (path === ACP) expect(r.body).toMatchObject(acpRefusal(field));
      else expect(r.body.messages[0]).toMatchObject(ucpRefusal(field));
      expect([await carts(), await sessions()]).toEqual([c, s]);
    }, 60_000);
  }

  test("a member name with a NUL byte is 400 INVALID_ARGUMENT naming the object that holds it, not echoing the name", async () => {
    const c = await carts();
    const r = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer: { "first\u0000name": "Ada" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ...acpRefusal("buyer"), message: "buyer has a member name that must not contain a NUL byte." });
    expect(await carts()).toBe(c);
  }, 60_000);

  test("a create whose pricing is refused after its cart was made discards that cart", async () => {
    const c = await carts();
    const r = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], fulfillment_address: US, fulfillment_option_id: crypto.randomUUID() });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("fulfillment_option_id"));
    expect(await carts()).toBe(c + 1); // the cart was made, then
    const [made] = await srv.db.sql<{ status: string }[]>`
      SELECT state->'cart'->>'status' AS status FROM actor_state WHERE kind = 'cart' ORDER BY updated_at DESC LIMIT 1`;
    expect(made!.status).toBe("ABANDONED"); // discarded, not left priced in CHECKOUT
  }, 60_000);
});

describe("a buyer must be the protocol's Buyer object (F-4)", () => {
  const bad: [string, unknown, string][] = [
    ["a number", 42, "buyer"],
    ["a string", "x", "buyer"],
    ["an array", [1, 2], "buyer"],
    ["an object whose first_name is a number", { first_name: 42, email: "a@b.co" }, "buyer.first_name"],
    ["an object whose email is not an address", { email: "not-an-email" }, "buyer.email"],
    ["an object with a 100,000-character name", { first_name: "a".repeat(100_000) }, "buyer.first_name"],
  ];
  for (const [what, buyer, field] of bad) {
    test(`ACP: ${what} is 400 INVALID_ARGUMENT on $.${field} and makes no cart`, async () => {
      const c = await carts();
      const r = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(acpRefusal(field));
      expect(JSON.stringify(r.body).length).toBeLessThan(2_000);
      expect(await carts()).toBe(c);
    }, 60_000);
    test(`UCP: ${what} is 400 INVALID_ARGUMENT on $.${field} and makes no cart`, async () => {
      const c = await carts();
      const r = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], buyer });
      expect(r.status).toBe(400);
      expect(r.body.messages[0]).toMatchObject(ucpRefusal(field));
      expect(await carts()).toBe(c);
    }, 60_000);
  }

  test("ACP: a member its Buyer does not have is 400 INVALID_ARGUMENT (ACP's Buyer allows no other) and makes no cart", async () => {
    const c = await carts();
    const r = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer: { nickname: "x" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("buyer.nickname"));
    expect(r.body.message).toContain("ACP 2025-09-29's Buyer allows no other");
    expect(await carts()).toBe(c);
  }, 60_000);

  test("ACP and UCP keep and echo a valid buyer; null is no buyer", async () => {
    const buyer = { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com", phone_number: "+15555550100" };
    const a = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer });
    expect(a.status).toBe(201);
    expect(a.body.buyer).toEqual(buyer);
    expect((await get(`${ACP}/${a.body.id}`)).body.buyer).toEqual(buyer);
    const u = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], buyer: { ...buyer, full_name: "Ada Lovelace" } });
    expect(u.status).toBe(201);
    expect(u.body.buyer).toEqual({ ...buyer, full_name: "Ada Lovelace" });
    const cleared = await send("POST", `${ACP}/${a.body.id}`, { buyer: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.buyer).toBeUndefined(); // cleared: left out, as ACP's schema allows (never null)
  }, 60_000);

  test("an ACP update with a buyer of the wrong type is refused and keeps the buyer it had", async () => {
    const buyer = { first_name: "Ada", email: "ada@example.com" };
    const id = (await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }], buyer })).body.id;
    const r = await send("POST", `${ACP}/${id}`, { buyer: 42 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(acpRefusal("buyer"));
    expect((await get(`${ACP}/${id}`)).body.buyer).toEqual(buyer);
  }, 60_000);
});

describe("a UCP fulfillment must have UCP's shape (F-5)", () => {
  const bad: [string, unknown, string][] = [
    ["a string", "x", "fulfillment"],
    ["a number", 42, "fulfillment"],
    ["methods that is not an array", { methods: true }, "fulfillment.methods"],
    ["an empty methods array", { methods: [] }, "fulfillment.methods"],
    ["a method that is not an object", { methods: ["shipping"] }, "fulfillment.methods[0]"],
    ["destinations that is not an array", { methods: [{ destinations: "x" }] }, "fulfillment.methods[0].destinations"],
    ["a destination that is not an object", { methods: [{ destinations: [7] }] }, "fulfillment.methods[0].destinations[0]"],
    ["groups that is not an array", { methods: [{ groups: {} }] }, "fulfillment.methods[0].groups"],
  ];
  for (const [what, fulfillment, field] of bad) {
    test(`a create with ${what} is 400 INVALID_ARGUMENT on $.${field} and makes no cart`, async () => {
      const c = await carts();
      const r = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], fulfillment });
      expect(r.status).toBe(400);
      expect(r.body.messages[0]).toMatchObject(ucpRefusal(field));
      expect(await carts()).toBe(c);
    }, 60_000);
  }

  test("an update with fulfillment 42 is refused and keeps the destination and the shipping the cart charges", async () => {
    const created = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], fulfillment: ucpDest(CA) });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const before = await sessionRow(id);
    const r = await send("PUT", `${UCP}/${id}`, { fulfillment: 42 });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject(ucpRefusal("fulfillment"));
    expect(await sessionRow(id)).toEqual(before);
    const read = await get(`${UCP}/${id}`);
    expect(read.body.fulfillment.methods[0].destinations).toEqual([{ id: "dest_1", address_country: "CA", postal_code: "M5V 2T6" }]);
    expect(amount(read.body.totals, "fulfillment")).toBe(amount(created.body.totals, "fulfillment"));
  }, 60_000);

  test("an update whose fulfillment names no destination (only groups) keeps the session's destination", async () => {
    const created = await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }], fulfillment: ucpDest(CA) });
    const id = created.body.id;
    const r = await send("PUT", `${UCP}/${id}`, { fulfillment: { methods: [{ type: "shipping", groups: [] }] } });
    expect(r.status).toBe(200);
    expect(r.body.fulfillment.methods[0].destinations).toEqual([{ id: "dest_1", address_country: "CA", postal_code: "M5V 2T6" }]);
    expect(amount(r.body.totals, "fulfillment")).toBe(amount(created.body.totals, "fulfillment"));
    const { meta } = await sessionRow(id);
    expect(meta.shipping.destination).toEqual({ country_code: "CA", postal_code: "M5V 2T6" });
  }, 60_000);
});

describe("a session write that fails after the payment does not replace the payment's answer (F-1, defence in depth)", () => {
  /** Makes the database refuse (as for a NUL byte: 22P05) every write of `id`'s row that records a payment's outcome. */
  async function refuseOutcomeWrites(id: string): Promise<() => Promise<void>> {
    const fn = `refuse_${id.replace(/[^a-z0-9]/gi, "")}`;
    await srv.db.sql.unsafe(`
      CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = '${id}' AND (NEW.meta ? 'order' OR NEW.meta ? 'continue_url') THEN
          RAISE EXCEPTION 'unsupported Unicode escape sequence' USING ERRCODE = '22P05';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER ${fn} BEFORE UPDATE ON bridge_sessions FOR EACH ROW EXECUTE FUNCTION ${fn}();`);
    return async () => {
      await srv.db.sql.unsafe(`DROP TRIGGER ${fn} ON bridge_sessions; DROP FUNCTION ${fn}();`);
    };
  }

  test("ACP: the complete answers 200 completed with its order, and a read finds the order from the cart", async () => {
    const id = (await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] })).body.id;
    const { cart_id } = await sessionRow(id);
    const undo = await refuseOutcomeWrites(id);
    try {
      const r = await send("POST", `${ACP}/${id}/complete`, ACP_PAY);
      expect(r.status).toBe(200);
      expect(r.body.status).toBe("completed");
      expect(typeof r.body.order?.id).toBe("string");
      expect(await moneyOf(cart_id)).toEqual({ orders: 1, captures: 1 });
      expect((await sessionRow(id)).meta.order).toBeUndefined(); // the write was refused
      const read = await get(`${ACP}/${id}`);
      expect(read.body).toMatchObject({ status: "completed", order: { id: r.body.order.id } });
    } finally {
      await undo();
    }
  }, 60_000);

  test("UCP: the complete answers 200 completed with its order", async () => {
    const id = (await send("POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] })).body.id;
    const { cart_id } = await sessionRow(id);
    const undo = await refuseOutcomeWrites(id);
    try {
      const r = await send("POST", `${UCP}/${id}/complete`, UCP_PAY);
      expect(r.status).toBe(200);
      expect(r.body.status).toBe("completed");
      expect(typeof r.body.order?.id).toBe("string");
      expect(await moneyOf(cart_id)).toEqual({ orders: 1, captures: 1 });
    } finally {
      await undo();
    }
  }, 60_000);

  test("ACP: a payment waiting for the buyer answers in_progress with the approval link", async () => {
    const id = (await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] })).body.id;
    const undo = await refuseOutcomeWrites(id);
    try {
      const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_needs_approval", provider: "stripe" } });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe("in_progress");
      const link = continueUrl(r)!;
      expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
      // the link the answer carries decides the payment (review RA-5)
      expect((await decideAt(srv, link, "approve")).status).toBe(200);
    } finally {
      await undo();
    }
  }, 60_000);
});
