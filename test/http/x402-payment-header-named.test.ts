/**
 * Helper F (session 22): an x402 checkout reads the payment from `PAYMENT-SIGNATURE` or, from a v1 client, `X-PAYMENT`
 * (docs/x402.md). A malformed `X-PAYMENT` value was refused as "PAYMENT-SIGNATURE header: …" with
 * `details.field: "PAYMENT-SIGNATURE"`, a header the client never sent. The refusal names the header that carried the
 * value now. The demo store's facilitator is pointed at an address nothing listens on: the header is refused before
 * anything is sent. Through HTTP against the real server, with the seeded demo data.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const DEMO_WALLET = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"; // the demo store's configured wallet (migration 0060)
const FACILITATOR = "http://127.0.0.1:9";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  await srv.db.sql`UPDATE store_x402_config SET facilitator_url = ${FACILITATOR} WHERE store_slug = 'demo-store'`;
  key = await createKey(srv, { scopes: ["cart", "checkout"] });
});

async function pay(header: Record<string, string>) {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  return srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: { ...key.headers, ...header, "idempotency-key": crypto.randomUUID() },
    body: {
      cartId: cart.body.data.id,
      payment_rail: "x402",
      x402_config: { merchant_wallet_address: DEMO_WALLET, network: "eip155:84532", facilitator_url: FACILITATOR },
    },
  });
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");

describe("a malformed x402 payment header is refused in the name it was sent under", () => {
  test("an X-PAYMENT value that is no payment payload is 400 naming X-PAYMENT", async () => {
    const r = await pay({ "x-payment": b64([]) });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: "X-PAYMENT header: paymentPayload: Expected object", code: "validation_error", details: { field: "X-PAYMENT" } });
  });

  test("an X-PAYMENT value that is not base64 JSON is 400 naming X-PAYMENT", async () => {
    const r = await pay({ "x-payment": "garbage" });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: "X-PAYMENT header is not base64-encoded JSON", code: "validation_error", details: { field: "X-PAYMENT" } });
  });

  test("a PAYMENT-SIGNATURE value that is no payment payload is still 400 naming PAYMENT-SIGNATURE", async () => {
    const r = await pay({ "payment-signature": b64({ x402Version: 2 }) });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    expect(r.body.details).toEqual({ field: "PAYMENT-SIGNATURE" });
    expect(r.body.error).toStartWith("PAYMENT-SIGNATURE header: ");
  });
});
