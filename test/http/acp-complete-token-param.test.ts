/**
 * Audit B-4: ACP's Error `param` is a JSONPath into the request the client sent. A complete whose token is not
 * one the sandbox takes is refused 400 with `param: "$.payment_method"` in both versions: our REST checkout's member,
 * which no ACP complete request has. 2026-04-17 names the token `payment_data.instrument.credential.token`
 * (2025-09-29 `payment_data.token`); a client mapping `param` onto its request finds nothing. The bridge renames
 * item fields (ItemFields) and shipping fields (`fields`) this way already; the token was left out. Now the token's
 * member is one of each version's (and UCP's) `fields`, and a refused token names it, in `param` and in the message.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
function send(version: string, method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...key.headers, "api-version": version, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
async function readySession(): Promise<string> {
  const c = await send("2026-04-17", "POST", ACP, { line_items: [{ id: BOARD }], fulfillment_details: { address: ADDRESS } });
  expect(c.status).toBe(201);
  const id = c.body.id as string;
  const option = c.body.fulfillment_options[0].id as string;
  const picked = await send("2026-04-17", "POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: option, item_ids: [] }] });
  expect(picked.body.status).toBe("ready_for_payment");
  return id;
}

describe("ACP and UCP complete: a refused token is named by the request's own member", () => {
  test("in 2026-04-17 the param is $.payment_data.instrument.credential.token", async () => {
    const id = await readySession();
    const r = await send("2026-04-17", "POST", `${ACP}/${id}/complete`, { payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token: "tok_unknown" } } } });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.instrument.credential.token");
  });

  test("in 2025-09-29 the param is $.payment_data.token, in the message too", async () => {
    const id = await readySession();
    const r = await send("2025-09-29", "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_unknown", provider: "stripe" } });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.payment_data.token");
    expect(r.body.message).toStartWith("payment_data.token is not a sandbox test token");
  });

  test("in UCP the path is $.payment.instruments[0].credential.token", async () => {
    const c = await send("2026-04-17", "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const r = await send("2026-04-17", "POST", `${UCP}/${c.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_unknown" } }] } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0].path).toBe("$.payment.instruments[0].credential.token");
  });
});
