-- A coupon's usage limit holds under concurrency (audit Y2). The order that uses a coupon claims one use when its
-- payment leg starts, in the leg's hold statement and before any money moves: a conditional
-- `UPDATE coupons SET used_count = used_count + 1 … AND (usage_limit IS NULL OR used_count < usage_limit)`, so of
-- legs racing for a coupon's last use only one gets it (the others re-read the row after the winner commits and
-- update nothing; their leg is refused). Before, the use was added at capture with no condition and four concurrent
-- checkouts used a one-use coupon four times. The claim is recorded here, one row per order, so that it is given
-- back exactly once when the hold is released (decline, failure, expiry, cancel of the unpaid order) and a retry of
-- the same order (a replayed hold, the next attempt of the session) never claims twice. The row of a paid order
-- stays: its use is spent (docs/checkout.md "Coupons and totals"). `code` is the coupon the use was taken from (the
-- order's store, this code), which a later attempt of the order may no longer carry.
CREATE TABLE coupon_claims (
  order_id   uuid        PRIMARY KEY,
  store_slug text        NOT NULL,
  code       text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
