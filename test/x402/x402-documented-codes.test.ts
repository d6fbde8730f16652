/**
 * Audit B (session 17), B4 (copied from /tmp/notes/B-tests, with the reason and /health checked too): two answers of POST /api/v1/agent/checkout (x402) carry codes the served OpenAPI does
 * not list for their status, and the protocols page advertises an x402 rail every checkout then refuses.
 *  - a facilitator whose /verify answers 200 with something that is not a VerifyResponse: 502
 *    UPSTREAM_RESPONSE_INVALID, while the 502's x-error-codes list only UPSTREAM_ERROR;
 *  - a merchant-configured facilitator the SSRF guard refuses (ALLOW_PRIVATE_URLS=false, private address): 409
 *    STORE_NOT_CONFIGURED, not among the 409's x-error-codes; and GET /agent/merchants/{slug}/protocols says
 *    `configured: true` with that facilitator_url (and /health x402: true), although docs/x402.md promises that one
 *    rule (x402Availability) makes every surface agree with the checkout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PaymentRequired } from "@x402/core/types";
import { toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import { EIP3009_TYPES } from "../../actors/payments/x402-verify.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

// A facilitator that answers /verify with 200 and a body that is not a VerifyResponse.
const odd = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ hello: "not a verify response" }) });
const oddUrl = `http://127.0.0.1:${odd.port}`;

let srv: TestServer;
let key: TestKey;
let doc: any;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { X402_FACILITATOR_ALLOWLIST: oddUrl, ALLOW_PRIVATE_URLS: false, RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  doc = (await srv.json("/api/v1/openapi.json")).body;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
  odd.stop(true);
});

const documentedCodes = (status: number): string[] => doc.paths["/api/v1/agent/checkout"].post.responses[String(status)]?.["x-error-codes"] ?? [];

async function newCart(): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

async function config() {
  const [row] = await srv.db.sql<{ pay_to: string }[]>`SELECT pay_to FROM store_x402_config WHERE store_slug = 'demo-store'`;
  return { merchant_wallet_address: row!.pay_to, network: "eip155:84532", facilitator_url: oddUrl };
}

test("a facilitator's unreadable /verify answer is a documented 502 code", async () => {
  const cartId = await newCart();
  const x402_config = await config();
  const first = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_rail: "x402", x402_config } });
  expect(first.status).toBe(402);
  const req = (decodePaymentRequired(first.headers.get("PAYMENT-REQUIRED") ?? "") as PaymentRequired).accepts[0]!;
  const payer = privateKeyToAccount(generatePrivateKey());
  const authorization = { from: payer.address, to: req.payTo, value: req.amount, validAfter: "0", validBefore: String(Math.floor(Date.now() / 1000) + 200), nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) };
  const signature = await payer.signTypedData({
    domain: { name: String(req.extra!.name), version: String(req.extra!.version), chainId: 84532, verifyingContract: req.asset as `0x${string}` },
    types: EIP3009_TYPES,
    primaryType: "TransferWithAuthorization",
    message: { ...authorization, to: authorization.to as `0x${string}`, value: BigInt(authorization.value), validAfter: 0n, validBefore: BigInt(authorization.validBefore), nonce: authorization.nonce },
  });
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, payment_rail: "x402", x402_config, x402_payload: { x402Version: 2, accepted: req, payload: { signature, authorization } } },
  });
  expect(r.body.success).toBe(false);
  // fails now: 502 UPSTREAM_RESPONSE_INVALID, the 502's x-error-codes are ["UPSTREAM_ERROR"]
  expect(documentedCodes(r.status)).toContain(r.body.code);
  // the facilitator's own text is not passed on (docs/x402.md, review RX-4)
  expect(JSON.stringify(r.body)).not.toContain("not a verify response");
});

test("a merchant facilitator the SSRF guard refuses: not advertised, and the refusal's code is documented", async () => {
  await srv.db.sql`UPDATE store_x402_config SET facilitator_url = 'http://10.0.0.1:1' WHERE store_slug = 'demo-store'`;
  try {
    const cartId = await newCart();
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_rail: "x402", x402_config: await config() } });
    expect(r.body.success).toBe(false);
    // fails now: 409 STORE_NOT_CONFIGURED, not among the 409's x-error-codes
    expect(documentedCodes(r.status)).toContain(r.body.code);
    const p = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
    const x402 = p.body.data.protocols.find((e: { id: string }) => e.id === "x402");
    // fails now: configured true, facilitator_url http://10.0.0.1:1
    expect(x402.configured).toBe(false);
    expect(x402).toMatchObject({ reason: "facilitator_not_public", facilitator_url: null, allowed_facilitators: [] });
    // and /health agrees (the demo store is the only one with an x402 configuration); its probe is cached a second
    await Bun.sleep(1100);
    expect((await srv.json("/api/v1/health")).body.data.protocols.x402).toBe(false);
  } finally {
    await srv.db.sql`UPDATE store_x402_config SET facilitator_url = NULL WHERE store_slug = 'demo-store'`;
  }
});

test("x402 is advertised by the store's configuration with the currencies it settles; a EUR cart is refused at checkout by its own currency (review Y-6)", async () => {
  await srv.db.sql`
    INSERT INTO store_x402_config (store_slug, pay_to, network, asset_address, asset_name, asset_version, asset_decimals, facilitator_url, facilitator_version, max_timeout_seconds)
    SELECT 'qualified-eu-shop', pay_to, network, asset_address, asset_name, asset_version, asset_decimals, NULL, 'v2', 300 FROM store_x402_config WHERE store_slug = 'demo-store'`;
  try {
    const [p] = await srv.db.sql<{ id: string }[]>`
      SELECT id FROM products WHERE store_slug = 'qualified-eu-shop' AND in_stock AND active AND variants = '[]'::jsonb LIMIT 1`;
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: p!.id, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    expect(cart.body.data.currency).toBe("EUR");
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_rail: "x402", x402_config: await config() } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "PAYMENT_METHOD_NOT_CONFIGURED", details: { reason: "currency_not_supported" } });
    const pr = await srv.json("/api/v1/agent/merchants/qualified-eu-shop/protocols", { headers: key.headers });
    const x402 = pr.body.data.protocols.find((e: { id: string }) => e.id === "x402");
    // the store's currency does not decide (it may sell USD products too): the entry says which carts x402 settles
    expect(x402).toMatchObject({ configured: true, currencies: ["USD"] });
  } finally {
    await srv.db.sql`DELETE FROM store_x402_config WHERE store_slug = 'qualified-eu-shop'`;
  }
});
