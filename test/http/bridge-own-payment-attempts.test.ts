/**
 * Audit B-6: whether the payment a session's cart waits on is the session's own is decided by recomputing its
 * intent ids for attempts 1..64 (gateway/bridge/index.ts OWN_INTENT_ATTEMPTS, `sessionsOwnIntent`), but a session's
 * attempts are unbounded: every declined or not-approved complete rolls back to READY_FOR_PAYMENT and the next one is
 * attempt n+1 (actors/cart/checkout-machine.ts). From the 65th attempt the session's own payment is taken for another
 * route's: after the buyer approves, the session reads `in_progress` with the "finish it through its route or cancel"
 * note (review R1-6's foreign case) instead of `ready_for_payment`, so a status-driven agent waits until the approval
 * hold expires and the buyer's approved purchase is lost. Now, past the attempts it recomputes, the bridge asks the cart
 * whether its checkout session is bound to another key (index.ts `boundToAnotherKey`): the session's own payment
 * always reads as its own.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

function send(method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": "2026-04-17", "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
const pay = (token: string) => ({ payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token } } } });

describe("ACP: a session's own payment after many declined attempts", () => {
  test("the 65th attempt, approved by the buyer, reads ready_for_payment and completes", async () => {
    const c = await send("POST", ACP, { line_items: [{ id: BOARD }], fulfillment_details: { address: ADDRESS } });
    expect(c.status).toBe(201);
    const id = c.body.id as string;
    await send("POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: c.body.fulfillment_options[0].id, item_ids: [] }] });
    for (let i = 0; i < 64; i++) {
      const declined = await send("POST", `${ACP}/${id}/complete`, pay("tok_decline"));
      expect(declined.status).toBe(402);
    }
    const waiting = await send("POST", `${ACP}/${id}/complete`, pay("tok_needs_approval"));
    expect(waiting.body.status).toBe("requires_escalation");
    expect((await decideAt(srv, waiting.body.continue_url, "approve")).status).toBe(200);

    const read = await send("GET", `${ACP}/${id}`);
    expect(read.body.status).toBe("ready_for_payment");
    const done = await send("POST", `${ACP}/${id}/complete`, pay("tok_needs_approval"));
    expect(done.body.status).toBe("completed");
  }, 120_000);
});
