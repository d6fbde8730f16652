/**
 * Review RV-4 (regression; fixed by 89f2b49): the question a resume asks names the amount the resume captures. A
 * payment the buyer approved at the provider is resumed with the leg amounts fixed when its attempt started, so when
 * the merchant changes the price meanwhile, "Pay …" must name the started amount, not the live price (90690a1 asked
 * "Pay 25.49 USD" and captured 43.99).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { DEST, SUMMIT, summitProduct } from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, structured, type Connected } from "./helpers.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let product: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { path: `/${SUMMIT}/mcp`, headers: key.headers, elicit: accept });
  product = await summitProduct(srv);
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

test("a resumed payment whose price the merchant halved since it started asks the human the started amount, and captures that amount", async () => {
  const c = await post("/cart", { items: [{ product_id: product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const opts = (await post("/checkout/preview", { cartId, shipping: DEST })).body.details.options as { option_id: string; cost: number }[];
  const cheap = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: [...opts].sort((a, b) => a.cost - b.cost)[0]!.option_id } });
  expect(cheap.status).toBe(200);
  const sessionId = cheap.body.data.checkout_session_id as string;
  const startedMinor = cheap.body.data.totals.total_minor as number;

  // The attempt starts over REST and waits for the buyer, who approves at the provider.
  const ik = crypto.randomUUID();
  const pending = await post("/checkout", { cartId, checkout_session_id: sessionId, payment_method: "tok_needs_approval", idempotency_key: ik });
  expect(pending.status).toBe(202);
  const approved = await decideAt(srv, approvalLink(pending, SUMMIT), "approve");
  expect(approved.status).toBe(200);

  const [p] = await srv.db.sql<{ price_minor: number }[]>`SELECT price_minor FROM products WHERE id = ${product}`;
  const list = Number(p!.price_minor);
  await srv.db.sql`UPDATE products SET price_minor = ${Math.floor(list / 2)}, updated_at = now() WHERE id = ${product}`;
  try {
    const asked = agent.elicitations.length;
    const r = await agent.call("complete_checkout", { checkout_session_id: sessionId, idempotency_key: ik, payment_method: "tok_approve" });
    expect(r.isError).toBeFalsy();
    expect(structured(r).status).toBe("COMPLETED");
    expect(agent.elicitations[asked]!.message).toStartWith(`Pay ${(startedMinor / 100).toFixed(2)} USD`);
    const paid = await srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;
    expect(paid.map((o) => Number(o.total_minor))).toEqual([startedMinor]);
  } finally {
    await srv.db.sql`UPDATE products SET price_minor = ${list}, updated_at = now() WHERE id = ${product}`;
  }
}, 60_000);
