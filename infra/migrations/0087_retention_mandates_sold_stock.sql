-- Retention for the two kinds of rows that grew for ever (docs/review.md session 10 "Known and left"): AP2 mandate
-- bindings and committed stock reservations. The rules are in infra/retention.ts; docs/operations.md "Data retention".

-- AP2: the last instant a mandate as presented could still be accepted for a cart that is not paid yet: the earliest of
-- its signed expiries (intent_expiry, cart_expiry, the user authorization's `exp`), 'infinity' when it has none (a
-- mandate need not expire: such a binding is kept for ever), NULL for a binding written before this migration (its
-- expiry was never recorded: kept for ever too). Written when the mandate is bound (gateway/bridge/common.ts
-- `bindMandate`, ap2-auth.ts `claimMandate`); every later presentation whose signature verifies moves it later if its
-- own is later (the user signed the same mandate id again), never earlier, and NULL stays NULL.
-- `bridge_sessions.mandate_expires_at` is the cart binding's (per agent key and mandate id), `ap2_mandate_agents.expires_at`
-- the claim's (per signer key and mandate id): each is deleted RETENTION_AP2_MANDATE_GRACE_DAYS after it.
ALTER TABLE bridge_sessions ADD COLUMN mandate_expires_at timestamptz;
ALTER TABLE ap2_mandate_agents ADD COLUMN expires_at timestamptz;
-- Each rule's scan: `< horizon` reads only the expired rows (NULL ones are left out; 'infinity' sorts after any horizon).
CREATE INDEX bridge_sessions_ap2_expiry ON bridge_sessions (mandate_expires_at) WHERE protocol = 'ap2' AND mandate_expires_at IS NOT NULL;
CREATE INDEX ap2_mandate_agents_expiry ON ap2_mandate_agents (expires_at) WHERE expires_at IS NOT NULL;

-- Committed stock reservations: a committed row is read after the sale only to give its units back, when the merchant
-- cancels the order (paid or fulfilled) or a full refund lands while it is paid (actors/store/refund-flow.ts
-- `returnSoldStock`). Once the order has left paid and fulfilled (shipped, delivered, refunded, canceled; no move leads
-- back, order-machine.ts) nothing gives those units back any more. `order_closed_at` records when that happened, set by
-- the trigger below for whichever writer moves the order, so the rule's index holds only rows whose order closed (an
-- order a merchant never ships stays paid, possibly for ever: its row is needed, and with a plain index on committed rows
-- every batch walked all of them; review RG-4's cost).
ALTER TABLE stock_reservations ADD COLUMN order_closed_at timestamptz;
CREATE FUNCTION stock_reservations_order_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE stock_reservations SET order_closed_at = now() WHERE order_id = NEW.id AND status = 'committed' AND order_closed_at IS NULL;
  RETURN NULL;
END $$;
CREATE TRIGGER orders_restock_closed AFTER UPDATE OF status ON orders
  FOR EACH ROW WHEN (OLD.status IN ('paid', 'fulfilled') AND NEW.status NOT IN ('pending', 'paid', 'fulfilled'))
  EXECUTE FUNCTION stock_reservations_order_closed();
-- Orders closed before this migration: their last change, at or after the close (so never early).
UPDATE stock_reservations r SET order_closed_at = o.updated_at
FROM orders o WHERE o.id = r.order_id AND r.status = 'committed' AND o.status NOT IN ('pending', 'paid', 'fulfilled');
CREATE INDEX stock_reservations_sold ON stock_reservations (order_closed_at) WHERE status = 'committed' AND order_closed_at IS NOT NULL;

-- A `returned` reservation (its units given back by returnSoldStock; its order canceled or refunded, both final) is no
-- longer kept as its order's last attempt: a replay of its id is answered the same without the row (priorOf's fallback
-- reads the order's intent_id as held, and held, committed and returned all answer "begun before"). Only a `released`
-- last attempt needs its row (it answers `conflict`; review RB-1). Rows 0085's rule marked are candidates again.
UPDATE stock_reservations SET kept_as_last_attempt = false WHERE status = 'returned' AND kept_as_last_attempt;
