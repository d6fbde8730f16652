-- The amount the processor captured for an order, when it is not the order's total: a capture escalated for a
-- human (amount mismatch) that the merchant accepted as the payment (actors/cart/index.ts resolveCapture). NULL
-- means the capture was the total. Refunds are bounded by it (COALESCE(captured_minor, total_minor)), so an
-- over-capture stays refundable in full and an under-capture can never be refunded beyond what was taken.
ALTER TABLE orders ADD COLUMN captured_minor bigint CHECK (captured_minor IS NULL OR captured_minor >= 0);
-- What was refunded may reach what was captured (an accepted over-capture refunded in full), not only the total.
ALTER TABLE orders DROP CONSTRAINT orders_refunded_range,
  ADD CONSTRAINT orders_refunded_range CHECK (refunded_minor >= 0 AND refunded_minor <= GREATEST(total_minor, COALESCE(captured_minor, total_minor)));
-- A FAILED refund the merchant retries is asked of the processor again under a new processor key: the rail is
-- idempotent per key and would otherwise answer its first refusal for ever. Attempt 0 is keyed by the refund id (as
-- before), attempt n by `<refund id>/n` (refund-flow.ts railRefundKey). Only a refund the rail answered `failed`
-- is retried, so a new key can never refund twice.
ALTER TABLE order_refunds ADD COLUMN rail_attempt integer NOT NULL DEFAULT 0;
