/** The x402 v2 challenge and header codecs against the library's own readers and client (offline). */
import { describe, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import {
  buildPaymentRequired,
  decodePaymentRequired,
  decodePaymentResponse,
  decodePaymentSignature,
  encodePaymentResponse,
  encodePaymentSignature,
  paymentRequiredHeaders,
  readPaymentHeader,
  toAssetAmount,
} from "../../actors/payments/x402-challenge.ts";
import { InMemoryNonceStore, verifyX402PaymentLocally } from "../../actors/payments/x402-verify.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const TOKEN = { address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", name: "USD Coin", version: "2", decimals: 6 };
const PAY_TO = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const payer = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");

const challenge = buildPaymentRequired({
  network: "eip155:84532",
  asset: TOKEN,
  amount: toAssetAmount(1234, 2, TOKEN.decimals), // $12.34
  payTo: PAY_TO,
  maxTimeoutSeconds: 300,
  resource: { url: "https://shop.example/api/v1/agent/checkout", description: "cart c1", mimeType: "application/json" },
});

describe("x402 challenge", () => {
  test("the challenge has the exact v2 shape @x402/core builds", () => {
    expect(challenge).toEqual({
      x402Version: 2,
      error: "Payment required",
      resource: { url: "https://shop.example/api/v1/agent/checkout", description: "cart c1", mimeType: "application/json" },
      accepts: [
        {
          scheme: "exact",
          network: "eip155:84532",
          asset: TOKEN.address,
          amount: "12340000",
          payTo: PAY_TO,
          maxTimeoutSeconds: 300,
          extra: { name: "USD Coin", version: "2" },
        },
      ],
    });
  });

  test("the PAYMENT-REQUIRED header decodes with the library's reader and its HTTP client", () => {
    const headers = paymentRequiredHeaders(challenge);
    expect(headers["Cache-Control"]).toBe("no-store");
    const header = headers["PAYMENT-REQUIRED"] as string;
    expect(header).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(decodePaymentRequiredHeader(header)).toEqual(challenge);
    const http = new x402HTTPClient(new x402Client());
    expect(http.getPaymentRequiredResponse((name) => (name === "PAYMENT-REQUIRED" ? header : null))).toEqual(challenge);
    expect(decodePaymentRequired(header)).toEqual(challenge);
  });

  test("the official client turns our challenge into a payload our local checks accept", async () => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: toClientEvmSigner(payer), networks: ["eip155:84532"] });
    client.setSpendControls(false);
    const payload = await client.createPaymentPayload(challenge);
    expect(payload.x402Version).toBe(2);
    expect(payload.accepted).toEqual(challenge.accepts[0]!);

    const header = encodePaymentSignature(payload);
    expect(header).toBe(encodePaymentSignatureHeader(payload));
    const decoded = decodePaymentSignature(header);
    expect(decoded).toEqual(payload);
    const result = await verifyX402PaymentLocally(decoded, challenge.accepts[0]!, { nonces: new InMemoryNonceStore() });
    expect(result).toMatchObject({ ok: true, payer: payer.address, amount: 12_340_000n });

    expect(readPaymentHeader(new Headers({ "PAYMENT-SIGNATURE": header }))).toEqual(payload);
    expect(readPaymentHeader(new Headers({ "X-PAYMENT": header }))).toEqual(payload);
    expect(readPaymentHeader(new Headers())).toBeUndefined();
  });

  test("PAYMENT-RESPONSE round-trips and drops the facilitator's internal extension responses", () => {
    const settlement = {
      success: true,
      transaction: `0x${"ab".repeat(32)}`,
      network: "eip155:84532" as const,
      payer: payer.address,
      extensionResponses: { internal: true },
    };
    const header = encodePaymentResponse(settlement);
    expect(decodePaymentResponseHeader(header)).not.toHaveProperty("extensionResponses");
    expect(decodePaymentResponse(header)).toEqual({
      success: true,
      transaction: settlement.transaction,
      network: "eip155:84532",
      payer: payer.address,
    });
  });

  test("a header that is not base64 JSON of the right shape is a validation error", () => {
    const bad = [
      "%%%not-base64%%%",
      btoa("not json"),
      btoa(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: {} })),
    ];
    for (const header of bad) {
      let caught: unknown;
      try {
        decodePaymentSignature(header);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ActorError);
      expect((caught as ActorError).code).toBe("validation_error");
    }
  });

  test("cart minor units convert to token atomic units without losing precision", () => {
    expect(toAssetAmount(1234, 2, 6)).toBe(12_340_000n);
    expect(toAssetAmount(1n, 2, 6)).toBe(10_000n);
    expect(toAssetAmount(500, 0, 6)).toBe(500_000_000n); // JPY-like currency, no minor unit
    expect(toAssetAmount(1_000_000_000_000n, 18, 6)).toBe(1n);
    expect(() => toAssetAmount(1n, 18, 6)).toThrow(ActorError);
    expect(() => toAssetAmount(-1, 2, 6)).toThrow(ActorError);
    expect(() => toAssetAmount(1.5, 2, 6)).toThrow(ActorError);
  });

  test("a challenge with a zero amount or a non-address payTo cannot be built", () => {
    const base = { network: "eip155:84532", asset: TOKEN, payTo: PAY_TO, resource: { url: "http://127.0.0.1/x" } };
    expect(() => buildPaymentRequired({ ...base, amount: 0n })).toThrow(ActorError);
    expect(() => buildPaymentRequired({ ...base, amount: 1n, payTo: "merchant" })).toThrow(ActorError);
    expect(() => buildPaymentRequired({ ...base, amount: 1n, network: "base-sepolia" })).toThrow(ActorError);
  });
});
