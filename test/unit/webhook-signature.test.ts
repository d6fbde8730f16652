import { describe, expect, spyOn, test } from "bun:test";
import * as nodeCrypto from "node:crypto";
import Stripe from "stripe";
import {
  generateWebhookSecret,
  isWebhookSecret,
  parseSignatureHeader,
  signWebhook,
  signWebhookMulti,
  verifyWebhook,
} from "../../actors/webhook/signature.ts";

const stripe = new Stripe("sk_test_x");
// Under Bun the stripe package loads its worker build, whose crypto is SubtleCrypto: the synchronous
// constructEvent throws "cannot be used in a synchronous context", so Stripe's own async verifier is used.
const constructEvent = (payload: string, header: string, secret: string) =>
  stripe.webhooks.constructEventAsync(payload, header, secret);
const body = JSON.stringify({
  id: "evt_1",
  object: "event",
  event: "order.created",
  timestamp: "2025-03-01T12:00:00.000Z",
  orderId: "0b6f4c1e-0000-4000-8000-000000000001",
  merchantSlug: "demo-store",
  totalAmount: 49.99,
  currency: "USD",
  status: "pending",
});
const nowSec = () => Math.floor(Date.now() / 1000);

describe("webhook secrets", () => {
  test("a generated secret is whsec_ followed by 43 base62 characters, different each time", () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[0-9A-Za-z]{43}$/);
    expect(isWebhookSecret(a)).toBe(true);
    expect(generateWebhookSecret()).not.toBe(a);
  });

  test("signing with a secret that is not whsec_ formatted is refused", () => {
    expect(() => signWebhook("plain-secret", body, 1)).toThrow();
  });
});

describe("the X-Webhook-Signature header", () => {
  test("it is t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<raw body>'>", () => {
    const secret = generateWebhookSecret();
    const t = 1740830400;
    const expected = nodeCrypto.createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
    expect(signWebhook(secret, body, t)).toBe(`t=${t},v1=${expected}`);
  });

  test("a Uint8Array body signs the same as its string", () => {
    const secret = generateWebhookSecret();
    expect(signWebhook(secret, new TextEncoder().encode(body), 5)).toBe(signWebhook(secret, body, 5));
  });

  test("Stripe's own verifier accepts our signature", async () => {
    const secret = generateWebhookSecret();
    const header = signWebhook(secret, body, nowSec());
    const event = await constructEvent(body, header, secret);
    expect(event.id).toBe("evt_1");
  });

  test("Stripe's verifier rejects a tampered body", async () => {
    const secret = generateWebhookSecret();
    const header = signWebhook(secret, body, nowSec());
    await expect(constructEvent(body.replace("49.99", "0.01"), header, secret)).rejects.toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
  });

  test("Stripe's verifier rejects a timestamp older than 300 seconds", async () => {
    const secret = generateWebhookSecret();
    const header = signWebhook(secret, body, nowSec() - 301);
    await expect(constructEvent(body, header, secret)).rejects.toThrow(/tolerance/i);
  });

  test("Stripe's verifier rejects another secret", async () => {
    const header = signWebhook(generateWebhookSecret(), body, nowSec());
    await expect(constructEvent(body, header, generateWebhookSecret())).rejects.toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
  });

  test("during rotation the header carries one v1 per secret and verifies with either", async () => {
    const oldSecret = generateWebhookSecret();
    const newSecret = generateWebhookSecret();
    const t = nowSec();
    const header = signWebhookMulti([newSecret, oldSecret], body, t);
    expect(parseSignatureHeader(header)?.v1).toHaveLength(2);
    expect((await constructEvent(body, header, oldSecret)).id).toBe("evt_1");
    expect((await constructEvent(body, header, newSecret)).id).toBe("evt_1");
    expect(verifyWebhook(header, body, oldSecret, { now: t })).toEqual({ ok: true, timestamp: t });
    expect(verifyWebhook(header, body, newSecret, { now: t })).toEqual({ ok: true, timestamp: t });
    expect(verifyWebhook(header, body, generateWebhookSecret(), { now: t }).ok).toBe(false);
  });
});

describe("our verifier", () => {
  const secret = generateWebhookSecret();
  const t = 1740830400;

  test("it accepts a fresh, correct signature", () => {
    expect(verifyWebhook(signWebhook(secret, body, t), body, secret, { now: t + 10 })).toEqual({ ok: true, timestamp: t });
  });

  test("it accepts a header made by Stripe's test helper", async () => {
    const header = await stripe.webhooks.generateTestHeaderStringAsync({ payload: body, secret, timestamp: t });
    expect(verifyWebhook(header, body, secret, { now: t }).ok).toBe(true);
  });

  test("it rejects a tampered body", () => {
    expect(verifyWebhook(signWebhook(secret, body, t), body + " ", secret, { now: t })).toEqual({
      ok: false,
      reason: "no_matching_signature",
    });
  });

  test("it rejects a timestamp more than 300 seconds in the past or the future, and accepts exactly 300", () => {
    const header = signWebhook(secret, body, t);
    expect(verifyWebhook(header, body, secret, { now: t + 300 }).ok).toBe(true);
    expect(verifyWebhook(header, body, secret, { now: t + 301 })).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" });
    expect(verifyWebhook(header, body, secret, { now: t - 301 })).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" });
  });

  test("a replay with a rewritten timestamp does not verify", () => {
    const header = signWebhook(secret, body, t).replace(`t=${t}`, `t=${t + 1000}`);
    expect(verifyWebhook(header, body, secret, { now: t + 1000 }).ok).toBe(false);
  });

  test("the older raw-body-only signature is not accepted", () => {
    const legacy = nodeCrypto.createHmac("sha256", secret).update(body).digest("hex");
    expect(verifyWebhook(`t=${t},v1=${legacy}`, body, secret, { now: t }).ok).toBe(false);
  });

  test.each([undefined, "", "v1=abc", `t=abc,v1=${"0".repeat(64)}`, `t=${t}`, `t=${t},v1=zz`, `t=1,t=2,v1=${"0".repeat(64)}`])(
    "a malformed header %p is rejected",
    (header) => {
      expect(verifyWebhook(header, body, secret, { now: t })).toEqual({ ok: false, reason: "malformed_header" });
    },
  );

  test("it compares with timingSafeEqual against every v1 entry", () => {
    const spy = spyOn(nodeCrypto, "timingSafeEqual");
    try {
      const header = signWebhookMulti([secret, generateWebhookSecret()], body, t);
      expect(verifyWebhook(header, body, secret, { now: t }).ok).toBe(true);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});
