/**
 * Helper F (session 22): an ACP or UCP complete that waits for the buyer's approval answers 200 with the link, and
 * that answer is stored under the request's Idempotency-Key like any finished one (docs/protocols.md "Idempotency").
 * The way on said "complete the session again" and nothing more: an agent that did so with the same key (the same
 * call, the same body) got the stored waiting answer replayed, after the buyer had approved, and the read told it
 * again to "complete the session again". The rollback texts already said "under a new Idempotency-Key"; the
 * approval's texts (the waiting message, the read's note once the buyer decided, an update refused meanwhile) say it
 * now too. Through HTTP against the real server, with the seeded demo data.
 */
import { describe, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

const NEW_KEY = "under a new Idempotency-Key";

const send = (k: TestKey, method: string, path: string, key: string, body?: unknown) =>
  srv.json(path, { method, headers: { ...k.headers, "idempotency-key": key }, ...(body === undefined ? {} : { body }) });

const infos = (body: any): string[] => ((body?.messages ?? []) as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => m.content);

describe("a bridged session waiting for the buyer's approval names a new Idempotency-Key for the next complete", () => {
  test("ACP: the waiting answer, the read after the buyer approved and a refused update say so, the same key replays the waiting answer, and a new key pays", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const created = await send(k, "POST", ACP, crypto.randomUUID(), { items: [{ id: BOARD, quantity: 1 }] });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const first = crypto.randomUUID();
    const pay = { payment_data: { token: "tok_needs_approval", provider: "stripe" } };

    const waiting = await send(k, "POST", `${ACP}/${id}/complete`, first, pay);
    expect(waiting.status).toBe(200);
    expect(waiting.body.status).toBe("in_progress");
    const link = continueUrl(waiting);
    expect(link).toBeDefined();
    expect(infos(waiting.body).join(" ")).toContain(`then complete the session again ${NEW_KEY}`);

    expect((await decideAt(srv, link!, "approve")).status).toBe(200);

    // the same key and body: the stored waiting answer, not the payment
    const again = await send(k, "POST", `${ACP}/${id}/complete`, first, pay);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.status).toBe("in_progress");

    const read = await srv.json(`${ACP}/${id}`, { headers: k.headers });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("ready_for_payment");
    expect(infos(read.body).join(" ")).toContain(NEW_KEY);

    const update = await send(k, "POST", `${ACP}/${id}`, crypto.randomUUID(), { buyer: { first_name: "Ada" } });
    expect(update.status).toBe(409);
    expect(update.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(update.body.message).toContain(NEW_KEY);

    const paid = await send(k, "POST", `${ACP}/${id}/complete`, crypto.randomUUID(), pay);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
    expect(typeof paid.body.order.id).toBe("string");
  });

  test("UCP: the read's buyer_decided note after the buyer approved says so, the same key replays the waiting answer, and a new key pays", async () => {
    const k = await createKey(srv, { scopes: ["cart", "checkout"] });
    const created = await send(k, "POST", UCP, crypto.randomUUID(), { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const first = crypto.randomUUID();
    const pay = { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_needs_approval" } }] } };

    const waiting = await send(k, "POST", `${UCP}/${id}/complete`, first, pay);
    expect(waiting.status).toBe(200);
    expect(waiting.body.status).toBe("requires_escalation");
    expect((await decideAt(srv, waiting.body.continue_url, "approve")).status).toBe(200);

    const again = await send(k, "POST", `${UCP}/${id}/complete`, first, pay);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.status).toBe("requires_escalation");

    const read = await srv.json(`${UCP}/${id}`, { headers: k.headers });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("ready_for_complete");
    const decided = (read.body.messages as { type: string; code: string; content: string }[]).find((m) => m.code === "buyer_decided");
    expect(decided?.content).toContain(NEW_KEY);

    const paid = await send(k, "POST", `${UCP}/${id}/complete`, crypto.randomUUID(), pay);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
  });
});
