/**
 * `checkout.abandoned` per leg (audit D7, store side): only merchants whose leg did not capture get the event, each
 * with its own total and only its own slug. The cart's expiry end to end: test/http/checkout-abandoned-legs.test.ts.
 */
import { expect, test } from "bun:test";
import { outboxCheckoutAbandoned } from "../../actors/store/commerce.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

test("an expired two-store session with one leg paid writes one checkout.abandoned row, for the unpaid store only, with its own total and slug", async () => {
  const cartId = crypto.randomUUID();
  await srv.db.sql.begin(async (tx) => {
    await outboxCheckoutAbandoned(tx as never, {
      checkoutSessionId: "sess-d7",
      cartId,
      currency: "USD",
      status: "EXPIRED",
      now: Date.UTC(2026, 0, 1),
      legs: [
        { merchantSlug: "demo-store", totalMinor: 3394, captured: true },
        { merchantSlug: "greenleaf-living", totalMinor: 4599, captured: false },
      ],
    });
  });
  const rows = await srv.db.sql<{ store_slug: string; payload: Record<string, unknown> }[]>`
    SELECT store_slug, payload FROM webhook_events WHERE kind = 'checkout.abandoned' AND payload->>'cartId' = ${cartId}`;
  expect(rows).toHaveLength(1);
  expect(rows[0].store_slug).toBe("greenleaf-living");
  expect(rows[0].payload).toMatchObject({ merchantSlugs: ["greenleaf-living"], totalAmount: 45.99, currency: "USD", status: "EXPIRED", checkoutSessionId: "sess-d7" });
});
