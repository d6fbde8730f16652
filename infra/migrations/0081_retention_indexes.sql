-- Indexes for the data-retention rules added in session 9 (infra/retention.ts; docs/operations.md "Data retention").
-- Each serves the scan of one rule's DELETE, so the job reads only its candidates instead of the whole table.

-- Which carts an ACP/UCP/AP2 session names: the cart rule keeps those (`NOT EXISTS ... b.cart_id = cart`), once per
-- candidate cart, which without this read all of bridge_sessions each time.
CREATE INDEX bridge_sessions_cart ON bridge_sessions (cart_id);
-- ACP/UCP sessions by last change: the bridge-session rule takes those unchanged for longer than the cart grace.
-- AP2 rows (mandate bindings) are never deleted, so they stay out of it.
CREATE INDEX bridge_sessions_retention ON bridge_sessions (updated_at) WHERE protocol IN ('acp', 'ucp');

-- Idempotency-Key records by the end of their last claim's lease (the replay window counts from it).
CREATE INDEX bridge_idempotency_claimed_until ON bridge_idempotency (claimed_until);

-- Reservations that hold nothing any more (released, or sold and given back), by their last change. Held and
-- committed ones (a merchant's cancel gives the committed units back) are never candidates.
CREATE INDEX stock_reservations_done ON stock_reservations (updated_at) WHERE status IN ('released', 'returned');

-- Finished deliveries (delivered, or dead) by when they finished: delivered_at, else the last attempt, else (dead
-- before any attempt: its endpoint deleted) the creation. The rule's condition spells the same expression.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries ((COALESCE(delivered_at, last_attempt_at, created_at))) WHERE status IN ('delivered', 'dead');
