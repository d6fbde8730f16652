/**
 * The lease on a bridge Idempotency-Key claim (gateway/bridge/common.ts withIdempotency, migration 0063): a claim
 * its request never filled in (a crash, a failed final write) holds only for BRIDGE_IDEMPOTENCY_LEASE_MS (shortened
 * here); then the same key and body take it over and run again, and the cart's own session idempotency answers for
 * a payment already made. Faults are injected in the scratch database (a trigger, or the row a dead request leaves).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { requestHash } from "../../gateway/bridge/common.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95, untracked stock
const LEASE_MS = 1500;

const srv = useServer({ seed: true, config: { BRIDGE_IDEMPOTENCY_LEASE_MS: LEASE_MS } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent${path}`, { method: "POST", headers: { ...key.headers, ...headers }, body });
const ordersOfSession = async (sessionId: string) =>
  (await srv.db.sql<{ id: string; status: string }[]>`
    SELECT o.id, o.status FROM orders o JOIN bridge_sessions s ON s.cart_id = o.cart_id WHERE s.id = ${sessionId}`).map((r) => ({ ...r }));
const recordOf = async (idemKey: string) =>
  (await srv.db.sql<{ status: number | null }[]>`SELECT status FROM bridge_idempotency WHERE key = ${idemKey}`)[0];

/** The row a request leaves when it dies after claiming `idemKey` for this request (its lease already over). */
async function deadClaim(protocol: "acp" | "ucp", path: string, body: unknown, idemKey: string): Promise<void> {
  await srv.db.sql`
    INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, claim_id, claimed_until)
    VALUES (${protocol}, ${key.id}, ${idemKey}, ${requestHash("POST", `/api/v1/agent${path}`, body)}, ${crypto.randomUUID()}, now() - interval '1 second')`;
}

const ACP_PAY = { payment_data: { token: "tok_approve", provider: "stripe" } };
const UCP_PAY = { payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] } };

describe("bridge Idempotency-Key lease", () => {
  test("a completion whose record could not be written answers the paid order, is 409 within the lease and answers the same order after it", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    expect(created.status).toBe(201);
    const idem = { "Idempotency-Key": crypto.randomUUID() };
    const path = `/acp/checkout_sessions/${created.body.id}/complete`;
    // Only the final write of the answer fails (the claim and its takeover are left alone), standing in for a lost
    // connection or a crash at that point.
    await srv.db.sql.unsafe(`
      CREATE FUNCTION h_fail_record() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault at the idempotency record'; END $$;
      CREATE TRIGGER h_fail_record BEFORE UPDATE ON bridge_idempotency FOR EACH ROW WHEN (NEW.status IS NOT NULL) EXECUTE FUNCTION h_fail_record();`);
    let first;
    try {
      first = await post(path, ACP_PAY, idem);
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER h_fail_record ON bridge_idempotency; DROP FUNCTION h_fail_record();`);
    }
    // The work is done, so its answer goes back although it could not be recorded.
    expect(first.status).toBe(200);
    expect(first.body.status).toBe("completed");
    const orderId = first.body.order.id as string;
    expect(await ordersOfSession(created.body.id)).toEqual([{ id: orderId, status: "paid" }]);
    expect((await recordOf(idem["Idempotency-Key"]))?.status).toBeNull();

    const within = await post(path, ACP_PAY, idem);
    expect(within.status).toBe(409);
    expect(within.body).toMatchObject({ type: "request_not_idempotent", code: "CHECKOUT_ALREADY_IN_PROGRESS" });

    await Bun.sleep(LEASE_MS + 300);
    const after = await post(path, ACP_PAY, idem);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ status: "completed", order: { id: orderId, checkout_session_id: created.body.id } });
    expect(await ordersOfSession(created.body.id)).toEqual([{ id: orderId, status: "paid" }]);
    expect((await recordOf(idem["Idempotency-Key"]))?.status).toBe(200);

    const replay = await post(path, ACP_PAY, idem);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.order.id).toBe(orderId);
  });

  test("a claim left by a request that died after paying is taken over after its lease and answers the paid order, charging once", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const path = `/acp/checkout_sessions/${created.body.id}/complete`;
    const paid = await post(path, ACP_PAY); // the dead request's payment went through; its answer was lost
    expect(paid.status).toBe(200);
    const idemKey = crypto.randomUUID();
    await deadClaim("acp", path, ACP_PAY, idemKey);
    const retry = await post(path, ACP_PAY, { "Idempotency-Key": idemKey });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ status: "completed", order: { id: paid.body.order.id } });
    expect(await ordersOfSession(created.body.id)).toEqual([{ id: paid.body.order.id, status: "paid" }]);
    expect((await recordOf(idemKey))?.status).toBe(200);
  });

  test("a UCP claim left by a request that died before its work is taken over after its lease and pays once", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }], currency: "USD" });
    expect(created.status).toBe(201);
    const path = `/ucp/checkout-sessions/${created.body.id}/complete`;
    const idemKey = crypto.randomUUID();
    await deadClaim("ucp", path, UCP_PAY, idemKey);
    const retry = await post(path, UCP_PAY, { "Idempotency-Key": idemKey });
    expect(retry.status).toBe(200);
    expect(retry.body.status).toBe("completed");
    expect(await ordersOfSession(created.body.id)).toEqual([{ id: retry.body.order.id, status: "paid" }]);
    const again = await post(path, UCP_PAY, { "Idempotency-Key": idemKey });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.order.id).toBe(retry.body.order.id);
  });

  test("a request overtaken after its lease cannot delete its successor's record: the next retry is a replay", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const id = created.body.id as string;
    expect(id).toMatch(/^cs_[0-9a-f]{32}$/);
    const idem = { "Idempotency-Key": crypto.randomUUID() };
    const path = `/acp/checkout_sessions/${id}/complete`;
    // The first request pays, then stalls past its lease saving the session and fails there (a retryable error, so
    // it gives its claim back). A sequence, not a row, counts the calls: an aborted statement rolls its writes back.
    await srv.db.sql.unsafe(`
      CREATE SEQUENCE h_stall_once;
      CREATE FUNCTION h_stall() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF nextval('h_stall_once') = 1 THEN PERFORM pg_sleep(${(LEASE_MS + 1000) / 1000}); RAISE EXCEPTION 'injected stall'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER h_stall BEFORE INSERT OR UPDATE ON bridge_sessions FOR EACH ROW WHEN (NEW.id = '${id}') EXECUTE FUNCTION h_stall();`);
    try {
      const slow = post(path, ACP_PAY, idem);
      await Bun.sleep(LEASE_MS + 300);
      const successor = await post(path, ACP_PAY, idem); // takes the claim over; the cart answers with the order
      expect(successor.status).toBe(200);
      expect(successor.body.status).toBe("completed");
      expect((await slow).status).toBe(500); // the injected database error
      const replay = await post(path, ACP_PAY, idem);
      expect(replay.status).toBe(200);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.body.order.id).toBe(successor.body.order.id);
      expect(await ordersOfSession(id)).toEqual([{ id: successor.body.order.id, status: "paid" }]);
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER h_stall ON bridge_sessions; DROP FUNCTION h_stall(); DROP SEQUENCE h_stall_once;`);
    }
  });

  test("a claim whose lease ran out is not taken over by the same key with another request: 409 IDEMPOTENCY_KEY_CONFLICT", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const path = `/acp/checkout_sessions/${created.body.id}/complete`;
    const idemKey = crypto.randomUUID();
    await deadClaim("acp", path, ACP_PAY, idemKey);
    const other = await post(path, { payment_data: { token: "MOCK", provider: "stripe" } }, { "Idempotency-Key": idemKey });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT" });
    expect(await ordersOfSession(created.body.id)).toEqual([]);
  });
});
