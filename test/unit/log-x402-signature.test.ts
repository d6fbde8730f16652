/**
 * Audit M-9: the log redaction (infra/log.ts) knows our own secret prefixes, JWTs, bearer tokens and 32-byte hex keys,
 * but not an x402 payment authorization: a field named `signature`, the `PAYMENT-SIGNATURE` / `X-PAYMENT` header
 * value (base64 JSON holding the EIP-3009 authorization and its signature, spendable by whoever holds it until
 * validBefore), or a 65-byte packed signature (0x + 130 hex) quoted in free text (a facilitator's or viem's error
 * text, logged by `x402 settle outcome unknown; will reconcile` with `error: cause`). No call site logs one today
 * (checked); this is the net under the next one.
 * Run: `bun test/run.ts test/unit/log-x402-signature.test.ts`.
 */
import { expect, test } from "bun:test";
import { redact } from "../../infra/log.ts";

const sig = "0x" + "ab".repeat(65);
const payload = Buffer.from(JSON.stringify({ x402Version: 2, payload: { signature: sig, authorization: { from: "0x" + "11".repeat(20), nonce: "0x" + "22".repeat(32) } } })).toString("base64");

test("an x402 signature never reaches a log line", () => {
  const out = JSON.stringify(
    redact({
      msg: `facilitator refused: invalid signature ${sig}`,
      signature: sig,
      headers: { "payment-signature": payload, "x-payment": payload },
      paymentPayload: { payload: { signature: sig } },
    }),
  );
  expect(out).not.toContain("ab".repeat(65));
  expect(out).not.toContain(payload);
});

test("the x402 net leaves what is no secret alone", () => {
  const cursor = Buffer.from(JSON.stringify({ offset: 40, query: "wireless headphones", sort: "relevance" })).toString("base64url");
  const txHash = "0x" + "cd".repeat(32);
  const out = redact({ msg: `next page ${cursor}`, max_payment: 12, paymentRail: "x402", signatureCount: 2, shortHex: "0x" + "ef".repeat(20) }) as Record<string, unknown>;
  expect(out.msg).toBe(`next page ${cursor}`);
  expect(out.max_payment).toBe(12);
  expect(out.paymentRail).toBe("x402");
  expect(out.shortHex).toBe("0x" + "ef".repeat(20));
  expect(out.signatureCount).toBe("[redacted]"); // a field named like a signature is redacted whatever it holds
  expect(redact(`settled ${txHash}`)).toBe("settled 0x[redacted]"); // 32-byte hex was redacted before too
  const urlSafe = payload.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  expect(redact(`quoted ${urlSafe}`)).toBe("quoted [redacted-signed-payload]");
});
