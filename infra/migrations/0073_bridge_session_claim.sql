-- One write at a time per ACP/UCP checkout session (audit Y4). An update (which may move the session to a new cart),
-- a complete (which pays the session's cart) and a cancel each claim the session's row before any cart work and
-- give the claim back when done; a second write meanwhile is refused (409 CHECKOUT_ALREADY_IN_PROGRESS) instead of
-- both loading the row, working, and the last save winning (an update answered 200 and then dropped, or a paid
-- session pointed at an unpaid cart). The claim is a lease (`claimed_until`), as the Idempotency-Key's claim
-- (0063): a request that died holding it blocks the session only until it runs out. `claim_id` names the holder,
-- so a request overtaken after its lease cannot save over its successor.
ALTER TABLE bridge_sessions
  ADD COLUMN claim_id      uuid,
  ADD COLUMN claimed_until timestamptz;

-- The bridges read a cart's paid orders on every session read (what was paid before a refused or canceled attempt,
-- audit Y5) and before an items update (audit Y1).
CREATE INDEX orders_cart ON orders (cart_id) WHERE cart_id IS NOT NULL;
