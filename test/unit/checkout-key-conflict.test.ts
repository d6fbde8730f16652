/**
 * IDEMPOTENCY_KEY_CONFLICT's way on (`details.next` and the text) per session status (review S-2): every way it names
 * is one the session then accepts. Cancel is offered exactly where CHECKOUT_TRANSITIONS accepts `cancel`; the first
 * key exactly where decideComplete with it does something other than SESSION_INACTIVE.
 */
import { describe, expect, test } from "bun:test";
import { CHECKOUT_STATUSES, checkoutCell, decideComplete, keyConflictWays, type CheckoutStatus, type KeyConflictWay } from "../../actors/cart/checkout-machine.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const KEY = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f";
const OTHER = "0b7e9a52-8c1d-4f3e-9a6b-5c4d3e2f1a0b";

function conflictOf(status: CheckoutStatus): ActorError {
  try {
    decideComplete({ id: "cs_x_1", status, idempotencyKey: KEY }, OTHER);
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  throw new Error("no conflict");
}

function firstKeyCode(status: CheckoutStatus): string | null {
  try {
    decideComplete({ status, idempotencyKey: KEY }, KEY);
    return null;
  } catch (e) {
    if (e instanceof ActorError) return e.code;
    throw e;
  }
}

describe("IDEMPOTENCY_KEY_CONFLICT names only the ways the session accepts", () => {
  const expected: Record<CheckoutStatus, KeyConflictWay[]> = {
    OPEN: ["retry_with_first_key", "cancel_checkout_then_preview"],
    READY_FOR_PAYMENT: ["retry_with_first_key", "cancel_checkout_then_preview"],
    PENDING_EXTERNAL_CONFIRMATION: ["retry_with_first_key", "cancel_checkout_then_preview"],
    IN_PROGRESS: ["retry_with_first_key"],
    SETTLEMENT_UNKNOWN: ["retry_with_first_key"],
    COMPLETED: ["retry_with_first_key"],
    FAILED: ["preview_checkout"],
    EXPIRED: ["preview_checkout"],
    CANCELED: ["preview_checkout"],
  };

  // An EXPIRED session is refused before any key is looked at (CHECKOUT_SESSION_NOT_FOUND: "no such checkout session or
  // expired"): no key conflicts with it (helper B, B-5).
  test("an EXPIRED session answers CHECKOUT_SESSION_NOT_FOUND for another key as for its own, not a key conflict", () => {
    expect(conflictOf("EXPIRED").code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    expect(conflictOf("EXPIRED").details).toEqual({ checkout_session_id: "cs_x_1", status: "EXPIRED" });
    expect(firstKeyCode("EXPIRED")).toBe("CHECKOUT_SESSION_NOT_FOUND");
  });

  for (const status of CHECKOUT_STATUSES.filter((s) => s !== "EXPIRED")) {
    test(`a ${status} session's conflict names ${expected[status].join(" and ")}, with its status and id`, () => {
      const err = conflictOf(status);
      expect(err.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
      expect(err.details).toEqual({ status, next: expected[status], checkout_session_id: "cs_x_1" });
      expect(keyConflictWays(status)).toEqual(expected[status]);
    });

    test(`a ${status} session's conflict offers cancel exactly when the transition table accepts it`, () => {
      const cancelAccepted = !("error" in checkoutCell(status, "cancel"));
      expect(keyConflictWays(status).includes("cancel_checkout_then_preview")).toBe(cancelAccepted);
      expect(conflictOf(status).message.includes("cancel the session")).toBe(cancelAccepted);
    });

    test(`a ${status} session's conflict offers the first key exactly when that key is not refused as inactive`, () => {
      expect(keyConflictWays(status).includes("retry_with_first_key")).toBe(firstKeyCode(status) !== "SESSION_INACTIVE");
    });
  }

  test("a COMPLETED session's text says the first key returns the existing orders and a new purchase needs a new cart", () => {
    const m = conflictOf("COMPLETED").message;
    expect(m).toContain("Do not repeat this call with this key");
    expect(m).toContain("a call with the key of its first attempt returns the existing orders (nothing is charged again)");
    expect(m).toContain("a new purchase needs a new cart");
  });

  test("the conflict never echoes the bound key", () => {
    for (const status of CHECKOUT_STATUSES) expect(JSON.stringify([conflictOf(status).message, conflictOf(status).details])).not.toContain(KEY);
  });
});
