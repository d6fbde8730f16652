/**
 * ACP's and UCP's text for the cart's IDEMPOTENCY_KEY_CONFLICT (rollback-text.ts `bridgeKeyConflict`), for every
 * checkout status: the ways it names are `keyConflictWays`'s (the cancel exactly where the cart's session accepts
 * one), each as the protocol's own operation, and none of REST's key or calls.
 */
import { describe, expect, test } from "bun:test";
import { CHECKOUT_STATUSES, keyConflictWays } from "../../actors/cart/checkout-machine.ts";
import { bridgeKeyConflict, type SessionBridge } from "../../actors/cart/rollback-text.ts";

const ROUTE: Record<SessionBridge, { own: string; other: string }> = {
  acp: { own: "/checkout_sessions", other: "/checkout-sessions" },
  ucp: { own: "/checkout-sessions", other: "/checkout_sessions" },
};

describe("the ACP and UCP key-conflict text follows the session's status in the protocol's terms", () => {
  for (const protocol of ["acp", "ucp"] as const) {
    for (const status of CHECKOUT_STATUSES) {
      const ways = keyConflictWays(status);
      const text = bridgeKeyConflict(ways, status, protocol);
      const { own, other } = ROUTE[protocol];

      test(`${protocol} ${status}: the cancel is offered exactly when the session accepts one, on the protocol's own route`, () => {
        const offersCancel = ways.includes("cancel_checkout_then_preview");
        expect(text.includes(`POST ${own}/{id}/cancel`)).toBe(offersCancel);
        expect(text.includes("/cancel")).toBe(offersCancel);
        expect(text).not.toContain(other);
      });

      test(`${protocol} ${status}: the text names none of REST's key or calls`, () => {
        for (const w of ["idempotency_key", "/api/v1/agent", "complete_checkout", "key of its first attempt", "preview"]) expect(text).not.toContain(w);
        expect(text).toContain("nothing was done");
      });
    }

    test(`${protocol} COMPLETED: the order is read from the session, nothing is charged again`, () => {
      expect(bridgeKeyConflict(keyConflictWays("COMPLETED"), "COMPLETED", protocol)).toContain(`The cart is paid: read this checkout session (GET ${ROUTE[protocol].own}/{id}) for its order; nothing is charged again.`);
    });

    test(`${protocol} a running payment (IN_PROGRESS, SETTLEMENT_UNKNOWN) is read until it settles`, () => {
      for (const status of ["IN_PROGRESS", "SETTLEMENT_UNKNOWN"] as const) {
        expect(bridgeKeyConflict(keyConflictWays(status), status, protocol)).toContain(`read this checkout session (GET ${ROUTE[protocol].own}/{id}) until it has settled`);
      }
    });

    test(`${protocol} an ended session (FAILED, EXPIRED, CANCELED) is completed again to start a new payment`, () => {
      for (const status of ["FAILED", "EXPIRED", "CANCELED"] as const) {
        expect(bridgeKeyConflict(keyConflictWays(status), status, protocol)).toContain("complete this checkout session again to start a new payment");
      }
    });
  }
});
