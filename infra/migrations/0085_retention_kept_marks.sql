-- Review RG-4: the stock-reservation and bridge-session retention rules (infra/retention.ts) read their candidates
-- from the partial indexes of 0081, which also held the rows the rules keep for good, so every batch of every run
-- walked past all of them and a batch's cost grew with history. Each rule now marks a row it finds kept for a
-- permanent reason, and the index leaves marked rows out: a batch walks its candidates and the rows kept for now.

-- A released or returned reservation that is its order's last attempt (`orders.intent_id`) once the order left
-- 'pending': intent_id is written only while the order is pending (the hold's `reuse`, the settle's `paidRows`), no
-- move leads back to pending (order-machine.ts) and orders are never deleted, so the row is kept for ever (review
-- RB-1). Set by the retention rule; nothing clears it because nothing can end the reason.
ALTER TABLE stock_reservations ADD COLUMN kept_as_last_attempt boolean NOT NULL DEFAULT false;
DROP INDEX stock_reservations_done;
CREATE INDEX stock_reservations_done ON stock_reservations (updated_at)
  WHERE status IN ('released', 'returned') AND NOT kept_as_last_attempt;

-- The cart for which an ACP/UCP session is kept for good: an order or an x402 row names that cart (neither table is
-- deleted from, and neither row's cart_id changes), so the cart is never deleted and the session goes only with it.
-- A session can move to a new cart (an ACP/UCP items update, gateway/bridge/common.ts saveSession), for which the
-- reason may not hold: the trigger clears the mark whenever cart_id changes, whoever writes it, and the row is back
-- among the candidates. (The index predicate is `IS NULL` rather than `IS DISTINCT FROM cart_id`, which needs no
-- trigger, because the planner cannot estimate a comparison of two columns: it took 93 % of the rows for candidates
-- and chose a sequential scan of the whole table, the cost this migration removes.)
ALTER TABLE bridge_sessions ADD COLUMN kept_with_cart uuid;
CREATE FUNCTION bridge_sessions_cart_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.kept_with_cart := NULL;
  RETURN NEW;
END $$;
CREATE TRIGGER bridge_sessions_cart_moved BEFORE UPDATE OF cart_id ON bridge_sessions
  FOR EACH ROW WHEN (NEW.cart_id IS DISTINCT FROM OLD.cart_id) EXECUTE FUNCTION bridge_sessions_cart_moved();
DROP INDEX bridge_sessions_retention;
CREATE INDEX bridge_sessions_retention ON bridge_sessions (updated_at)
  WHERE protocol IN ('acp', 'ucp') AND kept_with_cart IS NULL;

-- Which carts an x402 row names, asked once per walked session (is it kept for good?) and by the cart rule once per
-- candidate cart (cartOutOfUse): without these each ask read the whole table, or a batch hashed all of it.
CREATE INDEX x402_intents_cart ON x402_intents (cart_id) WHERE cart_id IS NOT NULL;
CREATE INDEX x402_authorizations_cart ON x402_authorizations (cart_id);
