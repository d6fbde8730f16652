import { describe, expect, test } from "bun:test";
import {
  CART_EVENTS,
  CART_STATUSES,
  CART_TTL_MS,
  applyCartEvent,
  assertCartMutable,
  isCartExpired,
  newCartHeader,
  type CartEvent,
  type CartHeader,
  type CartStatus,
} from "../../actors/cart/cart-machine.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const T0 = Date.UTC(2025, 0, 1);

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

const cartIn = (status: CartStatus): CartHeader => ({ ...newCartHeader(T0), status, revision: 5 });

const LEGAL: Record<string, CartStatus> = {
  "OPEN/mutate": "OPEN",
  "OPEN/change_shipping": "OPEN",
  "OPEN/start_checkout": "CHECKOUT",
  "OPEN/expire": "EXPIRED",
  "OPEN/discard": "ABANDONED",
  "OPEN/replace": "REPLACED",
  "CHECKOUT/change_shipping": "CHECKOUT",
  "CHECKOUT/start_checkout": "CHECKOUT",
  "CHECKOUT/end_checkout": "OPEN",
  "CHECKOUT/complete": "COMPLETED",
};

describe("cart transition table", () => {
  for (const status of CART_STATUSES) {
    for (const event of CART_EVENTS) {
      const key = `${status}/${event}`;
      const expected = LEGAL[key];
      // expire is only legal once due; every other event is tried before the cart expires
      const now = event === "expire" ? T0 + CART_TTL_MS : T0 + 1000;
      if (expected) {
        test(`a ${status} cart on ${event} becomes ${expected} and its revision goes up by one`, () => {
          const next = applyCartEvent(cartIn(status), event, now);
          expect(next.status).toBe(expected);
          expect(next.revision).toBe(6);
          expect(next.updatedAt).toBe(now);
        });
      } else {
        test(`a ${status} cart refuses ${event} with CART_NOT_MUTABLE`, () => {
          const err = errorOf(() => applyCartEvent(cartIn(status), event as CartEvent, now));
          expect(err?.code).toBe("CART_NOT_MUTABLE");
          expect(err?.details?.status).toBe(status);
        });
      }
    }
  }
});

describe("cart mutability", () => {
  test("a new cart is OPEN at revision 1 and expires 24 hours later", () => {
    const c = newCartHeader(T0);
    expect(c).toEqual({ status: "OPEN", revision: 1, updatedAt: T0, expiresAt: T0 + 24 * 3600_000 });
  });

  test("a write with the current revision is accepted", () => {
    expect(applyCartEvent(newCartHeader(T0), "mutate", T0 + 1, 1).revision).toBe(2);
  });

  test("a stale-revision write is refused with CART_NOT_MUTABLE naming both revisions", () => {
    const c = applyCartEvent(newCartHeader(T0), "mutate", T0 + 1);
    const err = errorOf(() => applyCartEvent(c, "mutate", T0 + 2, 1));
    expect(err?.code).toBe("CART_NOT_MUTABLE");
    expect(err?.details).toMatchObject({ reason: "stale_revision", revision: 2, expected_revision: 1 });
  });

  test("a stale revision is refused for status events too", () => {
    expect(errorOf(() => applyCartEvent(newCartHeader(T0), "start_checkout", T0 + 1, 0))?.code).toBe("CART_NOT_MUTABLE");
  });

  test("an OPEN cart past its expiry refuses mutation as expired", () => {
    const err = errorOf(() => assertCartMutable(newCartHeader(T0), T0 + CART_TTL_MS));
    expect(err?.code).toBe("CART_NOT_MUTABLE");
    expect(err?.details?.reason).toBe("expired");
  });

  test("an OPEN cart one millisecond before expiry still accepts mutation", () => {
    expect(applyCartEvent(newCartHeader(T0), "mutate", T0 + CART_TTL_MS - 1).status).toBe("OPEN");
  });

  test("an expired OPEN cart cannot start a checkout", () => {
    expect(errorOf(() => applyCartEvent(newCartHeader(T0), "start_checkout", T0 + CART_TTL_MS))?.details?.reason).toBe("expired");
  });

  test("every mutation slides the expiry 24 hours from now", () => {
    const c = applyCartEvent(newCartHeader(T0), "mutate", T0 + 5000);
    expect(c.expiresAt).toBe(T0 + 5000 + CART_TTL_MS);
  });

  test("an expiry reminder that fires before the cart is due is refused with conflict", () => {
    const c = applyCartEvent(newCartHeader(T0), "mutate", T0 + 5000);
    expect(errorOf(() => applyCartEvent(c, "expire", T0 + CART_TTL_MS))?.code).toBe("conflict");
  });

  test("a cart in CHECKOUT refuses a coupon or item change (409 cart is not open)", () => {
    const c = applyCartEvent(newCartHeader(T0), "start_checkout", T0 + 1);
    const err = errorOf(() => applyCartEvent(c, "mutate", T0 + 2));
    expect(err?.code).toBe("CART_NOT_MUTABLE");
    expect(err?.http).toBe(409);
    expect(err?.details?.reason).toBe("checkout_in_progress");
  });

  test("a cart in CHECKOUT never expires under a live session, but expires when its session ended partly paid (review R5-5)", () => {
    const c = applyCartEvent(newCartHeader(T0), "start_checkout", T0 + 1);
    expect(isCartExpired(c, T0 + 1 + CART_TTL_MS)).toBe(false);
    expect(isCartExpired(c, T0 + CART_TTL_MS, true)).toBe(false);
    expect(isCartExpired(c, T0 + 1 + CART_TTL_MS, true)).toBe(true);
  });

  test("a cart in CHECKOUT may still change its shipping choice (the session decides whether now is allowed)", () => {
    const c = applyCartEvent(newCartHeader(T0), "start_checkout", T0 + 1);
    const next = applyCartEvent(c, "change_shipping", T0 + 2, c.revision);
    expect(next.status).toBe("CHECKOUT");
    expect(next.revision).toBe(c.revision + 1);
  });

  test("an expired OPEN cart refuses a shipping choice as expired, and a stale revision is refused", () => {
    expect(errorOf(() => applyCartEvent(newCartHeader(T0), "change_shipping", T0 + CART_TTL_MS))?.details?.reason).toBe("expired");
    expect(errorOf(() => applyCartEvent(newCartHeader(T0), "change_shipping", T0 + 1, 7))?.details?.reason).toBe("stale_revision");
  });

  test("a cart in CHECKOUT never expires under a payment", () => {
    const c = applyCartEvent(newCartHeader(T0), "start_checkout", T0 + 1);
    expect(errorOf(() => applyCartEvent(c, "expire", T0 + 10 * CART_TTL_MS))?.code).toBe("CART_NOT_MUTABLE");
  });

  for (const status of ["COMPLETED", "EXPIRED", "ABANDONED"] as const) {
    test(`a ${status} cart refuses mutation with reason ${status.toLowerCase()}`, () => {
      const err = errorOf(() => assertCartMutable(cartIn(status), T0 + 1));
      expect(err?.code).toBe("CART_NOT_MUTABLE");
      expect(err?.details?.reason).toBe(status.toLowerCase());
    });
  }

  test("a replaced cart refuses every event and every mutation, naming the cart that replaced it", () => {
    const replaced = { ...applyCartEvent(newCartHeader(T0), "replace", T0 + 1), replacedBy: "b4c1a9d2-0000-4000-8000-000000000001" };
    expect(replaced.status).toBe("REPLACED");
    for (const event of CART_EVENTS) {
      const err = errorOf(() => applyCartEvent(replaced, event, T0 + 2));
      expect(err?.code).toBe("CART_NOT_MUTABLE");
      expect(err?.details).toMatchObject({ reason: "replaced", status: "REPLACED", replaced_by_cart_id: replaced.replacedBy });
    }
    expect(errorOf(() => assertCartMutable(replaced, T0 + 2))?.details?.replaced_by_cart_id).toBe(replaced.replacedBy);
  });
});
