/**
 * Audit B (session 17), B3 (copied from /tmp/notes/B-tests; the answer's code checked too): the x402 facilitator client follows redirects and echoes what it got back. @x402/core's
 * HTTPFacilitatorClient fetches /verify and /settle with `redirect: "follow"` (a 307 keeps the POST and the payer's
 * signed authorization), by name, with an unbounded body read; infra/x402/facilitator-client.ts wraps it without
 * overriding that. Every other outbound call of the service goes through fetchVetted (infra/outbound-http.ts: the
 * vetted address, never a redirect, bounded body). And a 2xx answer that is not a VerifyResponse becomes
 * `UPSTREAM_RESPONSE_INVALID` whose message carries the library's 200-character excerpt of the body, which the
 * checkout returns to the agent. So a facilitator (an allowlisted third party, or a merchant-configured one that
 * passed assertPublicUrl with ALLOW_PRIVATE_URLS=false) can point the service at an internal address
 * (169.254.169.254, 127.0.0.1) and the agent reads the start of the internal answer.
 * Here: the operator allowlists a facilitator origin (trusted as written); it answers /verify with a 307 to a
 * "metadata" server on loopback (standing in for 169.254.169.254), which is reached and whose body comes back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PaymentRequired } from "@x402/core/types";
import { toHex } from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import { EIP3009_TYPES } from "../../actors/payments/x402-verify.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const SECRET = "IMDS-ROLE-CREDENTIAL-0123456789";

let metadataHits = 0;
const metadata = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => {
    metadataHits++;
    return Response.json({ AccessKeyId: SECRET });
  },
});
const redirector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${metadata.port}/latest/meta-data${new URL(req.url).pathname}` } }),
});
const facilitatorUrl = `http://127.0.0.1:${redirector.port}`;

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { X402_FACILITATOR_ALLOWLIST: facilitatorUrl, ALLOW_PRIVATE_URLS: false, RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
  metadata.stop(true);
  redirector.stop(true);
});

test("a facilitator's redirect is not followed, and nothing of another server's answer reaches the agent", async () => {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const cartId = cart.body.data.id as string;
  const [row] = await srv.db.sql<{ pay_to: string }[]>`SELECT pay_to FROM store_x402_config WHERE store_slug = 'demo-store'`;
  const x402_config = { merchant_wallet_address: row!.pay_to, network: "eip155:84532", facilitator_url: facilitatorUrl };
  const first = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_rail: "x402", x402_config } });
  expect(first.status).toBe(402);
  const challenge: PaymentRequired = decodePaymentRequired(first.headers.get("PAYMENT-REQUIRED") ?? "");
  const req = challenge.accepts[0]!;
  // A correctly signed authorization (local checks pass offline), so the service calls the facilitator's /verify.
  const payer = privateKeyToAccount(generatePrivateKey());
  const authorization = {
    from: payer.address,
    to: req.payTo,
    value: req.amount,
    validAfter: "0",
    validBefore: String(Math.floor(Date.now() / 1000) + 200),
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
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
  if (process.env.B_SHOW) console.log(r.status, JSON.stringify(r.body));
  // fails now: the redirect was followed (the loopback "metadata" server was called with the payer's authorization) ...
  expect(metadataHits).toBe(0);
  // ... and its answer came back to the agent in the 502 UPSTREAM_RESPONSE_INVALID message
  expect(JSON.stringify(r.body)).not.toContain(SECRET);
  expect(r.body.success).toBe(false);
  expect(r.status).toBe(502);
  expect(r.body).toMatchObject({ code: "UPSTREAM_RESPONSE_INVALID", details: { operation: "verify", status: 307, reason: "redirect" } });
});
