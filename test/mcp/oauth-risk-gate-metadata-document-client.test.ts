/**
 * The risk gate dates a Client ID Metadata Document caller (review R2-1, on 9f5db0c + P-patch-2 / audit X-2). Such a
 * client (client_id = an https URL; the MCP 2025-11-25 default for clients that do not register) has no oauth_clients
 * row, and `identityCreatedAt` (gateway/mcp/tools/commerce.ts) used to date it "now" on every payment, as a deleted
 * client: a user who authorized it days ago was stepped up (NEW_KEY_HIGH_AMOUNT, 202 user_action_required in enforce
 * mode) on every payment above 250.00, for good. It is dated by the user's first authorization code for that
 * client_id now, as a registered client's grant is; one authorized minutes ago is still new (fail closed).
 * Needs /tmp/notes/P-patch-2.diff (the cart side) applied: on HEAD alone no OAuth caller is dated at all.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { codeFlowTokens, newVerifier } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, errorOf, structured } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95
const CALLBACK = "http://127.0.0.1:50597/cb";

let srv: TestServer;
let host: ReturnType<typeof Bun.serve>;
let docUrl = "";
let freshDocUrl = "";
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { SPEC005_KYAI_GATE_MODE: "enforce", RATE_LIMITS_ENABLED: false } });
  host = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => Response.json({ client_id: req.url, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
  });
  docUrl = `http://127.0.0.1:${host.port}/client.json`;
  freshDocUrl = `http://127.0.0.1:${host.port}/fresh-client.json`;
}, 120_000);
afterAll(async () => {
  host?.stop(true);
  await srv?.stop();
});

/** The admin consents now to the metadata-document client: an access token of a new authorization code. */
async function consentNow(clientId = docUrl): Promise<string> {
  return (await codeFlowTokens(srv, { clientId, redirectUri: CALLBACK, scope: "search cart checkout", verifier: newVerifier() })).access;
}

test("a user who first authorized a metadata-document client two hours ago pays above 250.00, as with a registered client", async () => {
  await consentNow();
  // the user's first authorization of this client two hours ago (what oauth-risk-gate-new-caller's age() does)
  await srv.db.sql`UPDATE oauth_codes SET created_at = created_at - interval '2 hours' WHERE client_id = ${docUrl}`;
  const token = await consentNow();
  const c = await connect(srv, { headers: { authorization: `Bearer ${token}` }, elicit: accept });
  try {
    const cart = structured(await c.call("create_cart", { items: [{ product_id: BOARD, quantity: 10 }] })); // 269.50
    const pv = structured(await c.call("preview_checkout", { cart_id: cart.cart_id }));
    const r = await c.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    const refused = r.isError ? errorOf(r) : null;
    expect({ code: refused?.code ?? null, rules: refused?.details?.rule_codes ?? null, status: structured(r)?.status }).toEqual({ code: null, rules: null, status: "COMPLETED" });
  } finally {
    await c.close();
  }
}, 60_000);

test("a user who authorized a metadata-document client minutes ago is stepped up above 250.00, as for a new registered client", async () => {
  const token = await consentNow(freshDocUrl);
  const c = await connect(srv, { headers: { authorization: `Bearer ${token}` }, elicit: accept });
  try {
    const cart = structured(await c.call("create_cart", { items: [{ product_id: BOARD, quantity: 10 }] })); // 269.50
    const pv = structured(await c.call("preview_checkout", { cart_id: cart.cart_id }));
    const r = await c.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    expect(r.isError).toBe(true);
    const refused = errorOf(r);
    expect({ code: refused?.code, rules: refused?.details?.rule_codes }).toEqual({ code: "user_action_required", rules: ["NEW_KEY_HIGH_AMOUNT"] });
  } finally {
    await c.close();
  }
}, 60_000);
