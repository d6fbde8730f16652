/**
 * Review R-3: ACP 2026-04-17's complete still reads 2025-09-29's `payment_data.token` when the request has no
 * `payment_data.instrument.credential.token` (acp-2026-04-17.ts `readToken`), but a refusal of that token was named
 * `$.payment_data.instrument.credential.token`, a member the request did not have (docs/protocols.md: a `param` is
 * always a member of the request sent; audit B-4). The token is now read with the member it came from, and a
 * refusal names that one.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
function send(method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": "2026-04-17", "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
async function readySession(): Promise<string> {
  const c = await send("POST", ACP, { line_items: [{ id: BOARD }], fulfillment_details: { address: ADDRESS } });
  expect(c.status).toBe(201);
  const id = c.body.id as string;
  const picked = await send("POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: c.body.fulfillment_options[0].id, item_ids: [] }] });
  expect(picked.body.status).toBe("ready_for_payment");
  return id;
}

describe("ACP 2026-04-17 complete: a refused token is named by the member the request sent it in", () => {
  test("a refused payment_data.token (the 2025-09-29 member, still read) is named $.payment_data.token, in the message too", async () => {
    const id = await readySession();
    const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { handler_id: "card", token: "tok_unknown" } });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.token");
    expect(r.body.message).toStartWith("payment_data.token is not a sandbox test token");
  });

  test("a payment_data.token that is not a string is named $.payment_data.token", async () => {
    const id = await readySession();
    const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { handler_id: "card", token: 42 } });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.token");
  });

  test("with both members the credential token is the one read, and named", async () => {
    const id = await readySession();
    const r = await send("POST", `${ACP}/${id}/complete`, {
      payment_data: { handler_id: "card", token: "tok_visa", instrument: { type: "card", credential: { type: "spt", token: "tok_unknown" } } },
    });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.instrument.credential.token");
  });

  test("a complete with neither member asks for the credential token", async () => {
    const id = await readySession();
    const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { handler_id: "card" } });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.instrument.credential.token");
  });
});
