import { describe, expect, test } from "bun:test";
import { CardSandboxRail, InMemorySandboxLedger, SANDBOX_TOKENS } from "../../actors/payments/card-sandbox.ts";
import { assertCapturedAmount, chargeErrorCode, deriveIntentId, type ChargeIntent, type LookupResult } from "../../actors/payments/rail.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const KEY = "3b241101-e2bb-4255-8caf-4136c566a962";
const intent = (token: string, over: Partial<ChargeIntent> = {}): ChargeIntent => ({
  intentId: deriveIntentId("cs_1", KEY, "shop", 1),
  storeId: "shop",
  amountMinor: 4_200,
  currency: "USD",
  paymentToken: token,
  ...over,
});

async function rejection(p: Promise<unknown>): Promise<ActorError | undefined> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

describe("deterministic intent ids", () => {
  test("the same session, key, store and attempt give the same intent id", () => {
    expect(deriveIntentId("cs_1", KEY, "shop", 1)).toBe(deriveIntentId("cs_1", KEY, "shop", 1));
    expect(deriveIntentId("cs_1", KEY, "shop", 1)).toMatch(/^pi_[0-9a-f]{40}$/);
  });
  test("any other session, key, store or attempt gives another id", () => {
    const base = deriveIntentId("cs_1", KEY, "shop", 1);
    for (const other of [
      deriveIntentId("cs_2", KEY, "shop", 1),
      deriveIntentId("cs_1", "9f5c2a4e-1b7d-4c3e-a8f2-6d0e1b2c3a4f", "shop", 1),
      deriveIntentId("cs_1", KEY, "shop2", 1),
      deriveIntentId("cs_1", KEY, "shop", 2),
    ]) expect(other).not.toBe(base);
  });
  test("an attempt below 1 is refused", () => {
    expect(() => deriveIntentId("cs_1", KEY, "shop", 0)).toThrow(ActorError);
  });
});

describe("sandbox tokens", () => {
  const cases: [string, string, string | undefined][] = [
    [SANDBOX_TOKENS.approve, "captured", undefined],
    [SANDBOX_TOKENS.decline, "declined", "PAYMENT_DECLINED"],
    [SANDBOX_TOKENS.fail, "failed", "PAYMENT_FAILED_ROLLED_BACK"],
    [SANDBOX_TOKENS.needsApproval, "needs_buyer_approval", undefined],
    [SANDBOX_TOKENS.notApproved, "not_approved", "PAYMENT_NOT_APPROVED"],
    ["tok_whatever", "declined", "PAYMENT_DECLINED"],
  ];
  for (const [token, status, code] of cases) {
    test(`${token} answers ${status}${code ? ` with ${code}` : ""}`, async () => {
      const r = await new CardSandboxRail().charge(intent(token));
      expect(r.status).toBe(status as never);
      expect(chargeErrorCode(r)).toBe(code as never);
    });
  }

  test("a captured charge reports the amount, currency and a capture reference", async () => {
    const r = await new CardSandboxRail().charge(intent(SANDBOX_TOKENS.approve));
    expect(r).toMatchObject({ status: "captured", amountMinor: 4_200, currency: "USD", simulated: false });
    if (r.status === "captured") expect(r.captureRef).toMatch(/^cap_/);
  });

  test("MOCK completes at once on the demo store and is marked simulated", async () => {
    const r = await new CardSandboxRail().charge(intent(SANDBOX_TOKENS.mock, { storeId: "demo-store" }));
    expect(r).toMatchObject({ status: "captured", simulated: true });
  });

  test("MOCK on any other store is PAYMENT_METHOD_NOT_CONFIGURED", async () => {
    expect((await rejection(new CardSandboxRail().charge(intent(SANDBOX_TOKENS.mock))))?.code).toBe("PAYMENT_METHOD_NOT_CONFIGURED");
  });

  test("a zero amount is refused before anything is recorded", async () => {
    const rail = new CardSandboxRail();
    expect((await rejection(rail.charge(intent(SANDBOX_TOKENS.approve, { amountMinor: 0 }))))?.code).toBe("INVALID_ARGUMENT");
    expect((await rail.lookup(intent("x").intentId)).status).toBe("unknown");
  });
});

describe("idempotency per intent id", () => {
  test("a second charge with the same intent id returns the first result and captures once", async () => {
    const ledger = new InMemorySandboxLedger();
    const rail = new CardSandboxRail({ ledger });
    const a = await rail.charge(intent(SANDBOX_TOKENS.approve));
    const b = await rail.charge(intent(SANDBOX_TOKENS.approve));
    expect(b).toEqual(a);
  });

  test("a repeat with another token or amount replays the first result", async () => {
    const rail = new CardSandboxRail();
    const first = await rail.charge(intent(SANDBOX_TOKENS.decline));
    expect(await rail.charge(intent(SANDBOX_TOKENS.approve, { amountMinor: 1 }))).toEqual(first);
  });

  test("concurrent charges of one intent share one answer", async () => {
    const rail = new CardSandboxRail();
    const [a, b] = await Promise.all([rail.charge(intent(SANDBOX_TOKENS.approve)), rail.charge(intent(SANDBOX_TOKENS.approve))]);
    expect(a).toEqual(b);
  });

  test("another intent id is another payment", async () => {
    const rail = new CardSandboxRail();
    await rail.charge(intent(SANDBOX_TOKENS.fail));
    const retry = await rail.charge(intent(SANDBOX_TOKENS.approve, { intentId: deriveIntentId("cs_1", KEY, "shop", 2) }));
    expect(retry.status).toBe("captured");
  });

  test("the idempotency survives a new rail object over the same ledger", async () => {
    const ledger = new InMemorySandboxLedger();
    const a = await new CardSandboxRail({ ledger }).charge(intent(SANDBOX_TOKENS.approve));
    expect(await new CardSandboxRail({ ledger }).charge(intent(SANDBOX_TOKENS.fail))).toEqual(a);
  });
});

/** The approval link's token: the last path segment of a needs_buyer_approval answer's link. */
const tokenOf = (r: LookupResult): string => {
  if (r.status !== "needs_buyer_approval") throw new Error(`expected needs_buyer_approval, got ${r.status}`);
  return r.approvalUrl.split("/").pop() as string;
};

describe("buyer approval simulation", () => {
  test("an approval-needing charge waits with a link until approved, then the same call captures", async () => {
    const rail = new CardSandboxRail({ approvalBaseUrl: "https://pay.example/approve/" });
    const i = intent(SANDBOX_TOKENS.needsApproval);
    const first = await rail.charge(i);
    const token = tokenOf(first);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(first).toEqual({ status: "needs_buyer_approval", intentId: i.intentId, approvalUrl: `https://pay.example/approve/${i.intentId}/${token}` });
    // a replayed charge and a lookup hand out the same link
    expect(await rail.charge(i)).toEqual(first);
    expect(await rail.lookup(i.intentId)).toEqual(first);
    await rail.approve(i.intentId, token);
    expect((await rail.lookup(i.intentId)).status).toBe("needs_buyer_approval");
    const captured = await rail.charge(i);
    expect(captured.status).toBe("captured");
    expect(await rail.charge(i)).toEqual(captured);
  });

  test("a buyer who refuses turns the next call into not_approved", async () => {
    const rail = new CardSandboxRail();
    const i = intent(SANDBOX_TOKENS.needsApproval);
    await rail.reject(i.intentId, tokenOf(await rail.charge(i)));
    expect((await rail.charge(i)).status).toBe("not_approved");
  });

  test("approving twice is harmless, approving a captured payment too", async () => {
    const rail = new CardSandboxRail();
    const i = intent(SANDBOX_TOKENS.needsApproval);
    const token = tokenOf(await rail.charge(i));
    await rail.approve(i.intentId, token);
    await rail.approve(i.intentId, token);
    await rail.charge(i);
    await rail.approve(i.intentId, token);
    expect((await rail.lookup(i.intentId)).status).toBe("captured");
  });

  test("approving an unknown intent, one that never waited, or with a wrong token is not_found; a refused one is conflict", async () => {
    const rail = new CardSandboxRail();
    expect((await rejection(rail.approve("pi_nope", "0".repeat(64))))?.code).toBe("not_found");
    await rail.charge(intent(SANDBOX_TOKENS.decline));
    expect((await rejection(rail.approve(intent("x").intentId, "")))?.code).toBe("not_found");
    const waiting = intent(SANDBOX_TOKENS.needsApproval, { intentId: deriveIntentId("cs_2", KEY, "shop", 1) });
    const token = tokenOf(await rail.charge(waiting));
    for (const wrong of ["", "0".repeat(64), token.slice(0, 63), `${token}0`, token.toUpperCase()]) {
      const err = await rejection(rail.approve(waiting.intentId, wrong));
      expect({ code: err?.code, message: err?.message, details: err?.details }).toEqual({
        code: "not_found",
        message: "No sandbox payment with that intent id.",
        details: { intent_id: waiting.intentId },
      });
      expect(await rail.describe(waiting.intentId, wrong)).toBeUndefined();
    }
    expect((await rail.describe(waiting.intentId, token))?.state).toBe("awaiting_approval");
    await rail.reject(waiting.intentId, token);
    expect((await rejection(rail.approve(waiting.intentId, token)))?.code).toBe("conflict");
  });

  test("each intent waiting for approval gets its own token", async () => {
    const rail = new CardSandboxRail();
    const a = tokenOf(await rail.charge(intent(SANDBOX_TOKENS.needsApproval)));
    const b = tokenOf(await rail.charge(intent(SANDBOX_TOKENS.needsApproval, { intentId: deriveIntentId("cs_1", KEY, "shop", 2) })));
    expect(a).not.toBe(b);
  });

  test("a waiting intent recorded without a token is given one at its next lookup, and keeps it", async () => {
    const ledger = new InMemorySandboxLedger();
    const rail = new CardSandboxRail({ ledger });
    const i = intent(SANDBOX_TOKENS.needsApproval);
    await rail.charge(i);
    // as a row written before migration 0084
    await ledger.updateIntent({ ...(await ledger.getIntent(i.intentId))!, approvalToken: null });
    const token = tokenOf(await rail.lookup(i.intentId));
    expect(tokenOf(await rail.charge(i))).toBe(token);
    await rail.approve(i.intentId, token);
    expect((await rail.charge(i)).status).toBe("captured");
  });
});

describe("reconciliation after a lost answer", () => {
  test("a capture whose answer was lost is found by lookup and by a repeated charge, without a second capture", async () => {
    const ledger = new InMemorySandboxLedger();
    const rail = new CardSandboxRail({ ledger });
    const i = intent(SANDBOX_TOKENS.lostResponse);
    expect((await rejection(rail.charge(i)))?.code).toBe("UPSTREAM_UNAVAILABLE");
    // the lookup right after the lost answer is lost too (the agent must see it, review AD-5); the next one finds it
    expect((await rejection(rail.lookup(i.intentId)))?.code).toBe("UPSTREAM_UNAVAILABLE");
    const looked = await rail.lookup(i.intentId);
    expect(looked.status).toBe("captured");
    const again = await rail.charge(i);
    expect(again).toEqual(looked as never);
    expect((await ledger.getIntent(i.intentId))?.refundedMinor).toBe(0);
  });

  test("lookup of an intent never charged is unknown", async () => {
    expect(await new CardSandboxRail().lookup("pi_never")).toEqual({ status: "unknown", intentId: "pi_never" });
  });
});

describe("sandbox refunds", () => {
  const captured = async () => {
    const rail = new CardSandboxRail();
    const r = await rail.charge(intent(SANDBOX_TOKENS.approve));
    if (r.status !== "captured") throw new Error("expected capture");
    return { rail, captureRef: r.captureRef };
  };

  test("a partial and then the rest can be refunded, but not more", async () => {
    const { rail, captureRef } = await captured();
    expect((await rail.refund({ refundId: "rf1", captureRef, amountMinor: 1_200 })).status).toBe("refunded");
    expect((await rail.refund({ refundId: "rf2", captureRef, amountMinor: 3_000 })).status).toBe("refunded");
    expect(await rail.refund({ refundId: "rf3", captureRef, amountMinor: 1 })).toEqual({ status: "failed", refundId: "rf3", reason: "exceeds_captured" });
  });

  test("a refund repeated with the same refund id is applied once", async () => {
    const { rail, captureRef } = await captured();
    const a = await rail.refund({ refundId: "rf1", captureRef, amountMinor: 4_200 });
    const b = await rail.refund({ refundId: "rf1", captureRef, amountMinor: 4_200 });
    expect(b).toEqual(a);
    expect(a.status).toBe("refunded");
  });

  test("a refund of an unknown capture or of zero fails", async () => {
    const { rail, captureRef } = await captured();
    expect((await rail.refund({ refundId: "x1", captureRef: "cap_nope", amountMinor: 1 })).status).toBe("failed");
    expect(await rail.refund({ refundId: "x2", captureRef, amountMinor: 0 })).toMatchObject({ reason: "invalid_amount" });
  });
});

describe("captured amount check", () => {
  test("a capture of another amount is PAYMENT_AMOUNT_MISMATCH with the capture reference", () => {
    const r = { status: "captured" as const, intentId: "pi", captureRef: "cap_1", amountMinor: 100, currency: "USD", simulated: false };
    let err: ActorError | undefined;
    try {
      assertCapturedAmount(r, { amountMinor: 101, currency: "USD" });
    } catch (e) {
      err = e as ActorError;
    }
    expect(err?.code).toBe("PAYMENT_AMOUNT_MISMATCH");
    expect(err?.details?.capture_reference).toBe("cap_1");
    expect(() => assertCapturedAmount(r, { amountMinor: 100, currency: "USD" })).not.toThrow();
  });
});
