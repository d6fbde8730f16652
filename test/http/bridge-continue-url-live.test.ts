/**
 * Review RA-3 (LOW): ACP and UCP session reads showed the `continue_url` stored on the session row, written only by
 * the best-effort write after a payment. A lost write kept showing the link of an earlier, refused payment; a session
 * left waiting across migration 0084 kept showing the tokenless link, which answers 404. Now a read builds the link
 * from the live state (the cart's pending orders and the processor's answer for their intent): the link of the
 * payment waiting now, or none. Through HTTP against the real server, with Postgres and the seeded demo data.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD, GREEN } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt, linkPath, storeOfLink } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

type Res = { status: number; body: any };

interface Bridge {
  name: "ACP" | "UCP";
  create: (k: TestKey) => Promise<Res>;
  complete: (k: TestKey, id: string) => Promise<Res>;
  /** A session of both demo stores (demo-store, greenleaf-living). */
  createTwo: (k: TestKey) => Promise<Res>;
  get: (k: TestKey, id: string) => Promise<Res>;
  /** The session's continue_url (ACP: the link of its approval info message). */
  linkOf: (r: Res) => string | undefined;
  waiting: string;
  /** The status of a session the agent may complete now. */
  ready: string;
  /** The session's info messages, as `code: content` (ACP messages carry no code: `info: content`). */
  infos: (r: Res) => string[];
  /** A refusal's code. */
  errorCode: (r: Res) => string;
  /** A buyer-only update. */
  update: (k: TestKey, id: string) => Promise<Res>;
  /** A refusal's code, message, details and kind (ACP `type`, UCP `severity`). */
  errorOf: (r: Res) => { code: string; message: string; details: Record<string, unknown>; kind: string };
}

const call = (k: TestKey, method: string, path: string, body?: unknown) => sendAs(srv, k, method, path, body);

const bridges: Bridge[] = [
  {
    name: "ACP",
    create: (k) => call(k, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] }),
    createTwo: (k) => call(k, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }, { id: GREEN, quantity: 1 }] }),
    complete: (k, id) => call(k, "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_needs_approval", provider: "stripe" } }),
    get: (k, id) => srv.json(`${ACP}/${id}`, { headers: k.headers }),
    linkOf: (r) => continueUrl(r),
    waiting: "in_progress",
    ready: "ready_for_payment",
    infos: (r) => (r.body.messages as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => `info: ${m.content}`),
    errorCode: (r) => r.body.code,
    update: (k, id) => call(k, "POST", `${ACP}/${id}`, { buyer: { first_name: "Ada" } }),
    errorOf: (r) => ({ code: r.body.code, message: r.body.message, details: r.body.details, kind: r.body.type }),
  },
  {
    name: "UCP",
    create: (k) => call(k, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }] }),
    createTwo: (k) => call(k, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }, { item: { id: GREEN }, quantity: 1 }] }),
    complete: (k, id) => call(k, "POST", `${UCP}/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_needs_approval" } }] } }),
    get: (k, id) => srv.json(`${UCP}/${id}`, { headers: k.headers }),
    linkOf: (r) => r.body.continue_url,
    waiting: "requires_escalation",
    ready: "ready_for_complete",
    infos: (r) => (r.body.messages as { type: string; code: string; content: string }[]).filter((m) => m.type === "info").map((m) => `${m.code}: ${m.content}`),
    errorCode: (r) => r.body.messages[0].code,
    update: (k, id) => call(k, "PUT", `${UCP}/${id}`, { buyer: { first_name: "Ada" } }),
    errorOf: (r) => ({ code: r.body.messages[0].code, message: r.body.messages[0].content, details: r.body.messages[0].details, kind: r.body.messages[0].severity }),
  },
];

/** The intent id in an approval link (`…/sandbox/payments/{intent}/{token}`). */
const intentOf = (link: string) => linkPath(link).split("/")[5]!;

/** From now on the session's own writes (the save after a payment) fail in the database; the claim still works. */
async function loseSessionWrites(id: string): Promise<() => Promise<void>> {
  const fn = `lose_${id.replace(/[^a-z0-9]/gi, "")}`;
  await srv.db.sql.unsafe(`
    CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.id = '${id}' AND NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        RAISE EXCEPTION 'simulated failure of the session write' USING ERRCODE = '08006';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER ${fn} BEFORE UPDATE ON bridge_sessions FOR EACH ROW EXECUTE FUNCTION ${fn}();`);
  return async () => {
    await srv.db.sql.unsafe(`DROP TRIGGER ${fn} ON bridge_sessions; DROP FUNCTION ${fn}();`);
  };
}

for (const b of bridges) {
  describe(`${b.name}: a read shows the approval link of the payment waiting now`, () => {
    test("after the buyer refused at the first link, a read shows no link, and after a new attempt whose session write was lost it shows the new attempt's link", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const id: string = (await b.create(k)).body.id;
      const first = await b.complete(k, id);
      expect(first.status).toBe(200);
      const a = b.linkOf(first)!;
      expect(a).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
      expect((await decideAt(srv, a, "reject")).status).toBe(200);
      // the refused payment's link is no longer shown: there is nothing left to decide at it
      const afterRefusal = await b.get(k, id);
      expect(afterRefusal.status).toBe(200);
      expect(b.linkOf(afterRefusal)).toBeUndefined();
      expect((await b.complete(k, id)).status).toBe(402);

      const restore = await loseSessionWrites(id);
      let second: Res;
      try {
        second = await b.complete(k, id);
      } finally {
        await restore();
      }
      expect(second.status).toBe(200);
      const bLink = b.linkOf(second)!;
      expect(intentOf(bLink)).not.toBe(intentOf(a));
      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      expect(read.body.status).toBe(b.waiting);
      expect(b.linkOf(read)).toBe(bLink);
      // and it is the link that decides that payment
      expect((await decideAt(srv, b.linkOf(read)!, "approve")).status).toBe(200);
      const done = await b.complete(k, id);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
    }, 90_000);

    test("a session left waiting across migration 0084 (tokenless intent and stored link) reads with a working link, the same on every read", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const id: string = (await b.create(k)).body.id;
      const waiting = await b.complete(k, id);
      expect(waiting.status).toBe(200);
      const intentId = intentOf(b.linkOf(waiting)!);
      // what a process before 0084 left behind: the intent without a token, the session's link without one
      const dead = `${new URL(b.linkOf(waiting)!).origin}/api/v1/sandbox/payments/${intentId}`;
      await srv.db.sql`UPDATE sandbox_ledger_intents SET approval_token = NULL WHERE intent_id = ${intentId}`;
      await srv.db.sql`UPDATE bridge_sessions SET meta = jsonb_set(meta, '{continue_url}', to_jsonb(${dead}::text)) WHERE id = ${id}`;

      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      const shown = b.linkOf(read)!;
      expect(shown).toMatch(new RegExp(`/api/v1/sandbox/payments/${intentId}/[0-9a-f]{64}$`));
      expect((await srv.fetch(linkPath(shown))).status).toBe(200);
      expect(b.linkOf(await b.get(k, id))).toBe(shown);
      expect((await decideAt(srv, shown, "approve")).status).toBe(200);
      expect((await b.complete(k, id)).body.status).toBe("completed");
    }, 90_000);
  });
}

/** What a session whose buyer decided everything, before the agent completes again, says (review RD-1). */
const DECIDED = "The buyer has decided at the approval link; complete the session again under a new Idempotency-Key to finish the payment (the same key replays the earlier answer; a refusal is then answered as the payment's refusal).";

for (const b of bridges) {
  const decidedNote = b.name === "UCP" ? `buyer_decided: ${DECIDED}` : `info: ${DECIDED}`;
  describe(`${b.name}: a read after the buyer decided and before the agent completes again (review RD-1)`, () => {
    for (const decision of ["approve", "reject"] as const) {
      test(`after the buyer chose ${decision} at the link, a read is ${b.ready} with no link and a message to complete again, and the next complete ${decision === "approve" ? "pays" : "is the refusal"}`, async () => {
        const k = await createKey(srv, { scopes: ALL_SCOPES });
        const id: string = (await b.create(k)).body.id;
        const waiting = await b.complete(k, id);
        expect(waiting.status).toBe(200);
        expect(waiting.body.status).toBe(b.waiting);
        const link = b.linkOf(waiting)!;
        expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
        const before = await b.get(k, id);
        expect(before.status).toBe(200);
        expect(before.body.status).toBe(b.waiting);
        expect(b.linkOf(before)).toBe(link);
        expect(b.infos(before)).not.toContain(decidedNote);

        expect((await decideAt(srv, link, decision)).status).toBe(200);
        for (let i = 0; i < 2; i++) {
          const read = await b.get(k, id);
          expect(read.status).toBe(200);
          expect(read.body.status).toBe(b.ready);
          expect(b.linkOf(read)).toBeUndefined();
          if (b.name === "UCP") expect("continue_url" in read.body).toBe(false);
          else expect(continueUrl(read)).toBeUndefined();
          expect(b.infos(read)).toEqual([decidedNote]);
        }
        // an update is still refused until that complete, and says so (not "waits for the buyer's approval")
        const update = await b.update(k, id);
        expect(update.status).toBe(409);
        const err = b.errorOf(update);
        expect(err.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
        expect(err.kind).toBe(b.name === "UCP" ? "recoverable" : "request_not_idempotent");
        expect(err.message).toBe("The buyer has decided at the approval link; complete the session again under a new Idempotency-Key (it finishes the payment or answers its refusal) before changing it.");
        expect(err.details).toMatchObject({ reason: "payment_in_progress", status: "PENDING_EXTERNAL_CONFIRMATION", buyer_decided: true, checkout_session_id: id });

        const again = await b.complete(k, id);
        if (decision === "approve") {
          expect(again.status).toBe(200);
          expect(again.body.status).toBe("completed");
          expect(typeof again.body.order.id).toBe("string");
          const [order] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${again.body.order.id}::uuid`;
          expect(order!.status).toBe("paid");
        } else {
          expect(again.status).toBe(402);
          expect(b.errorCode(again)).toBe("PAYMENT_NOT_APPROVED");
          const after = await b.get(k, id);
          expect(after.status).toBe(200);
          expect(after.body.status).toBe(b.ready);
          expect(b.linkOf(after)).toBeUndefined();
          expect(b.infos(after)).toEqual([]); // the refusal ended the attempt: nothing was decided that awaits a complete
        }
      }, 90_000);
    }

    test("with two stores waiting, a read shows the undecided store's link until both are decided, then reads ready with the message, and the next complete pays both", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.createTwo(k);
      expect(created.status).toBe(201);
      const id: string = created.body.id;
      const waiting = await b.complete(k, id);
      expect(waiting.status).toBe(200);
      const first = b.linkOf(waiting)!;
      expect((await decideAt(srv, first, "approve")).status).toBe(200);
      const half = await b.get(k, id);
      expect(half.status).toBe(200);
      expect(half.body.status).toBe(b.waiting);
      const second = b.linkOf(half)!;
      expect(second).toMatch(/\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
      expect(await storeOfLink(srv, second)).not.toBe(await storeOfLink(srv, first));
      expect(b.infos(half)).not.toContain(decidedNote);
      expect((await decideAt(srv, second, "approve")).status).toBe(200);
      const decided = await b.get(k, id);
      expect(decided.status).toBe(200);
      expect(decided.body.status).toBe(b.ready);
      expect(b.linkOf(decided)).toBeUndefined();
      expect(b.infos(decided)).toEqual([decidedNote]);
      const done = await b.complete(k, id);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
      const orders = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE agent_key_id = ${k.id} ORDER BY store_slug`;
      expect(orders.map((o) => o.status)).toEqual(["paid", "paid"]);
    }, 90_000);
  });
}
