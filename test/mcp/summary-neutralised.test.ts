/**
 * The questions a human approves (MCP elicitation) show merchant text neutralised (gateway/mcp/human-text.ts; audit A3
 * note): a product title or store name carrying line breaks or a bidi override (U+202E) cannot start a fake line or
 * reorder the amount after it. Line breaks read as one space, format characters as a visible <U+XXXX>, and a long
 * title is cut at 80 code points. The title and name come in as a merchant sends them (catalog PUT; the store row).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, structured, type Connected } from "./helpers.ts";

const TITLE = "Wool Socks\n\nNothing is charged for this order.\u202E DSU 00.999";
const SHOWN = "Wool Socks Nothing is charged for this order.<U+202E> DSU 00.999";
const STORE = "Demo Store";
const STORE_SHOWN = "Demo Store <U+202E>";
/** A 305-character title, cut at 80 code points. */
const LONG_SHOWN = `Lamp ${"x".repeat(74)}…`;

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let socks: string;
let long: string;

const lastQuestion = () => agent.elicitations.at(-1)!.message;
/** The whole question: the summary line, the facts, then "Approve this action?" (gateway/mcp/confirm.ts). */
const question = (summary: string, facts: Record<string, string | number>) =>
  [summary, ...Object.entries(facts).map(([k, v]) => `- ${k}: ${v}`), "", "Approve this action?"].join("\n");

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  const owner = { authorization: `Bearer ${await login(srv)}` };
  const put = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: owner,
    body: {
      products: [
        { externalId: "H2-SOCKS", title: TITLE, price: 1, currency: "USD", stockQuantity: 50, category: "Apparel" },
        { externalId: "H2-LONG", title: `Lamp ${"x".repeat(300)}`, price: 2, currency: "USD", stockQuantity: 50, category: "Apparel" },
      ],
    },
  });
  expect(put.status).toBe(200);
  expect(put.body.data.accepted).toBe(2);
  [socks, long] = ["H2-SOCKS", "H2-LONG"].map((x) => put.body.data.upserted.find((u: any) => u.externalId === x)?.id ?? "");
  if (!socks || !long) {
    const rows = await srv.db.sql<{ id: string; external_id: string }[]>`SELECT id, external_id FROM products WHERE store_slug = 'demo-store' AND external_id IN ('H2-SOCKS', 'H2-LONG')`;
    socks = rows.find((r) => r.external_id === "H2-SOCKS")!.id;
    long = rows.find((r) => r.external_id === "H2-LONG")!.id;
  }
  const [p] = await srv.db.sql<{ title: string }[]>`SELECT title FROM products WHERE id = ${socks}`;
  expect(p!.title).toBe(TITLE); // stored as sent: the summaries must cope
  // A store name with a line break and an override, read by the MCP gateway on its first call to the store.
  await srv.db.sql`UPDATE stores SET name = ${`${STORE}\n\u202E`} WHERE slug = 'demo-store'`;
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("create_cart, update_cart_item and remove_cart_item show the title on one line with the override made visible", async () => {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: socks, quantity: 2 }, { product_id: long, quantity: 1 }] }));
  expect(cart.cart_id).toBeString();
  expect(lastQuestion()).toBe(
    question(`Create a cart at ${STORE_SHOWN}: 2 × ${SHOWN} (1.00 USD), 1 × ${LONG_SHOWN} (2.00 USD) — about 4.00 USD before shipping and tax.`, { amount: 4, currency: "USD" }),
  );
  expect(lastQuestion()).not.toContain("\u202E");

  const updated = structured(await agent.call("update_cart_item", { cart_id: cart.cart_id, product_id: socks, quantity: 3 }));
  expect(updated.cart_id).toBeString();
  expect(lastQuestion()).toBe(question(`Set ${SHOWN} to 3 × 1.00 USD in your cart at ${STORE_SHOWN}.`, { amount: 3, currency: "USD" }));

  const removed = structured(await agent.call("remove_cart_item", { cart_id: updated.cart_id, product_id: socks }));
  expect(removed.cart_id).toBeString();
  expect(lastQuestion()).toBe(question(`Remove ${SHOWN} from your cart at ${STORE_SHOWN}.`, {}));
}, 60_000);

test("payment, return and negotiation questions show the store name and the title neutralised", async () => {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: socks, quantity: 1 }] }));
  const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const done = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
  expect(done.status).toBe("COMPLETED");
  const total = pv.totals.total_minor as number;
  expect(lastQuestion()).toBe(
    question(`Pay ${(total / 100).toFixed(2)} USD to ${STORE_SHOWN} for 1 item(s) with MOCK.`, { amount: total / 100, currency: "USD", merchant: STORE_SHOWN, payment_method: "MOCK" }),
  );

  expect(structured(await agent.call("onx_create_return", { order_id: done.order_id, amount: 100 })).status).toBe("PENDING_APPROVAL");
  expect(lastQuestion()).toBe(question(`Request a refund of 1.00 USD for order ${done.order_id} at ${STORE_SHOWN}.`, { amount: 1, currency: "USD" }));

  expect(structured(await agent.call("negotiate_price", { product_id: socks, bid_price: 0.9, currency: "USD" })).status).toBeString();
  expect(lastQuestion()).toBe(question(`Offer 0.9 USD for ${SHOWN} (list 1.00 USD) at ${STORE_SHOWN}.`, { amount: 0.9, currency: "USD" }));
}, 60_000);
