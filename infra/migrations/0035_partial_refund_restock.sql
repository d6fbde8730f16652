-- Refund follow-ups of audit A1 (docs/checkout.md "Orders", "Cancels and money").
--
-- M3: a partial refund no longer moves the order to `partially_refunded` (a status with no way out: a partly refunded
-- order could never be fulfilled, shipped, delivered or canceled). The order keeps its fulfilment status and the money
-- returned stays in refunded_minor, the refund records and the `refund_partial` history event. Orders left in the old
-- status go back to the status their first partial refund found (delivered/paid when no such event is recorded), with
-- a `status_restored` history event saying so.
WITH moved AS (
  UPDATE orders o SET status = COALESCE(
      (SELECT e.from_status FROM order_events e
        WHERE e.order_id = o.id AND e.type = 'refund_partial' AND e.from_status IN ('paid', 'fulfilled', 'shipped', 'delivered')
        ORDER BY e.id LIMIT 1),
      CASE WHEN o.delivered_at IS NOT NULL THEN 'delivered' ELSE 'paid' END),
    updated_at = now(), version = version + 1
  WHERE o.status = 'partially_refunded'
  RETURNING o.id, o.status)
INSERT INTO order_events (order_id, type, from_status, to_status, data)
SELECT id, 'status_restored', 'partially_refunded', status, '{"actor": "system", "reason": "partial_refund_keeps_status"}'::jsonb FROM moved;

-- L2: a merchant's cancel of a paid order gives its sold units back (actors/store/refund-flow.ts cancelPaidOrder).
-- The committed reservation is what was taken off the stock; `returned` marks it given back, so a replay of the
-- cancel never adds the units twice.
ALTER TABLE stock_reservations DROP CONSTRAINT stock_reservations_status_check;
ALTER TABLE stock_reservations ADD CONSTRAINT stock_reservations_status_check CHECK (status IN ('held', 'committed', 'released', 'returned'));

-- The inverse of variant_stock_sell (0033): each tracked variant gets the units back; one the sale left at 0 is in
-- stock again (one the merchant marked out of stock with units left stays so). Untracked variants are left alone.
-- Order of the array is kept.
CREATE FUNCTION variant_stock_return(variants jsonb, returned jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_agg(
    CASE WHEN (returned->>(e.v->>'id')) IS NOT NULL AND jsonb_typeof(e.v->'stockQuantity') = 'number'
      THEN e.v || jsonb_build_object('stockQuantity', (e.v->>'stockQuantity')::int + (returned->>(e.v->>'id'))::int)
        || CASE WHEN (e.v->>'stockQuantity')::int <= 0 THEN jsonb_build_object('inStock', true) ELSE '{}'::jsonb END
      ELSE e.v END ORDER BY e.ord), '[]'::jsonb)
  FROM jsonb_array_elements(variants) WITH ORDINALITY AS e(v, ord)
$$;
